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
#include <vector>

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
  for (int d = 0; d < int(E::rank()); ++d) a[std::size_t(d)] = l.shape[std::size_t(d)];  // (int: rank 0 warns with nvcc)
  return E(a);
}
template <int R>
fusor::shape<R> to_strides(const view_layout& l) {
  fusor::shape<R> s{};
  for (int d = 0; d < R; ++d) s[std::size_t(d)] = l.strides[std::size_t(d)];
  return s;
}

/// View of input type In at `data` with layout l, in memory space Space
/// (fusor::host_space, or fusor::device_space for fuzz_gpu's device mirror).
template <class In, class Space = fusor::host_space>
auto make_input_at(void* data, const view_layout& l) {
  using T = typename In::type;
  using E = typename In::extents;
  return fusor::make_view<Space>(static_cast<T*>(data), to_extents<E>(l), to_strides<int(E::rank())>(l));
}
template <class In>
auto make_input(draw& d, int i) {
  return make_input_at<In>(data_of(d, d.in[std::size_t(i)]), d.in[std::size_t(i)]);
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

template <class T, int R, class Space = fusor::host_space>
auto make_output_at(void* data, const view_layout& l) {
  return fusor::make_view<Space>(static_cast<T*>(data), to_extents<fusor::dextents<R>>(l), to_strides<R>(l));
}
template <class T, int R>
auto make_output(draw& d, const view_layout& l) {
  return make_output_at<T, R>(data_of(d, l), l);
}

/// The roots' output views (types from the case's Cfg) at the layouts `l`;
/// `data(layout)` gives each one's data pointer (host or device).
template <class Cfg, class Roots, class Space = fusor::host_space, class Data>
auto make_outputs(const std::vector<view_layout>& l, Data&& data) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(make_output_at<out_t<std::tuple_element_t<I, Roots>, std::tuple_element_t<I, typename Cfg::outs>>,
                                          fusor::rank_v<std::tuple_element_t<I, Roots>>, Space>(data(l[I]), l[I])...);
  }(std::make_index_sequence<std::tuple_size_v<Roots>>{});
}

/// Output element types of the roots (dt), in order.
template <class Cfg, class Roots>
std::vector<dt> output_types() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::vector<dt>{
        dt_of<out_t<std::tuple_element_t<I, Roots>, std::tuple_element_t<I, typename Cfg::outs>>>()...};
  }(std::make_index_sequence<std::tuple_size_v<Roots>>{});
}

/// Shapes of the roots (throws what fusor::shape_of throws).
template <class Roots>
std::vector<std::vector<std::int64_t>> output_shapes(const Roots& roots) {
  std::vector<std::vector<std::int64_t>> shapes;
  std::apply([&](const auto&... x) {
    auto one = [&](const auto& y) {
      const auto s = fusor::shape_of(y);
      shapes.emplace_back(s.begin(), s.begin() + fusor::rank_v<decltype(y)>);
    };
    (one(x), ...);
  }, roots);
  return shapes;
}

/// True when plan P (of policy Policy) writes every output of E from one
/// kernel: fusor then allows an output to alias an input (in place).
template <class Policy, class E>
constexpr bool one_kernel() {
  constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(roots_of(std::declval<const E&>()))>>;
  using P = decltype(fusor::plan<Policy>(fusor::canonicalize(std::declval<const E&>())));
  return n == 1 || requires(const P& p) { p.exprs; };
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
    // Planned == launched (issue 16): the kernels of the plan's branches for
    // these tensors, plus the weights a first run prepares (folded BN).
    const fusor::planned_kernels k = fusor::kernels_planned<typename Ex::policy>(e);
    if (r.kernels < k.per_run || r.kernels > k.per_run + k.prepared)
      r.error = "run launched " + std::to_string(r.kernels) + " kernels, the plan lists " + std::to_string(k.per_run) +
                " (+ " + std::to_string(k.prepared) + " preparing weights)";
  } catch (const std::exception& x) {
    r.error = x.what();
  }
  collect(d, layouts, r);
}

/// One draw of one case (registered as a fz::case_fn).
template <class Cfg, class Fn>
bool run_draw(std::uint64_t seed, const case_entry& c, const options& o) {
  draw d(seed, c.id, c.info);
  d.spec[0] = spec_of<typename Cfg::in0>();
  d.spec[1] = spec_of<typename Cfg::in1>();
  d.spec[2] = spec_of<typename Cfg::in2>();
  plan_inputs(d, o);
  const auto a = make_input<typename Cfg::in0>(d, 0);
  const auto b = make_input<typename Cfg::in1>(d, 1);
  const auto c3 = make_input<typename Cfg::in2>(d, 2);
  const auto e = Fn{}(a, b, c3);
  const auto roots = roots_of(e);
  using R = std::remove_cvref_t<decltype(roots)>;

  std::vector<dt> types = output_types<Cfg, R>();
  std::vector<std::vector<std::int64_t>> shapes;
  try {
    shapes = output_shapes(roots);
  } catch (const std::exception& x) {
    run_outcome f, u;
    f.error = u.error = std::string("shape_of: ") + x.what();
    return judge(d, f, u, fusor::describe(e), o);
  }
  // fusor allows an output to alias an input (in place) only when one kernel
  // writes every output: true for one root, and for siblings the host plan fuses.
  plan_outputs(d, types, shapes, one_kernel<fusor::host_policy, std::remove_cvref_t<decltype(e)>>(), o);
  const auto host_data = [&](const view_layout& l) { return data_of(d, l); };
  const auto outs = make_outputs<Cfg, R>(d.out, host_data);
  const auto outs_ref = make_outputs<Cfg, R>(d.out_ref, host_data);

  run_outcome fused, unfused;
  execute(d, e, outs, d.out, fusor::host(), fused);
  execute(d, e, outs_ref, d.out_ref, fusor::unfused(), unfused);
  return judge(d, fused, unfused, fusor::describe(e), o);
}

/// fuzz_gpu's reference (a fz::reference_fn): host() on a draw that fuzz_gpu
/// planned (plan_inputs, plan_outputs), into d.out.
template <class Cfg, class Fn>
void host_reference(draw& d, run_outcome& r) {
  const auto e = Fn{}(make_input<typename Cfg::in0>(d, 0), make_input<typename Cfg::in1>(d, 1),
                      make_input<typename Cfg::in2>(d, 2));
  using R = std::remove_cvref_t<decltype(roots_of(e))>;
  const auto outs = make_outputs<Cfg, R>(d.out, [&](const view_layout& l) { return data_of(d, l); });
  execute(d, e, outs, d.out, fusor::host(), r);
}

/// Whether host() writes every output of case (Cfg, Fn) from one kernel.
template <class Cfg, class Fn>
constexpr bool host_one_kernel() {
  using E = decltype(Fn{}(std::declval<decltype(make_input<typename Cfg::in0>(std::declval<draw&>(), 0))>(),
                          std::declval<decltype(make_input<typename Cfg::in1>(std::declval<draw&>(), 1))>(),
                          std::declval<decltype(make_input<typename Cfg::in2>(std::declval<draw&>(), 2))>()));
  return one_kernel<fusor::host_policy, std::remove_cvref_t<E>>();
}

}  // namespace fz
