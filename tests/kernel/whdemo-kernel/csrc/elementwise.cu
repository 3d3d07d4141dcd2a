// Element-wise CUDA kernels and their host launchers (C linkage, float32, synchronous).
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "whdemo.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void scale_kernel(const float* a, float s, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * s;
}

__global__ void silu_kernel(const float* a, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] / (1.0f + expf(-a[i]));
}

static int launch(int op, const float* a, const float* b, float s, float* out, long long n,
                  char* err, int errlen) {
  float *da = nullptr, *db = nullptr, *dout = nullptr;
  size_t bytes = (size_t)n * sizeof(float);
  cudaError_t e = cudaSuccess;
  int threads = 256;
  int blocks = (int)((n + threads - 1) / threads);
  if (n == 0) return 0;
  if ((e = cudaMalloc(&da, bytes)) != cudaSuccess) goto fail;
  if ((e = cudaMalloc(&dout, bytes)) != cudaSuccess) goto fail;
  if ((e = cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice)) != cudaSuccess) goto fail;
  if (op == WHDEMO_ADD) {
    if ((e = cudaMalloc(&db, bytes)) != cudaSuccess) goto fail;
    if ((e = cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice)) != cudaSuccess) goto fail;
    vector_add_kernel<<<blocks, threads>>>(da, db, dout, n);
  } else if (op == WHDEMO_SCALE) {
    scale_kernel<<<blocks, threads>>>(da, s, dout, n);
  } else {
    silu_kernel<<<blocks, threads>>>(da, dout, n);
  }
  if ((e = cudaGetLastError()) != cudaSuccess) goto fail;
  if ((e = cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost)) != cudaSuccess) goto fail;
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  return 0;
fail:
  snprintf(err, errlen, "CUDA error: %s", cudaGetErrorString(e));
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  return -1;
}

extern "C" int whdemo_launch(int op, const float* a, const float* b, float s, float* out,
                             long long n, char* err, int errlen) {
  return launch(op, a, b, s, out, n, err, errlen);
}

extern "C" int whdemo_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}
