/* validate/capturelib.c: libemacapture.so, the CUPTI injection library of `ema-validate capture`.
 *
 * Loaded into any CUDA program by the driver (CUDA_INJECTION64_PATH names it; the driver calls
 * InitializeInjection() at cuInit) and by NVTX (NVTX_INJECTION64_PATH names it too; NVTX calls
 * InitializeInjectionNvtx2() at the first NVTX call, forwarded to CUPTI's own NVTX injection so
 * that ranges become CUPTI marker records). It records, through the CUPTI Activity API, every
 * kernel (CONCURRENT_KERNEL), memcpy (MEMCPY, MEMCPY2 peer), memset, allocation and release
 * (MEMORY2) and NVTX marker, and through driver-API callbacks every CUDA VMM call (cuMemCreate,
 * cuMemRelease, cuMemMap, cuMemUnmap, cuMemSetAccess, cuMemAddressReserve, cuMemAddressFree),
 * into CSV files in EMA_CAPTURE_DIR (the formats are validate/trace.h's, which reads them).
 *
 * Invariants:
 * - bounded memory: a fixed pool of EMA_CAPTURE_BUFFERS (default 32) activity buffers of
 *   EMA_CAPTURE_BUFFER_MB (default 8) MiB is allocated at start and reused; when CUPTI asks for
 *   a buffer and none is free it gets none, and CUPTI drops the records (counted: the refusals
 *   here and CUPTI's own dropped-record count, both in capture.txt). Nothing grows with the run.
 * - incremental: each completed buffer is formatted and appended to the CSVs at once (fflush),
 *   and CUPTI is asked to flush every EMA_CAPTURE_FLUSH_MS (default 500) ms, so a program that is
 *   killed leaves every record up to its last flush. Exit (atexit) and fatal signals (SIGSEGV,
 *   SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT) flush what CUPTI holds and write
 *   capture.txt before the program ends (a signal is re-raised with its default action after).
 *   The signal path is best effort: it calls CUPTI, which is not async-signal-safe.
 * - one writer: every CSV write holds one mutex; rows are whole lines.
 * - names: kernel names are demangled (__cxa_demangle of the C++ runtime; the mangled name when
 *   that fails); every text field is CSV-quoted ("..." with "" for a quote). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the C++ runtime's demangler (libstdc++, linked) */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *length, int *status);

#define EMA_CAPTURE_ALIGN 8
#define EMA_CAPTURE_MAX_BUFFERS 1024

enum { F_KERNELS, F_MEMCPY, F_MEMSET, F_MEMORY, F_NVTX, F_VMM, F_COUNT };

static const char *const file_names[F_COUNT] = {"kernels.csv", "memcpy.csv", "memset.csv",
                                                "memory.csv",  "nvtx.csv",   "vmm.csv"};
/* the header rows: validate/trace.c reads exactly these */
static const char *const file_headers[F_COUNT] = {
    "start_ns,end_ns,device,context,stream,correlation,grid_x,grid_y,grid_z,block_x,block_y,"
    "block_z,registers,shared_bytes,graph,name",
    "start_ns,end_ns,device,stream,kind,bytes,src_device,dst_device",
    "start_ns,end_ns,device,stream,bytes,value",
    "timestamp_ns,device,stream,operation,memory_kind,address,bytes",
    "timestamp_ns,flags,id,domain,name",
    "start_ns,end_ns,call,bytes,result",
};

static struct {
  pthread_once_t once;
  pthread_mutex_t lock; /* the files, the pool, the counters */
  int ready;            /* the CSVs are open and CUPTI is subscribed */
  FILE *files[F_COUNT];
  char dir[4096];
  uint8_t *pool[EMA_CAPTURE_MAX_BUFFERS];
  int pool_free[EMA_CAPTURE_MAX_BUFFERS]; /* stack of free pool indices */
  int n_free, n_buffers;
  size_t buffer_bytes;
  uint64_t rows[F_COUNT];
  uint64_t refused;      /* buffer requests with no free buffer */
  uint64_t dropped;      /* CUPTI's dropped-record count, summed over completed buffers */
  uint64_t buffers_done; /* completed buffers */
  int finished;
  CUpti_SubscriberHandle subscriber;
} cap = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void cap_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("emacapture: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int cupti_ok(CUptiResult r, const char *what) {
  if (r == CUPTI_SUCCESS)
    return 1;
  const char *msg = NULL;
  cuptiGetResultString(r, &msg);
  cap_warn("%s: %s", what, msg ? msg : "unknown CUPTI error");
  return 0;
}

