/* microbench.cu: fixed costs and size-dependent rates of the data movements
 * that EMA's fabric model charges, measured on real GPUs. It prints one CSV
 * row per (operation, size): kind,src,dst,bytes,median_us,gb_per_s.
 *
 *   empty-kernel     one launch of an empty kernel, timed with events
 *   read             a streaming-read kernel (16-byte loads, 132x8 blocks of
 *                    512 threads) on GPU dst over memory on GPU src
 *   copy             cudaMemcpyAsync / cudaMemcpyPeerAsync src -> dst
 *                    (src or dst "host" = pinned host memory)
 *   copy-bidir       two peer copies at once, one each way (bytes = both)
 *
 * Each figure is the median over REPS timed repetitions after a warm-up.
 * Build: nvcc -O2 -arch=sm_90 -o microbench validate/microbench.cu
 * Run:   ./microbench > results.csv   (uses GPUs 0 and 1 if there are two) */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_));     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static const int REPS = 25;

__global__ void empty_kernel() {}

__global__ void read_kernel(const int4 *data, size_t n, int4 *sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x) {
    int4 v = data[i];
    acc.x ^= v.x;
    acc.y ^= v.y;
    acc.z ^= v.z;
    acc.w ^= v.w;
  }
  if (acc.x == 0x12345678 && acc.y == 0x9abcdef0)
    sink[0] = acc; /* never true for our fill; keeps the loads alive */
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/* Time FN (which enqueues work on STREAM) REPS times with events; median in us. */
template <typename F> static double time_us(cudaStream_t stream, F fn) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++)
    fn();
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> t;
  for (int i = 0; i < REPS; i++) {
    CHECK(cudaEventRecord(a, stream));
    fn();
    CHECK(cudaEventRecord(b, stream));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return median(t);
}

static void row(const char *kind, const char *src, const char *dst, size_t bytes, double us) {
  printf("%s,%s,%s,%zu,%.3f,%.2f\n", kind, src, dst, bytes, us, bytes / (us * 1e3));
  fflush(stdout);
}

static const char *gname(int g) {
  return g == 0 ? "gpu0" : "gpu1";
}

int main() {
  int ngpu = 0;
  CHECK(cudaGetDeviceCount(&ngpu));
  const size_t max_bytes = (size_t) 4 << 30;
  std::vector<size_t> sizes;
  for (size_t s = 4096; s <= max_bytes; s *= 4)
    sizes.push_back(s);

  std::vector<char *> buf(ngpu), buf2(ngpu);
  std::vector<cudaStream_t> stream(ngpu);
  for (int g = 0; g < ngpu; g++) {
    CHECK(cudaSetDevice(g));
    CHECK(cudaMalloc(&buf[g], max_bytes));
    CHECK(cudaMalloc(&buf2[g], max_bytes));
    CHECK(cudaMemset(buf[g], 0x5a, max_bytes));
    CHECK(cudaMemset(buf2[g], 0x3c, max_bytes));
    CHECK(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking));
    for (int p = 0; p < ngpu; p++)
      if (p != g)
        CHECK(cudaDeviceEnablePeerAccess(p, 0));
  }
  char *host;
  const size_t host_bytes = (size_t) 1 << 30;
  CHECK(cudaMallocHost(&host, host_bytes));
  memset(host, 1, host_bytes);

  printf("kind,src,dst,bytes,median_us,gb_per_s\n");
  CHECK(cudaSetDevice(0));
  row("empty-kernel", "gpu0", "gpu0", 0,
      time_us(stream[0], [&] { empty_kernel<<<1, 1, 0, stream[0]>>>(); }));
  row("empty-kernel-132x512", "gpu0", "gpu0", 0,
      time_us(stream[0], [&] { empty_kernel<<<132 * 8, 512, 0, stream[0]>>>(); }));

  for (int src = 0; src < ngpu; src++) {
    for (size_t s : sizes) {
      CHECK(cudaSetDevice(0));
      double us = time_us(stream[0], [&] {
        read_kernel<<<132 * 8, 512, 0, stream[0]>>>((const int4 *) buf[src], s / 16,
                                                    (int4 *) buf2[0]);
      });
      CHECK(cudaGetLastError());
      row("read", gname(src), "gpu0", s, us);
    }
  }
  for (size_t s : sizes) {
    CHECK(cudaSetDevice(0));
    row("copy", "gpu0", "gpu0", s, time_us(stream[0], [&] {
          CHECK(cudaMemcpyAsync(buf2[0], buf[0], s, cudaMemcpyDeviceToDevice, stream[0]));
        }));
  }
  for (size_t s : sizes) {
    if (s > host_bytes)
      break;
    CHECK(cudaSetDevice(0));
    row("copy", "host", "gpu0", s, time_us(stream[0], [&] {
          CHECK(cudaMemcpyAsync(buf[0], host, s, cudaMemcpyHostToDevice, stream[0]));
        }));
    row("copy", "gpu0", "host", s, time_us(stream[0], [&] {
          CHECK(cudaMemcpyAsync(host, buf[0], s, cudaMemcpyDeviceToHost, stream[0]));
        }));
  }
  if (ngpu >= 2) {
    for (size_t s : sizes) {
      CHECK(cudaSetDevice(0));
      row("copy", "gpu1", "gpu0", s, time_us(stream[0], [&] {
            CHECK(cudaMemcpyPeerAsync(buf2[0], 0, buf[1], 1, s, stream[0]));
          }));
      row("copy", "gpu0", "gpu1", s, time_us(stream[0], [&] {
            CHECK(cudaMemcpyPeerAsync(buf2[1], 1, buf[0], 0, s, stream[0]));
          }));
      /* both directions: the second copy runs on GPU 1's stream, joined by events */
      /* each event belongs to the device of the stream that records it */
      cudaEvent_t go, done;
      CHECK(cudaEventCreateWithFlags(&go, cudaEventDisableTiming));
      CHECK(cudaSetDevice(1));
      CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      CHECK(cudaSetDevice(0));
      row("copy-bidir", "gpu0", "gpu1", 2 * s, time_us(stream[0], [&] {
            CHECK(cudaEventRecord(go, stream[0]));
            CHECK(cudaStreamWaitEvent(stream[1], go, 0));
            CHECK(cudaMemcpyPeerAsync(buf2[1], 1, buf[0], 0, s, stream[1]));
            CHECK(cudaMemcpyPeerAsync(buf2[0], 0, buf[1], 1, s, stream[0]));
            CHECK(cudaEventRecord(done, stream[1]));
            CHECK(cudaStreamWaitEvent(stream[0], done, 0));
          }));
      CHECK(cudaEventDestroy(go));
      CHECK(cudaEventDestroy(done));
    }
  }
  CHECK(cudaFreeHost(host));
  for (int g = 0; g < ngpu; g++) {
    CHECK(cudaSetDevice(g));
    CHECK(cudaFree(buf[g]));
    CHECK(cudaFree(buf2[g]));
    CHECK(cudaStreamDestroy(stream[g]));
  }
  return 0;
}
