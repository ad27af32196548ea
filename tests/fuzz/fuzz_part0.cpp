// Instantiates the fuzz cases of part 0 (FZ_CASES_PART0 in fuzz_cases.inc): the
// cases are split over three translation units so they compile in parallel.
#include "fuzz_driver.hpp"
#include "fuzz_cases.inc"

void fz::register_part0(fz::registry& r) {
#define FZ_REGISTER(K) r.add(K, &fz::run_draw<fz_cases::cfg_##K, fz_cases::fn_##K>, fz_cases::info_##K,                  \
                            &fz::host_reference<fz_cases::cfg_##K, fz_cases::fn_##K>,                       \
                            fz::host_one_kernel<fz_cases::cfg_##K, fz_cases::fn_##K>());
  FZ_CASES_PART0(FZ_REGISTER)
#undef FZ_REGISTER
}
