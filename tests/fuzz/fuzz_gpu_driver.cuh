#pragma once
#include <cstdio>
// Template part of fuzz_gpu (nvcc TUs fuzz_gpu_*part*.cu): builds one draw
// exactly as the host fuzzers do (plan_inputs / plan_outputs, plan_block /
// plan_block_output), mirrors its buffers to the device, builds
// fusor::device_view's with the same extents, strides and byte offsets, runs
// fusor::run(..., fusor::cuda()) and hands the result with the host()
// reference (the case's reference_fn, compiled by g++ in the host fuzzers'
// case TUs: no host() plan is instantiated here) to fz::judge_gpu.
// Instantiated once per case. The target (mirror, view space, executor) is a
// template parameter, on_cuda in fuzz_gpu; fuzz_gpu_selftest.cpp (g++) uses
// a host mirror with host() to check this logic without a GPU.
#include "fuzz_blocks_driver.hpp"
#include "fuzz_driver.hpp"
#include "fuzz_gpu.hpp"

#include <tuple>
#include <utility>

namespace fz {

/// A draw the harness could not set up (a device allocation failed, or a
/// sticky CUDA error of an earlier draw): a failure of its own, never counted
/// as "both executors threw".
inline bool harness_failure(const draw& d, const char* what) {
  std::printf("FUZZ HARNESS FAILURE: case %d seed 0x%016llx: could not mirror the draw on the device: %s\n",
              d.case_id, (unsigned long long)d.seed, what);
  return false;
}

/// One GPU draw of an elementwise case (a fz::case_fn); Target: on_cuda.
template <class Cfg, class Fn, class Target = on_cuda>
bool run_gpu_draw(std::uint64_t seed, const case_entry& c, const options& o) {
  draw d(seed, c.id, c.info);
  d.spec[0] = spec_of<typename Cfg::in0>();
  d.spec[1] = spec_of<typename Cfg::in1>();
  d.spec[2] = spec_of<typename Cfg::in2>();
  plan_inputs(d, o);
  typename Target::mirror m;
  run_outcome gpu, host;
  try {
    m.allocate(d);
  } catch (const std::exception& x) {
    return harness_failure(d, x.what());
  }
  using space = typename Target::space;
  const auto in = [&](int i) { return m.data(d, d.in[std::size_t(i)]); };
  const auto a = make_input_at<typename Cfg::in0, space>(in(0), d.in[0]);
  const auto b = make_input_at<typename Cfg::in1, space>(in(1), d.in[1]);
  const auto c3 = make_input_at<typename Cfg::in2, space>(in(2), d.in[2]);
  const auto e = Fn{}(a, b, c3);
  const auto roots = roots_of(e);
  using E = std::remove_cvref_t<decltype(e)>;
  using R = std::remove_cvref_t<decltype(roots)>;
  std::vector<std::vector<std::int64_t>> shapes;
  try {
    shapes = output_shapes(roots);
  } catch (const std::exception& x) {
    gpu.error = host.error = std::string("shape_of: ") + x.what();
    return judge_gpu(d, gpu_family::elementwise, gpu, host, fusor::describe(e), o);
  }
  // in place only where both plans write every output from one kernel
  plan_outputs(d, output_types<Cfg, R>(), shapes, c.host_one_kernel && one_kernel<typename decltype(Target::executor())::policy, E>(), o);
  try {
    m.allocate(d);
  } catch (const std::exception& x) {
    return harness_failure(d, x.what());
  }
  const auto outs = make_outputs<Cfg, R, space>(d.out, [&](const view_layout& l) { return m.data(d, l); });
  execute_on<Target>(d, m, gpu, [&]() -> std::size_t {
    if constexpr (requires { e.exprs; })
      return std::apply([&](const auto&... x) { return fusor::run(fusor::outputs(x...), e, Target::executor()); }, outs)
          .kernels;
    else
      return fusor::run(std::get<0>(outs), e, Target::executor()).kernels;
  });
  c.host_reference(d, host);
  return judge_gpu(d, gpu_family::elementwise, gpu, host, fusor::describe(e), o);
}

/// One GPU draw of a block case (a fz::case_fn); Target: on_cuda.
template <class Cfg, class Fn, class Target = on_cuda>
bool run_gpu_block_draw(std::uint64_t seed, const case_entry& c, const options& o) {
  using In = typename Cfg::inputs;
  constexpr std::size_t n = std::tuple_size_v<In>;
  block_draw d(seed, c.id, c.info);
  block_specs<Cfg>(d);
  plan_block(d, o);
  typename Target::mirror m;
  run_outcome gpu, host;
  try {
    m.allocate(d);
  } catch (const std::exception& x) {
    return harness_failure(d, x.what());
  }
  const auto views = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(
        make_input_at<std::tuple_element_t<I, In>, typename Target::space>(m.data(d, d.in[I]), d.in[I])...);
  }(std::make_index_sequence<n>{});
  const auto e = Fn{}(views, d.at);
  constexpr int R = fusor::rank_v<std::remove_cvref_t<decltype(e)>>;
  using Out = typename Cfg::out;
  std::vector<std::int64_t> shape;
  try {
    const auto s = fusor::shape_of(e);
    shape.assign(s.begin(), s.begin() + R);
  } catch (const std::exception& x) {
    gpu.error = host.error = std::string("shape_of: ") + x.what();
    return judge_gpu(d, gpu_family::blocks, gpu, host, fusor::describe(e), o);
  }
  plan_block_output(d, dt_of<Out>(), shape, o);
  try {
    m.allocate(d);
  } catch (const std::exception& x) {
    return harness_failure(d, x.what());
  }
  const auto out = make_output_at<Out, R, typename Target::space>(m.data(d, d.out[0]), d.out[0]);
  execute_on<Target>(d, m, gpu, [&]() -> std::size_t { return fusor::run(out, e, Target::executor()).kernels; });
  c.host_reference(d, host);
  return judge_gpu(d, gpu_family::blocks, gpu, host, fusor::describe(e), o);
}

}  // namespace fz
