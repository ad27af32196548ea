#pragma once
// Template part of the block fuzzer: views of one draw for a case's input
// types, the case's expression, fusor::run with host() and unfused(), then
// fz::judge_block (fuzz_blocks_main.cpp). Reuses fuzz_driver.hpp's view
// helpers. Instantiated once per case: keep it small.
#include "fuzz_blocks.hpp"
#include "fuzz_driver.hpp"

#include <tuple>
#include <utility>

namespace fz {

/// The draw's inputs and roles from the case's input types (before plan_block).
template <class Cfg>
void block_specs(block_draw& d) {
  using In = typename Cfg::inputs;
  constexpr std::size_t n = std::tuple_size_v<In>;
  d.fam = Cfg::fam;
  d.aux = Cfg::aux;
  d.in.assign(n, view_layout{});
  d.spec.assign(n, input_spec{});
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((d.spec[I] = spec_of<std::tuple_element_t<I, In>>(), d.roles.push_back(std::tuple_element_t<I, In>::which)), ...);
  }(std::make_index_sequence<n>{});
}

template <class Cfg, class Fn>
bool run_block_draw(std::uint64_t seed, const case_entry& c, const options& o) {
  using In = typename Cfg::inputs;
  constexpr std::size_t n = std::tuple_size_v<In>;
  block_draw d(seed, c.id, c.info);
  block_specs<Cfg>(d);
  plan_block(d, o);
  const auto views = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(make_input<std::tuple_element_t<I, In>>(d, int(I))...);
  }(std::make_index_sequence<n>{});
  const auto e = Fn{}(views, d.at);
  using E = std::remove_cvref_t<decltype(e)>;
  constexpr int R = fusor::rank_v<E>;
  using Out = typename Cfg::out;

  std::vector<std::int64_t> shape;
  try {
    const auto s = fusor::shape_of(e);
    shape.assign(s.begin(), s.begin() + R);
  } catch (const std::exception& x) {
    run_outcome f, u;
    f.error = u.error = std::string("shape_of: ") + x.what();
    return judge_block(d, f, u, nullptr, fusor::describe(e), o);
  }
  plan_block_output(d, dt_of<Out>(), shape, o);
  const auto out = std::make_tuple(make_output<Out, R>(d, d.out[0]));

  run_outcome fused, unfused, again;
  const auto ex = fusor::host();
  execute(d, e, out, d.out, ex, fused);
  // BN folding: the first run also launches the kernels that prepare the
  // folded weights; the second run on the same executor uses its cache.
  const bool twice = Cfg::fam == family::conv_bn;
  if (twice) execute(d, e, out, d.out, ex, again);
  execute(d, e, out, d.out, fusor::unfused(), unfused);
  return judge_block(d, fused, unfused, twice ? &again : nullptr, fusor::describe(e), o);
}

/// fuzz_gpu's reference (a fz::reference_fn): host() on a block draw that
/// fuzz_gpu planned (plan_block, plan_block_output), into d.out.
template <class Cfg, class Fn>
void host_block_reference(draw& dd, run_outcome& r) {
  using In = typename Cfg::inputs;
  block_draw& d = static_cast<block_draw&>(dd);
  const auto views = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(make_input<std::tuple_element_t<I, In>>(d, int(I))...);
  }(std::make_index_sequence<std::tuple_size_v<In>>{});
  const auto e = Fn{}(views, d.at);
  constexpr int R = fusor::rank_v<std::remove_cvref_t<decltype(e)>>;
  const auto out = std::make_tuple(make_output<typename Cfg::out, R>(d, d.out[0]));
  execute(d, e, out, d.out, fusor::host(), r);
}

}  // namespace fz
