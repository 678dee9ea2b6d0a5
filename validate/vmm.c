/* vmm.c: CUDA VMM costs (vmm.h). A VmmSlices record owns what one cycle
 * creates (handles, mappings, the reservation) with a flag per resource,
 * so that vmm_slices_release() undoes exactly what exists, in reverse
 * order, whether the cycle finished or failed half-way. */
#include "vmm.h"

#include <stdio.h>

#include "cudacheck.h"
#include "ema/core/units.h"
#include "gpu.h"

#define SLICE_MIN_BYTES ((size_t) 2 << 20)
#define SINGLE_WARMUPS 3

typedef struct {
  const EmaDriverApi *api;
  int lender, borrower;
  size_t slice;
  guint n;
  CUmemGenericAllocationHandle *handles;
  gboolean *created, *mapped;
  CUdeviceptr base;
  gboolean reserved;
} VmmSlices;

static void vmm_slices_init(VmmSlices *s, const EmaDriverApi *api, const EmaVmmSetup *setup,
                            size_t slice, guint n) {
  s->api = api;
  s->lender = setup->lender;
  s->borrower = setup->borrower;
  s->slice = slice;
  s->n = n;
  s->handles = g_new0(CUmemGenericAllocationHandle, n);
  s->created = g_new0(gboolean, n);
  s->mapped = g_new0(gboolean, n);
  s->base = 0;
  s->reserved = FALSE;
}

/* Unmap, release and free whatever exists; keeps the first error. */
static gboolean vmm_slices_release(VmmSlices *s, GError **error) {
  gboolean ok = TRUE;
  for (guint i = s->n; i-- > 0;) {
    if (s->mapped[i]) {
      ok = EMA_CU(s->borrower, error, s->api->mem_unmap(s->base + i * s->slice, s->slice)) && ok;
      s->mapped[i] = FALSE;
    }
  }
  for (guint i = s->n; i-- > 0;) {
    if (s->created[i]) {
      ok = EMA_CU(s->lender, error, s->api->mem_release(s->handles[i])) && ok;
      s->created[i] = FALSE;
    }
  }
  if (s->reserved) {
    ok = EMA_CU(s->borrower, error, s->api->mem_address_free(s->base, s->n * s->slice)) && ok;
    s->reserved = FALSE;
  }
  return ok;
}

static void vmm_slices_clear(VmmSlices *s) {
  g_free(s->handles);
  g_free(s->created);
  g_free(s->mapped);
}

static void allocation_prop(int lender, CUmemAllocationProp *prop) {
  memset(prop, 0, sizeof *prop);
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = lender;
}

