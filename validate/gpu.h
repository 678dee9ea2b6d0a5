/* gpu.h: owning CUDA resources and timing work on a stream.
 *
 * An EmaGpuArena owns what a measurement allocates: device and pinned host
 * buffers, streams, events and enabled peer access, each with its device.
 * ema_gpu_arena_release() frees everything in reverse order of creation and
 * reports the first failure without hiding an earlier error; a measurement
 * calls it on every path (success or error), and the g_autoptr cleanup
 * releases whatever is left if a path returns early. Nothing here decides
 * what to measure. */
#pragma once

#include <cuda_runtime_api.h>
#include <glib.h>

G_BEGIN_DECLS

typedef struct _EmaGpuArena EmaGpuArena;

EmaGpuArena *ema_gpu_arena_new(void);
/* Release everything the arena still owns, in reverse order. Returns FALSE
 * (setting ERROR unless it already holds an error) when a release failed;
 * every resource is attempted regardless. The arena stays usable. */
gboolean ema_gpu_arena_release(EmaGpuArena *arena, GError **error);
/* Release quietly (a failure is logged with g_debug) and free the arena. */
void ema_gpu_arena_free(EmaGpuArena *arena);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaGpuArena, ema_gpu_arena_free)

/* cudaMalloc on DEVICE. */
gboolean ema_gpu_malloc(EmaGpuArena *arena, int device, size_t bytes, void **out, GError **error);
/* cudaMallocHost (pinned host memory, portable to all devices). */
gboolean ema_gpu_host_malloc(EmaGpuArena *arena, size_t bytes, void **out, GError **error);
/* A non-blocking stream on DEVICE. */
gboolean ema_gpu_stream_new(EmaGpuArena *arena, int device, cudaStream_t *out, GError **error);
/* An event on DEVICE; TIMING FALSE gives a synchronisation-only event. */
gboolean ema_gpu_event_new(EmaGpuArena *arena, int device, gboolean timing, cudaEvent_t *out,
                           GError **error);
/* Let DEVICE load from and copy with PEER's memory; disabled on release (if
 * it was not already enabled before). */
gboolean ema_gpu_peer_enable(EmaGpuArena *arena, int device, int peer, GError **error);

/* Work enqueued for one timed repeat (asynchronously, on the timed stream
 * or joined back to it). */
typedef gboolean (*EmaGpuWork)(gpointer data, GError **error);

/* Time WORK on STREAM of DEVICE with two events per repeat: WARMUPS untimed
 * runs, then REPEATS timed runs, each waited for before the next starts.
 * SAMPLES (REPEATS of them) get seconds. */
gboolean ema_gpu_time(int device, cudaStream_t stream, guint warmups, guint repeats,
                      EmaGpuWork work, gpointer data, double *samples, GError **error);

/* Monotonic host clock, seconds (for host-side costs such as cuMem*). */
double ema_host_seconds(void);

G_END_DECLS
