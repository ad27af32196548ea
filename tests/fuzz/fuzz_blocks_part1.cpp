// Instantiates the block fuzz cases of part 1 (FZB_CASES_PART1 in
// fuzz_blocks_cases.inc): the cases are split over three translation units
// so they compile in parallel.
#include "fuzz_blocks_driver.hpp"
#include "fuzz_blocks_cases.inc"

void fz::register_blocks_part1(fz::registry& r) {
#define FZB_REGISTER(K) r.add(K, &fz::run_block_draw<fzb_cases::cfg_##K, fzb_cases::fn_##K>, fzb_cases::info_##K, \
                             &fz::host_block_reference<fzb_cases::cfg_##K, fzb_cases::fn_##K>);
  FZB_CASES_PART1(FZB_REGISTER)
#undef FZB_REGISTER
}
