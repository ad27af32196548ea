// fuzz_gpu_selftest: checks fuzz_gpu's driver without a GPU. The GPU-side
// templates (fuzz_gpu_driver.cuh: the draw, the mirror of every buffer, the
// views over the mirror, the run, copying back, collect(), judge_gpu) run with
// a host mirror (256-byte aligned host copies, like cudaMalloc) and host()
// in place of the device mirror and cuda(), against the host references the
// host case TUs register. Both sides then compute the same thing, so every
// draw must agree bitwise; the summary must say "0 not bitwise equal".
// Compiled by g++ for the cases of part 0 of each family only (the driver
// is the same for every case; the others are stubs that pass): ctest
// fuzz.gpu_driver (label host).
#include "fuzz_cli.hpp"
#include "fuzz_gpu_driver.cuh"

#include "fuzz_blocks_cases.inc"
#include "fuzz_cases.inc"

#include <algorithm>
#include <cstring>
#include <new>

namespace fz {
namespace {

/// device_mirror's interface over host memory.
struct host_mirror {
  std::vector<unsigned char*> dev;
  host_mirror() = default;
  host_mirror(const host_mirror&) = delete;
  host_mirror& operator=(const host_mirror&) = delete;
  ~host_mirror() {
    for (unsigned char* p : dev) ::operator delete(p, std::align_val_t(256));
  }
  void allocate(const draw& d) {
    while (dev.size() < d.buffers.size()) {
      const std::size_t bytes = std::max<std::size_t>(d.buffers[dev.size()].bytes(), 1);
      dev.push_back(static_cast<unsigned char*>(::operator new(bytes, std::align_val_t(256))));
    }
  }
  void upload(const draw& d) {
    for (std::size_t i = 0; i < dev.size(); ++i)
      if (d.buffers[i].mem && d.buffers[i].bytes()) std::memcpy(dev[i], d.buffers[i].mem, d.buffers[i].bytes());
  }
  void download(draw& d) {
    for (std::size_t i = 0; i < dev.size(); ++i)
      if (d.buffers[i].mem && d.buffers[i].bytes()) std::memcpy(d.buffers[i].mem, dev[i], d.buffers[i].bytes());
  }
  void* data(const draw& d, const view_layout& l) const {
    if (l.null_data) return nullptr;
    return dev[std::size_t(l.buffer)] + std::size_t(l.offset) * dt_size(d.buffers[std::size_t(l.buffer)].type);
  }
};

/// fuzz_gpu_driver.cuh's Target: host() on the host mirror.
struct on_host_mirror {
  using mirror = host_mirror;
  using space = fusor::host_space;
  static auto executor() { return fusor::host(); }
  static void sync(run_outcome&) {}
};

bool not_in_selftest(std::uint64_t, const case_entry&, const options&) { return true; }

}  // namespace
}  // namespace fz

int main(int argc, char** argv) {
  fz::registry host_ew, host_blocks, ew, blocks;
  fz::register_part0(host_ew);
  fz::register_part1(host_ew);
  fz::register_part2(host_ew);
  fz::register_blocks_part0(host_blocks);
  fz::register_blocks_part1(host_blocks);
  fz::register_blocks_part2(host_blocks);
  for (const auto& c : host_ew.cases) ew.add(c.id, &fz::not_in_selftest, c.info);
  for (const auto& c : host_blocks.cases) blocks.add(c.id, &fz::not_in_selftest, c.info);
  {
    fz::registry& r = ew;
#define FZ_REGISTER(K) \
  r.add(K, &fz::run_gpu_draw<fz_cases::cfg_##K, fz_cases::fn_##K, fz::on_host_mirror>, fz_cases::info_##K);
    FZ_CASES_PART0(FZ_REGISTER)
#undef FZ_REGISTER
  }
  {
    fz::registry& r = blocks;
#define FZB_REGISTER(K) \
  r.add(K, &fz::run_gpu_block_draw<fzb_cases::cfg_##K, fzb_cases::fn_##K, fz::on_host_mirror>, fzb_cases::info_##K);
    FZB_CASES_PART0(FZB_REGISTER)
#undef FZB_REGISTER
  }
  if (!fz::attach_host_references(ew, host_ew) || !fz::attach_host_references(blocks, host_blocks)) return 2;
  fz::suite a = fz::elementwise_suite(ew), b = fz::blocks_suite(blocks);
  a.default_draws = 20;  // as fuzz_gpu
  b.default_draws = 10;
  a.summary = &fz::print_gpu_summary_elementwise;
  b.summary = &fz::print_gpu_summary_blocks;
  fz::g_gpu_program = "fuzz_gpu_selftest";
  fz::options opt;
  fz::cli_info info;
  info.program = "fuzz_gpu_selftest";
  info.agree = "the host mirror matches host()";
  info.negative_strides_flag = true;
  return fz::run_cli(argc, argv, info, {a, b}, opt);
}