/* a CSV-quoted text field */
static void put_text(FILE *f, const char *s) {
  fputc('"', f);
  for (const char *p = s ? s : ""; *p; p++) {
    if (*p == '"')
      fputc('"', f);
    fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
  }
  fputc('"', f);
}

static const char *memcpy_kind(uint8_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    return "HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    return "DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    return "HtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
    return "AtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    return "AtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    return "AtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    return "DtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    return "DtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
    return "HtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
    return "PtoP";
  default:
    return "unknown";
  }
}

static const char *memory_kind(CUpti_ActivityMemoryKind k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
    return "pageable";
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
    return "pinned";
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    return "device";
  case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
    return "array";
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    return "managed";
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    return "device-static";
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
    return "managed-static";
  default:
    return "unknown";
  }
}

/* one activity record as a CSV row (the lock is held) */
static void write_record(CUpti_Activity *rec) {
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *) rec;
    FILE *f = cap.files[F_KERNELS];
    int status = -1;
    char *name = k->name ? __cxa_demangle(k->name, NULL, NULL, &status) : NULL;
    fprintf(f, "%llu,%llu,%u,%u,%u,%u,%d,%d,%d,%d,%d,%d,%u,%d,%u,", (unsigned long long) k->start,
            (unsigned long long) k->end, k->deviceId, k->contextId, k->streamId, k->correlationId,
            k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
            (unsigned) k->registersPerThread, k->staticSharedMemory + k->dynamicSharedMemory,
            k->graphId);
    put_text(f, status == 0 && name ? name : k->name);
    fputc('\n', f);
    free(name);
    cap.rows[F_KERNELS]++;
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *) rec;
    fprintf(cap.files[F_MEMCPY], "%llu,%llu,%u,%u,%s,%llu,%u,%u\n", (unsigned long long) m->start,
            (unsigned long long) m->end, m->deviceId, m->streamId, memcpy_kind(m->copyKind),
            (unsigned long long) m->bytes, m->deviceId, m->deviceId);
    cap.rows[F_MEMCPY]++;
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY2: {
    CUpti_ActivityMemcpyPtoP4 *m = (CUpti_ActivityMemcpyPtoP4 *) rec;
    fprintf(cap.files[F_MEMCPY], "%llu,%llu,%u,%u,%s,%llu,%u,%u\n", (unsigned long long) m->start,
            (unsigned long long) m->end, m->deviceId, m->streamId, memcpy_kind(m->copyKind),
            (unsigned long long) m->bytes, m->srcDeviceId, m->dstDeviceId);
    cap.rows[F_MEMCPY]++;
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *) rec;
    fprintf(cap.files[F_MEMSET], "%llu,%llu,%u,%u,%llu,%u\n", (unsigned long long) m->start,
            (unsigned long long) m->end, m->deviceId, m->streamId, (unsigned long long) m->bytes,
            m->value);
    cap.rows[F_MEMSET]++;
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMORY2: {
    CUpti_ActivityMemory4 *m = (CUpti_ActivityMemory4 *) rec;
    const char *op =
        m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? "alloc"
        : m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE  ? "release"
                                                                                  : "unknown";
    fprintf(cap.files[F_MEMORY], "%llu,%u,%u,%s,%s,%llu,%llu\n", (unsigned long long) m->timestamp,
            m->deviceId, m->streamId, op, memory_kind(m->memoryKind),
            (unsigned long long) m->address, (unsigned long long) m->bytes);
    cap.rows[F_MEMORY]++;
    break;
  }
  case CUPTI_ACTIVITY_KIND_MARKER: {
    CUpti_ActivityMarker2 *m = (CUpti_ActivityMarker2 *) rec;
    const char *flag = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START)           ? "start"
                       : (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END)           ? "end"
                       : (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) ? "mark"
                                                                               : NULL;
    if (!flag)
      break; /* sync markers: not ranges */
    FILE *f = cap.files[F_NVTX];
    fprintf(f, "%llu,%s,%u,", (unsigned long long) m->timestamp, flag, m->id);
    put_text(f, m->domain);
    fputc(',', f);
    put_text(f, m->name);
    fputc('\n', f);
    cap.rows[F_NVTX]++;
    break;
  }
  default:
    break;
  }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  pthread_mutex_lock(&cap.lock);
  if (cap.n_free > 0) {
    *buffer = cap.pool[cap.pool_free[--cap.n_free]];
    *size = cap.buffer_bytes;
  } else {
    *buffer = NULL; /* CUPTI drops the records it cannot place */
    *size = 0;
    cap.refused++;
  }
  *max_records = 0;
  pthread_mutex_unlock(&cap.lock);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void) size;
  pthread_mutex_lock(&cap.lock);
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    write_record(rec);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
    cap.dropped += dropped;
  for (int i = 0; i < cap.n_buffers; i++)
    if (cap.pool[i] == buffer) {
      cap.pool_free[cap.n_free++] = i;
      break;
    }
  cap.buffers_done++;
  for (int i = 0; i < F_COUNT; i++)
    if (cap.files[i])
      fflush(cap.files[i]);
  pthread_mutex_unlock(&cap.lock);
}

