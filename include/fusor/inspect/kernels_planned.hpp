#pragma once
/// @file inspect/kernels_planned.hpp
/// kernels_planned<Policy>(e): how many kernels run(out, e, ex) launches for
/// e's tensors, from the plan and its launchers, without running anything
/// (the fuzz drivers and tests/host/test_planner_runtime.cpp check that run()
/// launches exactly these).
#include <fusor/cost/shaped_estimate.hpp>
#include <fusor/exec/run.hpp>

namespace fusor {

/// The kernels run(out, e, ex) launches for e's tensors on an executor
/// whose policy is Policy: `per_run` (the plan's kernels on the branches its
/// run-time checks and choices take, each as many launches as its rule says:
/// two for split rows, three for separate Q/K/V projections; kernel_count<E>
/// when nothing is decided at run time) and
/// `prepared`, the kernels that prepare cached weights
/// (folded batch norm), which only a run that does not find them in the
/// executor's cache adds. Throws what run's shape checks throw.
struct planned_kernels {
  std::size_t per_run = 0;
  std::size_t prepared = 0;
};
/// The same for plan p (planned under Policy; n prices run-time choices as
/// the executor does: the element count of the expression's first root).
template <class Policy, class P>
planned_kernels kernels_of_plan(const P& p, double n) {
  planned_kernels k;
  cost::for_each_kernel(Policy::model, n, p, [&](const auto& g) {
    using G = std::remove_cvref_t<decltype(g)>;
    constexpr std::size_t launches = std::size_t(rule_launches_v<group_rule_t<G>>);  // (split rows, separate Q/K/V)
    if constexpr (fusor::detail::is_cached_rule_v<group_rule_t<G>>) k.prepared += launches;
    else k.per_run += launches;
  });
  return k;
}

template <class Policy = fused_policy, class E>
  requires(expression<E> || is_siblings_v<E>)
planned_kernels kernels_planned(const E& e) {
  // Planned as run() plans it: a single expression as a one-root siblings set.
  const auto roots = [&] {
    if constexpr (is_siblings_v<E>) return e;
    else return siblings_expr<E>{{e}};
  }();
  const auto canonical = canonicalize(roots);
  const auto planned = plan<Policy>(canonical);
  return kernels_of_plan<Policy>(planned, double(element_count_of(std::get<0>(canonical.exprs))));
}

}  // namespace fusor
