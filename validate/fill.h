/* fill.h: the synthetic data of the decode workload, shared by the GPU
 * kernels (kernels.cu) and the CPU references (decodeplan.c). Element i of
 * a stream with seed s is a bf16 number drawn from a 64-bit hash of (s, i),
 * uniform in [-0.5, 0.5) and truncated to bf16; host and device compute the
 * same bits, so a GPU result can be checked against a CPU reference that
 * regenerates its inputs instead of copying them back. Never zeros: zeros
 * hide unwritten outputs and wrong indexing. Plain C that nvcc also
 * compiles (host and device). */
#pragma once

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define EMA_FILL_FN __host__ __device__ static inline
#else
#define EMA_FILL_FN static inline
#endif

/* Seeds of the decode workload's streams. */
enum {
  EMA_SEED_WEIGHTS = 1, /* all decoder layers' weights, one stream */
  EMA_SEED_ACTIVATIONS, /* the input vector of each layer's GEMV, and of the LM head */
  EMA_SEED_LM_HEAD,     /* the LM head's weights */
  EMA_SEED_QUERIES,     /* attention queries */
  EMA_SEED_KV_LOCAL,    /* the KV blocks that live on the borrower */
  EMA_SEED_KV_REMOTE,   /* the KV blocks that live on the lender */
  EMA_SEED_CALIBRATION, /* buffers of the calibration measurements */
};

/* splitmix64's finaliser: a bijective 64-bit mix. */
EMA_FILL_FN uint64_t ema_fill_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* The bf16 bits of element INDEX of stream SEED. */
EMA_FILL_FN uint16_t ema_fill_bf16(uint64_t seed, uint64_t index) {
  uint64_t hash = ema_fill_mix(seed * 0x9e3779b97f4a7c15ull + index);
  /* 24 bits scaled by 2^-24 and shifted by 0.5: exact in float. */
  float value = (float) (hash >> 40) * (1.0f / 16777216.0f) - 0.5f;
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return (uint16_t) (bits >> 16);
}

EMA_FILL_FN float ema_bf16_to_float(uint16_t bf16) {
  uint32_t bits = (uint32_t) bf16 << 16;
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}
