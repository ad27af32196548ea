// fuzz_gpu: the CUDA runs of the elementwise cases of part 0 (FZ_CASES_PART0 in
// fuzz_cases.inc); three parts, like the host fuzzer's, so they compile in parallel.
#include "fuzz_gpu_driver.cuh"
#include "fuzz_cases.inc"

void fz::register_gpu_part0(fz::registry& r) {
#define FZ_REGISTER(K) r.add(K, &fz::run_gpu_draw<fz_cases::cfg_##K, fz_cases::fn_##K>, fz_cases::info_##K);
  FZ_CASES_PART0(FZ_REGISTER)
#undef FZ_REGISTER
}
