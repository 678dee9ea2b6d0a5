/* sweepmpi.h: the MPI side of `ema-sim sweep` (sweepmpi.c), linked into the
 * ema-sim program only. Built with MPI (-Dmpi=auto finds Open MPI), a sweep
 * started by mpirun or srun spreads its points over the ranks (rank r runs
 * the points i with i % K == r) and rank 0 gathers the records and writes
 * the one sweep.csv; built without, these say so. MPI is initialised only
 * when the process was started by an MPI launcher, so a plain `ema-sim
 * sweep` never touches it. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The size of the job an MPI launcher (mpirun, mpiexec, srun with PMI or
 * PMIx) started this process in, from the environment: 1 when not
 * launched by one, 0 when launched but the size is not known. */
guint ema_sweep_mpi_launched_size(void);
/* Initialise MPI (only when launched by one and built with it); RANK and
 * SIZE are 0 and 1 otherwise. */
gboolean ema_sweep_mpi_init(guint *rank, guint *size, GError **error);
/* Gather TEXT of every rank on rank 0, concatenated in rank order (NULL on
 * the other ranks). */
char *ema_sweep_mpi_gather(const char *text);
/* Rank 0's VALUE, on every rank. */
int ema_sweep_mpi_broadcast(int value);
void ema_sweep_mpi_finalize(void);

G_END_DECLS
