/* gpu.c: the resource arena and event timing (gpu.h). The arena is a list
 * of (kind, device, handle) records; releasing walks it backwards, makes
 * each record's device current and frees the handle with the matching
 * call. */
#include "gpu.h"

#include <time.h>

#include "cudacheck.h"

typedef enum {
  RESOURCE_DEVICE_MEMORY,
  RESOURCE_HOST_MEMORY,
  RESOURCE_STREAM,
  RESOURCE_EVENT,
  RESOURCE_PEER_ACCESS,
} ResourceKind;

typedef struct {
  ResourceKind kind;
  int device;
  int peer;
  void *handle;
} Resource;

struct _EmaGpuArena {
  GArray *resources; /* Resource, in order of creation */
};

EmaGpuArena *ema_gpu_arena_new(void) {
  EmaGpuArena *arena = g_new0(EmaGpuArena, 1);
  arena->resources = g_array_new(FALSE, FALSE, sizeof(Resource));
  return arena;
}

static void add_resource(EmaGpuArena *arena, ResourceKind kind, int device, int peer,
                         void *handle) {
  Resource resource = {kind, device, peer, handle};
  g_array_append_val(arena->resources, resource);
}

static gboolean release_one(const Resource *r, GError **error) {
  if (r->device >= 0 && !EMA_CUDA(r->device, error, cudaSetDevice(r->device)))
    return FALSE;
  switch (r->kind) {
  case RESOURCE_DEVICE_MEMORY:
    return EMA_CUDA(r->device, error, cudaFree(r->handle));
  case RESOURCE_HOST_MEMORY:
    return EMA_CUDA(-1, error, cudaFreeHost(r->handle));
  case RESOURCE_STREAM:
    return EMA_CUDA(r->device, error, cudaStreamDestroy((cudaStream_t) r->handle));
  case RESOURCE_EVENT:
    return EMA_CUDA(r->device, error, cudaEventDestroy((cudaEvent_t) r->handle));
  case RESOURCE_PEER_ACCESS:
    return EMA_CUDA(r->device, error, cudaDeviceDisablePeerAccess(r->peer));
  }
  g_assert_not_reached();
}

gboolean ema_gpu_arena_release(EmaGpuArena *arena, GError **error) {
  gboolean ok = TRUE;
  while (arena->resources->len > 0) {
    guint last = arena->resources->len - 1;
    Resource resource = g_array_index(arena->resources, Resource, last);
    g_array_remove_index(arena->resources, last);
    ok = release_one(&resource, error) && ok;
  }
  return ok;
}

void ema_gpu_arena_free(EmaGpuArena *arena) {
  GError *error = NULL;
  if (arena == NULL)
    return;
  if (!ema_gpu_arena_release(arena, &error)) {
    g_debug("releasing CUDA resources: %s", error ? error->message : "failed");
    g_clear_error(&error);
  }
  g_array_unref(arena->resources);
  g_free(arena);
}

gboolean ema_gpu_malloc(EmaGpuArena *arena, int device, size_t bytes, void **out, GError **error) {
  *out = NULL;
  if (!EMA_CUDA(device, error, cudaSetDevice(device)) ||
      !EMA_CUDA(device, error, cudaMalloc(out, bytes)))
    return FALSE;
  add_resource(arena, RESOURCE_DEVICE_MEMORY, device, -1, *out);
  return TRUE;
}

gboolean ema_gpu_host_malloc(EmaGpuArena *arena, size_t bytes, void **out, GError **error) {
  *out = NULL;
  if (!EMA_CUDA(-1, error, cudaHostAlloc(out, bytes, cudaHostAllocPortable)))
    return FALSE;
  add_resource(arena, RESOURCE_HOST_MEMORY, -1, -1, *out);
  return TRUE;
}

gboolean ema_gpu_stream_new(EmaGpuArena *arena, int device, cudaStream_t *out, GError **error) {
  *out = NULL;
  if (!EMA_CUDA(device, error, cudaSetDevice(device)) ||
      !EMA_CUDA(device, error, cudaStreamCreateWithFlags(out, cudaStreamNonBlocking)))
    return FALSE;
  add_resource(arena, RESOURCE_STREAM, device, -1, *out);
  return TRUE;
}

gboolean ema_gpu_event_new(EmaGpuArena *arena, int device, gboolean timing, cudaEvent_t *out,
                           GError **error) {
  *out = NULL;
  if (!EMA_CUDA(device, error, cudaSetDevice(device)) ||
      !EMA_CUDA(device, error,
                cudaEventCreateWithFlags(out, timing ? cudaEventDefault : cudaEventDisableTiming)))
    return FALSE;
  add_resource(arena, RESOURCE_EVENT, device, -1, *out);
  return TRUE;
}

gboolean ema_gpu_peer_enable(EmaGpuArena *arena, int device, int peer, GError **error) {
  int can_access = 0;
  cudaError_t result;
  if (!EMA_CUDA(device, error, cudaDeviceCanAccessPeer(&can_access, device, peer)))
    return FALSE;
  if (!can_access) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "GPU %d cannot access GPU %d's memory (cudaDeviceCanAccessPeer: no)", device, peer);
    return FALSE;
  }
  if (!EMA_CUDA(device, error, cudaSetDevice(device)))
    return FALSE;
  result = cudaDeviceEnablePeerAccess(peer, 0);
  if (result == cudaErrorPeerAccessAlreadyEnabled) {
    (void) cudaGetLastError(); /* someone else's: leave it enabled */
    return TRUE;
  }
  if (!EMA_CUDA(device, error, result))
    return FALSE;
  add_resource(arena, RESOURCE_PEER_ACCESS, device, peer, NULL);
  return TRUE;
}

gboolean ema_gpu_time(int device, cudaStream_t stream, guint warmups, guint repeats,
                      EmaGpuWork work, gpointer data, double *samples, GError **error) {
  g_autoptr(EmaGpuArena) arena = ema_gpu_arena_new();
  cudaEvent_t start, stop;
  gboolean ok = ema_gpu_event_new(arena, device, TRUE, &start, error) &&
                ema_gpu_event_new(arena, device, TRUE, &stop, error);

  for (guint i = 0; ok && i < warmups; i++)
    ok = EMA_CUDA(device, error, cudaSetDevice(device)) && work(data, error) &&
         EMA_CUDA(device, error, cudaStreamSynchronize(stream));
  for (guint i = 0; ok && i < repeats; i++) {
    float ms = 0;
    ok = EMA_CUDA(device, error, cudaSetDevice(device)) &&
         EMA_CUDA(device, error, cudaEventRecord(start, stream)) && work(data, error) &&
         EMA_CUDA(device, error, cudaSetDevice(device)) &&
         EMA_CUDA(device, error, cudaEventRecord(stop, stream)) &&
         EMA_CUDA(device, error, cudaEventSynchronize(stop)) &&
         EMA_CUDA(device, error, cudaEventElapsedTime(&ms, start, stop));
    if (ok)
      samples[i] = ms * 1e-3;
  }
  if (!ok) { /* let queued work finish before its buffers go; the error is already set */
    (void) cudaStreamSynchronize(stream);
    (void) cudaGetLastError();
  }
  return ema_gpu_arena_release(arena, error) && ok;
}

double ema_host_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double) now.tv_sec + (double) now.tv_nsec * 1e-9;
}