static const char *vmm_call(CUpti_CallbackId cbid) {
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    return "cuMemCreate";
  case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
    return "cuMemRelease";
  case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
    return "cuMemMap";
  case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
    return "cuMemUnmap";
  case CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess:
    return "cuMemSetAccess";
  case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve:
    return "cuMemAddressReserve";
  case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree:
    return "cuMemAddressFree";
  default:
    return NULL;
  }
}

/* the size argument of a VMM call (0 for cuMemRelease, which has none) */
static unsigned long long vmm_bytes(CUpti_CallbackId cbid, const void *params) {
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    return ((const cuMemCreate_params *) params)->size;
  case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
    return ((const cuMemMap_params *) params)->size;
  case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
    return ((const cuMemUnmap_params *) params)->size;
  case CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess:
    return ((const cuMemSetAccess_params *) params)->size;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve:
    return ((const cuMemAddressReserve_params *) params)->size;
  case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree:
    return ((const cuMemAddressFree_params *) params)->size;
  default:
    return 0;
  }
}

static void CUPTIAPI on_driver_call(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data) {
  (void) userdata;
  const char *call = domain == CUPTI_CB_DOMAIN_DRIVER_API ? vmm_call(cbid) : NULL;
  if (!call)
    return;
  const CUpti_CallbackData *cb = data;
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    *cb->correlationData = now;
    return;
  }
  int result = cb->functionReturnValue ? *(const int *) cb->functionReturnValue : 0;
  pthread_mutex_lock(&cap.lock);
  if (cap.files[F_VMM] && !cap.finished) {
    fprintf(cap.files[F_VMM], "%llu,%llu,%s,%llu,%d\n", (unsigned long long) *cb->correlationData,
            (unsigned long long) now, call, vmm_bytes(cbid, cb->functionParams), result);
    fflush(cap.files[F_VMM]);
    cap.rows[F_VMM]++;
  }
  pthread_mutex_unlock(&cap.lock);
}

static long env_long(const char *name, long fallback, long lo, long hi) {
  const char *s = getenv(name);
  if (!s || !*s)
    return fallback;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (*end || v < lo || v > hi) {
    cap_warn("%s=%s is not an integer in [%ld, %ld]; using %ld", name, s, lo, hi, fallback);
    return fallback;
  }
  return v;
}

/* capture.txt: what the run recorded and lost (rewritten at the end; the lock is held) */
static void write_summary(const char *how) {
  char path[4200];
  snprintf(path, sizeof path, "%s/capture.txt", cap.dir);
  FILE *f = fopen(path, "w");
  if (!f)
    return;
  uint32_t version = 0;
  cuptiGetVersion(&version);
  fprintf(f, "pid: %d\nended: %s\ncupti_api: %u\nbuffers: %d\nbuffer_bytes: %zu\n", (int) getpid(),
          how, version, cap.n_buffers, cap.buffer_bytes);
  fprintf(f, "buffers_completed: %llu\nbuffer_requests_refused: %llu\nrecords_dropped: %llu\n",
          (unsigned long long) cap.buffers_done, (unsigned long long) cap.refused,
          (unsigned long long) cap.dropped);
  for (int i = 0; i < F_COUNT; i++)
    fprintf(f, "rows_%.*s: %llu\n", (int) (strchr(file_names[i], '.') - file_names[i]),
            file_names[i], (unsigned long long) cap.rows[i]);
  fclose(f);
}

/* flush what CUPTI holds and write the summary; once */
static void finish(const char *how) {
  pthread_mutex_lock(&cap.lock);
  int done = cap.finished || !cap.ready;
  pthread_mutex_unlock(&cap.lock);
  if (done)
    return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&cap.lock);
  if (!cap.finished) {
    cap.finished = 1;
    write_summary(how);
    for (int i = 0; i < F_COUNT; i++)
      if (cap.files[i])
        fflush(cap.files[i]);
  }
  pthread_mutex_unlock(&cap.lock);
}

