#pragma once
/// @file inspect/kernels_planned.hpp
/// kernels_planned<Policy>(e): how many kernels run(out, e, ex) launches for
/// e's tensors, from the plan and its rules' launch counts, without running anything
/// (the fuzz drivers and tests/host/test_planner_runtime.cpp check that run()
/// launches exactly these).
#include <fusor/cost/shaped_estimate.hpp>
#include <fusor/exec/run.hpp>

namespace fusor {

/// The kernels run(out, e, ex) launches for e's tensors on an executor
/// whose policy is Policy (planned_kernels, cost/shaped_estimate.hpp: the
/// plan's kernels on the branches its run-time checks and choices take,
/// each as many launches as its rule says; kernel_count<E> when nothing is
/// decided at run time; the kernels preparing cached weights apart).
/// One exception: a shape op over a computed value at e's root lists its
/// copy kernel, which run skips when the output's strides allow writing the
/// value through the inverse view (exec/root_view_map.hpp): then run
/// launches one kernel fewer.
/// Throws what run's shape checks throw.
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
