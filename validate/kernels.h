/* kernels.h: the GPU kernels of ema-validate, behind C entry points
 * (kernels.cu is the only CUDA C++ file). Every launcher enqueues on the
 * given stream, whose device must be current, and returns the launch's
 * cudaError_t; the caller checks it with EMA_CUDA (cudacheck.h).
 *
 *   fill_bf16      fill a buffer with the synthetic bf16 stream of fill.h
 *   empty          one empty kernel (launch and drain cost)
 *   stream_read    read a buffer with 16-byte loads, PASSES times: the
 *                  HBM (or, on a peer pointer, NVLink) bandwidth kernel
 *   chase_init     build a pointer chain through a buffer
 *   chase          follow it with one thread: dependent-load latency
 *   gemv           y += W x over rows of bf16 weights (decode weights)
 *   attention      paged attention over a block table (decode KV reads)
 *
 * Launch shapes come from the device (multiprocessors, occupancy), so one
 * launch fills the GPU. */
#pragma once

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int multiprocessors;
  int read_blocks_per_sm; /* stream_read: resident blocks of 512 threads per SM */
  int gemv_blocks_per_sm; /* gemv: resident blocks of 256 threads per SM */
} EmaKernelShape;

/* Query DEVICE (which becomes current). */
cudaError_t ema_kernel_shape(int device, EmaKernelShape *shape);

/* Elements 0..ELEMENTS-1 of DATA (bf16) = ema_fill_bf16(SEED, i). */
cudaError_t ema_launch_fill_bf16(cudaStream_t stream, const EmaKernelShape *shape, void *data,
                                 uint64_t elements, uint64_t seed);

cudaError_t ema_launch_empty(cudaStream_t stream);

/* Read BYTES (a multiple of 16) of DATA PASSES times; SINK (16 bytes of
 * device memory) is written only to keep the loads alive. */
cudaError_t ema_launch_stream_read(cudaStream_t stream, const EmaKernelShape *shape,
                                   const void *data, uint64_t bytes, uint32_t passes, void *sink);

/* Link SLOTS (a power of two) slots of SLOT_BYTES each in BUFFER into one
 * cycle visiting every slot in a scattered order (slot i's first 8 bytes
 * hold the address of slot (a i + c) mod SLOTS, a full-period LCG). */
cudaError_t ema_launch_chase_init(cudaStream_t stream, const EmaKernelShape *shape, void *buffer,
                                  uint64_t slots, uint64_t slot_bytes);
/* One thread follows STEPS links from the address held in CURSOR (8 bytes
 * of device memory) and stores where it stopped back into CURSOR. */
cudaError_t ema_launch_chase(cudaStream_t stream, void *cursor, uint32_t steps);

/* y[r] += sum_k W[r][k] x[k] for ROWS rows of COLS bf16 values (COLS a
 * multiple of 256); x: COLS bf16 values; y: ROWS floats (zero it first).
 * The rows are split evenly over all warps (atomics join the pieces of a
 * row), so no warp waits on a long tail. */
cudaError_t ema_launch_gemv(cudaStream_t stream, const EmaKernelShape *shape, const void *weights,
                            const void *x, float *y, uint64_t rows, uint32_t cols);

typedef struct {
  const int32_t *block_table; /* [batch][blocks_per_seq]: >= 0 local, < 0 other (-e - 1) */
  const void *pool_local;     /* this layer's local blocks (bf16) */
  const void *pool_other;     /* this layer's remote blocks, or staging slot; NULL if none */
  const void *queries;        /* bf16 [batch][kv_heads][group][head_dim] */
  float *partial;             /* [batch][parts_per_seq][kv_heads][group][head_dim + 2] */
  unsigned *counters;         /* [batch][kv_heads], zero before the first launch (kept zero) */
  float *out;                 /* [batch][kv_heads][group][head_dim] */
  uint32_t batch, context, blocks_per_seq, blocks_per_part, parts_per_seq;
  uint32_t kv_heads, group, head_dim; /* group <= 8; head_dim 64, 128 or 256 */
  uint32_t group_splits;              /* sub-blocks of 128 threads per thread block: 1 if
                                         group is 1, else ceil(group / 2) */
  float scale;                        /* 1 / sqrt(head_dim) */
} EmaAttentionArgs;

/* One thread block per (sequence, part, KV head), of 128 threads per two
 * query heads of the group: the online-softmax attention of the group over
 * the part's tokens into ARGS->partial; the last block of each (sequence,
 * KV head) merges its parts into ARGS->out and resets its counter. */
cudaError_t ema_launch_attention(cudaStream_t stream, const EmaAttentionArgs *args);

#ifdef __cplusplus
}
#endif
