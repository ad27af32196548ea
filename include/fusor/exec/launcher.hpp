#pragma once
/// @file exec/launcher.hpp
/// The seam between the generic run and the kernel families: one
/// `launcher<Family>` specialization per family (CUTLASS callbacks.hpp
/// style). A launcher receives a group's expression with its operand groups
/// already materialized as views, binds it to its family's kernel and
/// launches it; this is where a family chooses its engine (the GPU-engine
/// issues add engines here: a compile-time choice with a run-time guard,
/// named by explain). The generic run (exec/run.hpp) names no family.
///
/// Each launch function of a family counts the kernels it launches
/// (count_launches, exec/run_state.hpp), also when the group has no elements,
/// so that run_result::kernels equals the plan's kernel count.
///
/// A launcher has
///   static constexpr bool rehearses;   // runs in the rehearsal pass (allocates, launches nothing)
///   template <class Ex, class G, class E, class Outs>
///   static void run(const Ex&, const G& group, const E& e, const Outs& outs);
///   // multi-output kernels (horizontal fusion), where the family has them:
///   template <class Ex, class G, class Xs, class Outs>
///   static void run_siblings(const Ex&, const G& sibling_group, const Xs& exprs, const Outs& outs);
///   // optional: kernels run() launches for group g when that is not 1
///   // (a decision the plan does not hold yet; kernels_planned asks it):
///   static std::size_t launches(const G& g);
#include <fusor/exec/bind.hpp>
#include <fusor/exec/cuda_backend.hpp>
#include <fusor/exec/host_backend.hpp>

namespace fusor::exec {

/// The launcher of a user's kernel family (docs/extending.md): the family's
/// own `static void run(ex, e, outs)`, called in the real pass only and
/// counted as one kernel. A family without one is a compile error here.
template <class Family>
struct launcher {
  static constexpr bool rehearses = false;
  template <class Ex, class G, class E, class Outs>
  static void run(const Ex& ex, const G&, const E& e, const Outs& outs) {
    if constexpr (requires { Family::run(ex, e, outs); }) {
      Family::run(ex, e, outs);
      count_launches(ex);
    } else {
      static_assert(diagnostic::always_false<Family>,
                    "fusor: run: this kernel family has no launcher: give it `template <class Ex, class E, class Outs> "
                    "static void run(const Ex&, const E&, const Outs&)` (docs/extending.md)");
    }
  }
  template <class Ex, class G, class Xs, class Outs>
  static void run_siblings(const Ex&, const G&, const Xs&, const Outs&) {
    static_assert(diagnostic::always_false<Family>, "fusor: run: this kernel family has no multi-output kernels");
  }
};

/// The elementwise family (kernels/elementwise.hpp): one kernel evaluating
/// the whole group's expression per output element; siblings of one shape
/// share one multi-output kernel.
template <>
struct launcher<kernel_family::elementwise> {
  static constexpr bool rehearses = false;  // (nothing to allocate: skips building the kernel and its name)
  template <class Ex, class G, class E, class Outs>
  static void run(const Ex& ex, const G& g, const E& e, const Outs& outs) {
    const auto k = make_elementwise_kernel<rank_v<E>>(shape_of(e), outs, e);
    launch(ex, k, describe(g));
  }
  template <class Ex, class G, class... X, class Outs>
  static void run_siblings(const Ex& ex, const G& g, const std::tuple<X...>& xs, const Outs& outs) {
    using X0 = std::tuple_element_t<0, std::tuple<X...>>;
    const auto s = shape_of(std::get<0>(xs));
    std::apply([&](const auto&... x) {
      const auto k = make_elementwise_kernel<rank_v<X0>>(s, outs, x...);
      launch(ex, k, describe(g));
    }, xs);
  }
};

}  // namespace fusor::exec