static void at_exit(void) {
  finish("exit");
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};

static void on_fatal_signal(int sig) {
  /* a signal that arrives while the lock is held (inside a buffer's write) cannot flush: the
   * rows written so far are on disk up to the last whole buffer */
  if (pthread_mutex_trylock(&cap.lock) == 0) {
    pthread_mutex_unlock(&cap.lock);
    char how[32];
    snprintf(how, sizeof how, "signal %d", sig);
    finish(how);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void setup(void) {
  const char *dir = getenv("EMA_CAPTURE_DIR");
  if (!dir || !*dir) {
    cap_warn("EMA_CAPTURE_DIR is not set: nothing is recorded");
    return;
  }
  snprintf(cap.dir, sizeof cap.dir, "%s", dir);
  cap.n_buffers = (int) env_long("EMA_CAPTURE_BUFFERS", 32, 2, EMA_CAPTURE_MAX_BUFFERS);
  cap.buffer_bytes = (size_t) env_long("EMA_CAPTURE_BUFFER_MB", 8, 1, 256) << 20;
  long flush_ms = env_long("EMA_CAPTURE_FLUSH_MS", 500, 0, 600000);
  for (int i = 0; i < cap.n_buffers; i++) {
    cap.pool[i] = aligned_alloc(EMA_CAPTURE_ALIGN, cap.buffer_bytes);
    if (!cap.pool[i]) {
      cap_warn("cannot allocate %d activity buffers of %zu bytes", cap.n_buffers, cap.buffer_bytes);
      cap.n_buffers = i;
      break;
    }
    cap.pool_free[cap.n_free++] = i;
  }
  for (int i = 0; i < F_COUNT; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cap.dir, file_names[i]);
    cap.files[i] = fopen(path, "w");
    if (!cap.files[i]) {
      cap_warn("cannot write %s", path);
      return;
    }
    fprintf(cap.files[i], "%s\n", file_headers[i]);
    fflush(cap.files[i]);
  }
  if (!cupti_ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                "cuptiActivityRegisterCallbacks"))
    return;
  static const CUpti_ActivityKind kinds[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
      CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_MEMORY2,           CUPTI_ACTIVITY_KIND_MARKER,
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    cupti_ok(cuptiActivityEnable(kinds[i]), "cuptiActivityEnable");
  if (cupti_ok(cuptiSubscribe(&cap.subscriber, on_driver_call, NULL), "cuptiSubscribe")) {
    static const CUpti_CallbackId vmm[] = {
        CUPTI_DRIVER_TRACE_CBID_cuMemCreate,      CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
        CUPTI_DRIVER_TRACE_CBID_cuMemMap,         CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
        CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess,   CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve,
        CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
    };
    for (size_t i = 0; i < sizeof vmm / sizeof vmm[0]; i++)
      cupti_ok(cuptiEnableCallback(1, cap.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, vmm[i]),
               "cuptiEnableCallback");
  }
  if (flush_ms > 0)
    cupti_ok(cuptiActivityFlushPeriod((uint32_t) flush_ms), "cuptiActivityFlushPeriod");
  pthread_mutex_lock(&cap.lock);
  cap.ready = 1;
  write_summary("running");
  pthread_mutex_unlock(&cap.lock);
  atexit(at_exit);
  for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
    struct sigaction old;
    /* a handler the program set already (Python's SIGINT) stays: it ends through exit */
    if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
      signal(fatal_signals[i], on_fatal_signal);
  }
}

int InitializeInjection(void);
int InitializeInjectionNvtx2(const void *get_export_table);

/* the driver's entry point (CUDA_INJECTION64_PATH): 1 on success */
__attribute__((visibility("default"))) int InitializeInjection(void) {
  pthread_once(&cap.once, setup);
  return 1;
}

/* NVTX's entry point (NVTX_INJECTION64_PATH): set up, then hand NVTX to CUPTI's own injection,
 * which turns ranges into marker records */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *get_export_table) {
  pthread_once(&cap.once, setup);
  void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!lib)
    lib = dlopen("libcupti.so", RTLD_NOW | RTLD_NOLOAD);
  int (*cupti_nvtx)(const void *) =
      lib ? (int (*)(const void *)) dlsym(lib, "InitializeInjectionNvtx2") : NULL;
  if (!cupti_nvtx) {
    cap_warn("CUPTI's InitializeInjectionNvtx2 was not found: NVTX ranges are not recorded");
    return 0;
  }
  return cupti_nvtx(get_export_table);
}
