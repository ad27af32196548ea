// fuzz_gpu: the GPU mode of the differential fuzzers. For the draws of
// fuzz_elementwise and fuzz_blocks (same cases, same seeds, so the same
// inputs, layouts, misalignments and scalars) it runs fusor::cuda() on a
// device mirror of the draw's buffers and fusor::host() on the host buffers,
// and compares (fuzz_gpu_support.cpp; README.md, "GPU mode").
//
//   fuzz_gpu                                     CI: 20 fixed-seed draws per elementwise case, 10 per block case
//   fuzz_gpu --draws N | --seconds N             more fixed seeds / random draws for N seconds
//   fuzz_gpu --family blocks --case K --seed S   replay one draw (verbose)
//   fuzz_gpu --inject                            perturb the GPU result of every draw: must fail
//
// Without a usable CUDA device it prints "fuzz_gpu: no CUDA device, skipped"
// and exits with 77 (ctest SKIP_RETURN_CODE).
#include "fuzz_blocks.hpp"
#include "fuzz_cli.hpp"
#include "fuzz_gpu.hpp"

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  bool help = false;
  for (int i = 1; i < argc; ++i) help = help || !std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h") ||
                                        !std::strcmp(argv[i], "--list");
  if (!help && !fusor::cuda_device_available()) {
    std::puts("fuzz_gpu: no CUDA device, skipped");
    return 77;
  }
  // the host() references come from the host fuzzers' case TUs (g++)
  fz::registry host_ew, host_blocks, gpu_ew, gpu_blocks;
  fz::register_part0(host_ew);
  fz::register_part1(host_ew);
  fz::register_part2(host_ew);
  fz::register_blocks_part0(host_blocks);
  fz::register_blocks_part1(host_blocks);
  fz::register_blocks_part2(host_blocks);
  fz::register_gpu_part0(gpu_ew);
  fz::register_gpu_part1(gpu_ew);
  fz::register_gpu_part2(gpu_ew);
  fz::register_gpu_blocks_part0(gpu_blocks);
  fz::register_gpu_blocks_part1(gpu_blocks);
  fz::register_gpu_blocks_part2(gpu_blocks);
  if (!fz::attach_host_references(gpu_ew, host_ew) || !fz::attach_host_references(gpu_blocks, host_blocks)) return 2;
  // Same families, seeds and regression draws as the host fuzzers, fewer
  // draws per case in CI mode (every draw copies its buffers to the device
  // and synchronizes: ~1-2 ms each on an H200, an estimate: 60 x 20 + 53 x 10 = 1,730 draws).
  fz::suite ew = fz::elementwise_suite(gpu_ew), blocks = fz::blocks_suite(gpu_blocks);
  ew.default_draws = 20;
  blocks.default_draws = 10;
  ew.summary = &fz::print_gpu_summary_elementwise;
  blocks.summary = &fz::print_gpu_summary_blocks;
  fz::options opt;
  fz::cli_info info;
  info.program = "fuzz_gpu";
  info.agree = "cuda matches host";
  info.negative_strides_flag = true;
  return fz::run_cli(argc, argv, info, {ew, blocks}, opt);
}
