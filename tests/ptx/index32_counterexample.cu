// Counterexample for the 64-bit indexing check of check_ptx.cmake: the
// classic 32-bit grid-stride loop, which wraps above 2^31 elements. Its PTX
// must be REJECTED by `check_ptx.cmake -DINDEX64=ON` (test
// ptx.index64_rejects_32bit_index), which shows that the check can fail.
// Plain CUDA, no fusor: it only exercises the checker.
__global__ void index32_counterexample(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];
}
