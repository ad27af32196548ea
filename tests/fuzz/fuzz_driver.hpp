#pragma once
// Template part of the differential fuzzer: builds the views of one draw for a
// case's view types, builds the case's expression, runs it with fusor::host()
// and fusor::unfused() and hands both results to fz::judge (fuzz_main.cpp).
// Kept small on purpose: it is instantiated once per case, and the fuzz
// translation units' compile time is dominated by fusor's own templates.
#include "fuzz_support.hpp"

#include <exception>
#include <tuple>
#include <type_traits>
#include <utility>

namespace fz {

template <class In>
input_spec spec_of() {
  using E = typename In::extents;
  input_spec s;
  s.type = dt_of<typename In::type>();
  s.rank = int(E::rank());
  for (int d = 0; d < s.rank; ++d) {
    const auto v = E::static_extent(std::size_t(d));
    s.static_ext[std::size_t(d)] = v == fusor::dyn ? -1 : std::int64_t(v);
  }
  return s;
}

template <class E>
E to_extents(const view_layout& l) {
  cuda::std::array<fusor::index_t, E::rank()> a{};
  for (std::size_t d = 0; d < E::rank(); ++d) a[d] = l.shape[d];
  return E(a);
}
template <int R>
fusor::shape<R> to_strides(const view_layout& l) {
  fusor::shape<R> s{};
  for (int d = 0; d < R; ++d) s[std::size_t(d)] = l.strides[std::size_t(d)];
  return s;
}

template <class In>
auto make_input(draw& d, int i) {
  using T = typename In::type;
  using E = typename In::extents;
  return fusor::host_view(static_cast<T*>(data_of(d, d.in[i])), to_extents<E>(d.in[i]),
                          to_strides<int(E::rank())>(d.in[i]));
}

/// Output element type of a root: its own type when integral (so no float ->
/// int conversion happens on store), the case's output type otherwise.
template <class E, class Out>
using out_t = std::conditional_t<std::is_integral_v<fusor::value_t<E>>, fusor::value_t<E>, Out>;

template <class E>
auto roots_of(const E& e) {
  if constexpr (requires { e.exprs; }) return e.exprs;
  else return std::tuple<E>(e);
}

template <class T, int R>
auto make_output(draw& d, const view_layout& l) {
  return fusor::host_view(static_cast<T*>(data_of(d, l)), to_extents<fusor::dextents<R>>(l), to_strides<R>(l));
}

template <class E, class Outs, class Ex>
void execute(draw& d, const E& e, const Outs& outs, const std::vector<view_layout>& layouts, const Ex& ex,
             run_outcome& r) {
  restore(d);
  try {
    if constexpr (requires { e.exprs; }) {
      r.kernels = std::apply([&](const auto&... o) { return fusor::run(fusor::outputs(o...), e, ex); }, outs).kernels;
    } else {
      r.kernels = fusor::run(std::get<0>(outs), e, ex).kernels;
    }
  } catch (const std::exception& x) {
    r.error = x.what();
  }
  collect(d, layouts, r);
}

/// One draw of one case (registered as a fz::case_fn).
template <class Cfg, class Fn>
bool run_draw(std::uint64_t seed, int case_id, const char* info, const options& o) {
  draw d(seed, case_id, info);
  d.spec[0] = spec_of<typename Cfg::in0>();
  d.spec[1] = spec_of<typename Cfg::in1>();
  d.spec[2] = spec_of<typename Cfg::in2>();
  plan_inputs(d, o);
  const auto a = make_input<typename Cfg::in0>(d, 0);
  const auto b = make_input<typename Cfg::in1>(d, 1);
  const auto c = make_input<typename Cfg::in2>(d, 2);
  const auto e = Fn{}(a, b, c);
  const auto roots = roots_of(e);
  constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(roots)>>;

  std::vector<dt> types;
  std::vector<std::vector<std::int64_t>> shapes;
  try {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (types.push_back(dt_of<out_t<std::tuple_element_t<I, std::remove_cvref_t<decltype(roots)>>,
                                   std::tuple_element_t<I, typename Cfg::outs>>>()),
       ...);
    }(std::make_index_sequence<n>{});
    std::apply([&](const auto&... x) {
      auto one = [&](const auto& y) {
        const auto s = fusor::shape_of(y);
        shapes.emplace_back(s.begin(), s.begin() + fusor::rank_v<decltype(y)>);
      };
      (one(x), ...);
    }, roots);
  } catch (const std::exception& x) {
    run_outcome f, u;
    f.error = u.error = std::string("shape_of: ") + x.what();
    return judge(d, f, u, fusor::describe(e), o);
  }
  // fusor allows an output to alias an input (in place) only when one kernel
  // writes every output: true for one root, and for siblings the host plan fuses.
  using host_plan = decltype(fusor::plan<fusor::host_policy>(fusor::canonicalize(e)));
  constexpr bool one_kernel = n == 1 || requires(const host_plan& p) { p.exprs; };
  plan_outputs(d, types, shapes, one_kernel, o);
  const auto views = [&]<std::size_t... I>(const std::vector<view_layout>& l, std::index_sequence<I...>) {
    using R = std::remove_cvref_t<decltype(roots)>;
    return std::make_tuple(make_output<out_t<std::tuple_element_t<I, R>, std::tuple_element_t<I, typename Cfg::outs>>,
                                       fusor::rank_v<std::tuple_element_t<I, R>>>(d, l[I])...);
  };
  const auto outs = views(d.out, std::make_index_sequence<n>{});
  const auto outs_ref = views(d.out_ref, std::make_index_sequence<n>{});

  run_outcome fused, unfused;
  execute(d, e, outs, d.out, fusor::host(), fused);
  execute(d, e, outs_ref, d.out_ref, fusor::unfused(), unfused);
  return judge(d, fused, unfused, fusor::describe(e), o);
}

}  // namespace fz