static void borrower_access(int borrower, CUmemAccessDesc *access) {
  memset(access, 0, sizeof *access);
  access->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access->location.id = borrower;
  access->flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

static gboolean create_slice(VmmSlices *s, guint i, GError **error) {
  CUmemAllocationProp prop;
  allocation_prop(s->lender, &prop);
  if (!EMA_CU(s->lender, error, s->api->mem_create(&s->handles[i], s->slice, &prop, 0)))
    return FALSE;
  s->created[i] = TRUE;
  return TRUE;
}

static gboolean reserve_range(VmmSlices *s, GError **error) {
  if (!EMA_CU(s->borrower, error, s->api->mem_address_reserve(&s->base, s->n * s->slice, 0, 0, 0)))
    return FALSE;
  s->reserved = TRUE;
  return TRUE;
}

static gboolean map_slice(VmmSlices *s, guint i, GError **error) {
  if (!EMA_CU(s->borrower, error,
              s->api->mem_map(s->base + i * s->slice, s->slice, 0, s->handles[i], 0)))
    return FALSE;
  s->mapped[i] = TRUE;
  return TRUE;
}

static gboolean set_access(VmmSlices *s, size_t bytes, GError **error) {
  CUmemAccessDesc access;
  borrower_access(s->borrower, &access);
  return EMA_CU(s->borrower, error, s->api->mem_set_access(s->base, bytes, &access, 1));
}

static gboolean unmap_slice(VmmSlices *s, guint i, GError **error) {
  s->mapped[i] = FALSE;
  return EMA_CU(s->borrower, error, s->api->mem_unmap(s->base + i * s->slice, s->slice));
}

static gboolean release_slice(VmmSlices *s, guint i, GError **error) {
  s->created[i] = FALSE;
  return EMA_CU(s->lender, error, s->api->mem_release(s->handles[i]));
}

static gboolean free_range(VmmSlices *s, GError **error) {
  s->reserved = FALSE;
  return EMA_CU(s->borrower, error, s->api->mem_address_free(s->base, s->n * s->slice));
}

static void add_series(EmaReport *report, const char *name, guint64 bytes, const double *samples,
                       guint n) {
  const EmaMeasurement *m =
      ema_report_add(report, "vmm", name, "gpu1", "gpu0", bytes, 0, samples, n);
  printf("  %-52s %10.2f us  (spread %.1f%%)\n", name, m->stats.median * 1e6,
         ema_sample_spread_pct(&m->stats));
}

enum {
  STEP_CREATE,
  STEP_RESERVE,
  STEP_MAP,
  STEP_SET_ACCESS,
  STEP_UNMAP,
  STEP_RELEASE,
  STEP_FREE,
  N_STEPS
};

static const char *const step_names[N_STEPS] = {"create", "reserve", "map",         "set-access",
                                                "unmap",  "release", "address-free"};

/* One slice through the whole cycle, WARMUPS + REPEATS times. */
static gboolean measure_single(const EmaDriverApi *api, const EmaVmmSetup *setup, size_t slice,
                               EmaReport *report, GError **error) {
  VmmSlices s;
  guint total = SINGLE_WARMUPS + setup->single_repeats;
  g_autofree double *samples = g_new0(double, (gsize) N_STEPS * setup->single_repeats);
  gboolean ok = TRUE;

  vmm_slices_init(&s, api, setup, slice, 1);
  for (guint r = 0; ok && r < total; r++) {
    double t[N_STEPS + 1];
    t[0] = ema_host_seconds();
    ok = create_slice(&s, 0, error);
    t[1] = ema_host_seconds();
    ok = ok && reserve_range(&s, error);
    t[2] = ema_host_seconds();
    ok = ok && map_slice(&s, 0, error);
    t[3] = ema_host_seconds();
    ok = ok && set_access(&s, slice, error);
    t[4] = ema_host_seconds();
    ok = ok && unmap_slice(&s, 0, error);
    t[5] = ema_host_seconds();
    ok = ok && release_slice(&s, 0, error);
    t[6] = ema_host_seconds();
    ok = ok && free_range(&s, error);
    t[7] = ema_host_seconds();
    if (ok && r >= SINGLE_WARMUPS)
      for (guint k = 0; k < N_STEPS; k++)
        samples[k * setup->single_repeats + (r - SINGLE_WARMUPS)] = t[k + 1] - t[k];
  }
  ok = vmm_slices_release(&s, error) && ok;
  vmm_slices_clear(&s);
  if (!ok)
    return FALSE;

  for (guint k = 0; k < N_STEPS; k++) {
    g_autofree char *size = ema_units_format_size(slice);
    g_autofree char *name = g_strdup_printf("vmm-%s-1x%s", step_names[k], size);
    add_series(report, name, slice, samples + k * setup->single_repeats, setup->single_repeats);
  }
  return TRUE;
}

typedef struct {
  const EmaVmmSetup *setup;
  CUdeviceptr base;
  guint64 bytes;
} BatchRead;

static gboolean enqueue_batch_read(gpointer data, GError **error) {
  BatchRead *read = data;
  const EmaVmmSetup *setup = read->setup;
  return EMA_CUDA(setup->borrower, error,
                  ema_launch_stream_read(setup->borrower_stream, setup->borrower_shape,
                                         (const void *) (uintptr_t) read->base, read->bytes, 1,
                                         setup->borrower_sink));
}

/* The batch cycle: every slice created, one range reserved, every slice
 * mapped, one cuMemSetAccess over the range; on the last repeat a kernel
 * on the borrower reads the range; then unmap, release, free. */
static gboolean measure_batch(const EmaDriverApi *api, const EmaVmmSetup *setup, size_t slice,
                              EmaReport *report, GError **error) {
  VmmSlices s;
  guint n = setup->batch_slices, total = 1 + setup->batch_repeats;
  g_autofree double *samples = g_new0(double, (gsize) N_STEPS * setup->batch_repeats);
  g_autofree double *read_samples = g_new0(double, setup->read_repeats);
  gboolean ok = TRUE;

  vmm_slices_init(&s, api, setup, slice, n);
  for (guint r = 0; ok && r < total; r++) {
    double took[N_STEPS], begin;
    begin = ema_host_seconds();
    for (guint i = 0; ok && i < n; i++)
      ok = create_slice(&s, i, error);
    took[STEP_CREATE] = ema_host_seconds() - begin;
    begin = ema_host_seconds();
    ok = ok && reserve_range(&s, error);
    took[STEP_RESERVE] = ema_host_seconds() - begin;
    begin = ema_host_seconds();
    for (guint i = 0; ok && i < n; i++)
      ok = map_slice(&s, i, error);
    took[STEP_MAP] = ema_host_seconds() - begin;
    begin = ema_host_seconds();
    ok = ok && set_access(&s, n * slice, error);
    took[STEP_SET_ACCESS] = ema_host_seconds() - begin;
    if (ok && r + 1 == total) {
      BatchRead read = {setup, s.base, (guint64) n * slice};
      ok = ema_gpu_time(setup->borrower, setup->borrower_stream, 1, setup->read_repeats,
                        enqueue_batch_read, &read, read_samples, error);
    }
    begin = ema_host_seconds();
    for (guint i = 0; ok && i < n; i++)
      ok = unmap_slice(&s, i, error);
    took[STEP_UNMAP] = ema_host_seconds() - begin;
    begin = ema_host_seconds();
    for (guint i = 0; ok && i < n; i++)
      ok = release_slice(&s, i, error);
    took[STEP_RELEASE] = ema_host_seconds() - begin;
    begin = ema_host_seconds();
    ok = ok && free_range(&s, error);
    took[STEP_FREE] = ema_host_seconds() - begin;
    if (ok && r >= 1)
      for (guint k = 0; k < N_STEPS; k++)
        samples[k * setup->batch_repeats + (r - 1)] = took[k];
  }
  ok = vmm_slices_release(&s, error) && ok;
  vmm_slices_clear(&s);
  if (!ok)
    return FALSE;

  for (guint k = 0; k < N_STEPS; k++) {
    g_autofree char *size = ema_units_format_size(slice);
    g_autofree char *name = g_strdup_printf("vmm-batch-%s-%ux%s", step_names[k], n, size);
    add_series(report, name, (guint64) n * slice, samples + k * setup->batch_repeats,
               setup->batch_repeats);
  }
  {
    g_autofree char *size = ema_units_format_size((guint64) n * slice);
    g_autofree char *name = g_strdup_printf("vmm-direct-read-gpu1-gpu0-%s", size);
    const EmaMeasurement *m =
        ema_report_add(report, "vmm", name, "gpu1", "gpu0", (guint64) n * slice, (double) n * slice,
                       read_samples, setup->read_repeats);
    printf("  %-52s %10.2f us  %8.1f GB/s\n", name, m->stats.median * 1e6,
           (double) n * slice / m->stats.median / 1e9);
  }
  return TRUE;
}

gboolean ema_vmm_measure(const EmaVmmSetup *setup, EmaReport *report, guint64 *granularity_min,
                         guint64 *granularity_rec, GError **error) {
  const EmaDriverApi *api = ema_driver_api(error);
  CUmemAllocationProp prop;
  CUdevice device;
  int supported = 0;
  size_t minimum = 0, recommended = 0, slice;

  if (api == NULL)
    return FALSE;
  if (!EMA_CU(setup->lender, error, api->device_get(&device, setup->lender)) ||
      !EMA_CU(setup->lender, error,
              api->device_get_attribute(
                  &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device)))
    return FALSE;
  if (!supported) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "GPU %d does not support CUDA virtual memory management", setup->lender);
    return FALSE;
  }
  allocation_prop(setup->lender, &prop);
  if (!EMA_CU(
          setup->lender, error,
          api->mem_get_allocation_granularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) ||
      !EMA_CU(setup->lender, error,
              api->mem_get_allocation_granularity(&recommended, &prop,
                                                  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)))
    return FALSE;
  slice = MAX(SLICE_MIN_BYTES, recommended);
  slice = (slice + minimum - 1) / minimum * minimum;

  *granularity_min = minimum;
  *granularity_rec = recommended;
  return measure_single(api, setup, slice, report, error) &&
         measure_batch(api, setup, slice, report, error);
}
