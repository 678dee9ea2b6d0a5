/* sweepmpi.c: MPI for ema-sim sweep (sweepmpi.h). Compiled with
 * EMA_HAVE_MPI when meson found MPI (-Dmpi=auto|enabled); otherwise every
 * function is the one-process case. Invariant: MPI is initialised at most
 * once, and only in a process that an MPI launcher started. */
#include "sweepmpi.h"

#include <string.h>

#ifdef EMA_HAVE_MPI
#include <mpi.h>

static gboolean initialised;
#endif

/* An MPI launcher started this process: Open MPI's mpirun, PMI-1 (MPICH's
 * Hydra, srun --mpi=pmi2) or PMIx (srun --mpi=pmix, prrte). */
static gboolean launched(void) {
  return g_getenv("OMPI_COMM_WORLD_SIZE") || g_getenv("PMIX_RANK") || g_getenv("PMI_RANK") ||
         g_getenv("PMI_SIZE");
}

guint ema_sweep_mpi_launched_size(void) {
  static const char *const variables[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
  if (!launched())
    return 1;
  for (guint i = 0; variables[i]; i++) {
    const char *value = g_getenv(variables[i]);
    guint64 size;
    if (value && g_ascii_string_to_unsigned(value, 10, 1, G_MAXINT, &size, NULL))
      return (guint) size;
  }
  return 0; /* launched, size unknown */
}

gboolean ema_sweep_mpi_init(guint *rank, guint *size, GError **error) {
  *rank = 0;
  *size = 1;
  if (!launched())
    return TRUE;
#ifdef EMA_HAVE_MPI
  {
    int mpi_rank = 0, mpi_size = 1;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "MPI_Init failed");
      return FALSE;
    }
    initialised = TRUE;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    *rank = (guint) mpi_rank;
    *size = (guint) mpi_size;
    return TRUE;
  }
#else
  if (ema_sweep_mpi_launched_size() != 1) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSYS,
                "started by an MPI launcher, but this ema-sim was built without MPI (install "
                "Open MPI and run `meson setup --reconfigure -Dmpi=enabled`), or run one "
                "process with -j N");
    return FALSE;
  }
  return TRUE;
#endif
}

char *ema_sweep_mpi_gather(const char *text) {
#ifdef EMA_HAVE_MPI
  if (initialised) {
    int rank, size, length = (int) strlen(text);
    int *lengths = NULL, *offsets = NULL;
    char *all = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
      lengths = g_new0(int, size);
      offsets = g_new0(int, size);
    }
    MPI_Gather(&length, 1, MPI_INT, lengths, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      int total = 0;
      for (int r = 0; r < size; r++) {
        offsets[r] = total;
        total += lengths[r];
      }
      all = g_malloc(total + 1);
      all[total] = '\0';
    }
    MPI_Gatherv(text, length, MPI_CHAR, all, lengths, offsets, MPI_CHAR, 0, MPI_COMM_WORLD);
    g_free(lengths);
    g_free(offsets);
    return all;
  }
#endif
  return g_strdup(text);
}

int ema_sweep_mpi_broadcast(int value) {
#ifdef EMA_HAVE_MPI
  if (initialised)
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
  return value;
}

void ema_sweep_mpi_finalize(void) {
#ifdef EMA_HAVE_MPI
  if (initialised)
    MPI_Finalize();
  initialised = FALSE;
#endif
}
