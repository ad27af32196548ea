// fuzz_gpu: the CUDA runs of the block cases of part 2 (FZB_CASES_PART2 in
// fuzz_blocks_cases.inc); three parts, like the host fuzzer's.
#include "fuzz_gpu_driver.cuh"
#include "fuzz_blocks_cases.inc"

void fz::register_gpu_blocks_part2(fz::registry& r) {
#define FZB_REGISTER(K) r.add(K, &fz::run_gpu_block_draw<fzb_cases::cfg_##K, fzb_cases::fn_##K>, fzb_cases::info_##K);
  FZB_CASES_PART2(FZB_REGISTER)
#undef FZB_REGISTER
}
