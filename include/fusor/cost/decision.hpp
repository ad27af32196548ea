#pragma once
/// @file cost/decision.hpp
/// Fusion decisions and the reasons the planner gives for them.
///
/// - An elementwise producer with one consumer always fuses into it: that
///   removes a write and a read of the intermediate per element and a launch,
///   and never adds memory traffic (the same shortcut as XLA and TVM).
/// - A group whose register estimate exceeds the model's per-thread limit, or
///   whose kernel parameters exceed the parameter space, is split: its largest
///   operand subtree gets a kernel of its own (register_budget,
///   parameter_budget).
/// - A producer used several times inside one group (a provably identical
///   subexpression) is either recomputed by each use (fused) or computed once
///   into memory (materialized): the cost model decides by comparing both plans'
///   estimated times; with static extents at compile time, otherwise at run time
///   from the actual element count.
/// - fusor::materialize(e) and fusor::fuse(e) override all of the above.
#include <fusor/cost/estimate.hpp>

namespace fusor {

/// Why a group was split off from its consumer.
enum class reason {
  register_budget,          ///< the fused kernel would need too many registers per thread
  parameter_budget,         ///< the fused kernel's operands exceed the kernel parameter space
  materialize_shared,       ///< a shared producer is cheaper computed once than recomputed per use
  forced_materialize,       ///< the user wrote fusor::materialize(e)
  forced_contiguous,        ///< the user wrote fusor::contiguous(e)
  expensive_producer,       ///< a reduction/contraction feeding a consumer that reads each of its elements many times
  folded_weights,           ///< batch norm folded into conv weights/bias: computed once per weight set and cached
  broadcast_epilogue,       ///< the epilogue broadcasts the producer's result to a larger shape (a guarded plan's fallback)
  transposed_norm_prologue, ///< a norm prologue of gemm with trans_a: A's rows are not the GEMM's rows
  spatial_conv_prologue,    ///< a depthwise conv read by a non-1x1 conv would be recomputed kh * kw times per element
  producer_epilogue,        ///< elementwise ops on a reduction/contraction result: computed once, in its kernel
  shape_op_operand,         ///< a computed value read through a shape op (permute, squeeze, ...): written first
};

/// Text of a reason, as explain() prints it.
constexpr const char* to_string(reason r) {
  switch (r) {
    case reason::register_budget: return "register budget exceeded";
    case reason::parameter_budget: return "kernel parameter budget exceeded";
    case reason::materialize_shared: return "shared producer: computing it once is cheaper than recomputing it per use";
    case reason::forced_materialize: return "forced by fusor::materialize";
    case reason::forced_contiguous: return "forced by fusor::contiguous (a row-major temporary)";
    case reason::expensive_producer:
      return "expensive producer (reduction/contraction): recomputing it for every element that reads it would "
             "repeat the whole reduction per element";
    case reason::folded_weights:
      return "batch_norm folded into the conv's weights and bias (computed once per weight set, then cached by the "
             "executor)";
    case reason::broadcast_epilogue:
      return "the epilogue broadcasts this result to a larger shape, so it is computed first";
    case reason::transposed_norm_prologue:
      return "gemm with trans_a: the normalized rows of A are not the GEMM's rows, so A is normalized first";
    case reason::spatial_conv_prologue:
      return "read by a conv that is not 1x1, this conv would be recomputed kh * kw times per element, so it is "
             "computed first";
    case reason::producer_epilogue:
      return "elementwise ops on a reduction/contraction result: computed once at the producer's shape, in its "
             "kernel, not again for every element of a consumer that broadcasts them";
    case reason::shape_op_operand:
      return "read through a shape op (an index map over its temporary), so it is computed first";
  }
  return "?";
}

/// True when Rule's group rooted at Consumer should compute Producer inline
/// (before budgets and shared-producer decisions, which the planner applies to
/// the whole group).
template <class Rule, class Producer, class Consumer>
inline constexpr bool fuse_producer_v = Rule::template absorbs<Producer>;

/// True when root expressions E... may share one multi-output kernel: equal
/// static ranks (run-time extents are checked before launch).
template <class... E>
inline constexpr bool fuse_siblings_v = ((rank_v<E> == rank_v<std::tuple_element_t<0, std::tuple<E...>>>) && ...);

/// Whether a group computing E fits model m's register and parameter budgets.
template <class E>
constexpr bool within_register_budget(const device_model& m) {
  return cost::register_estimate(cost::group_stats<E>()) <= m.max_registers_per_thread;
}
template <class E>
constexpr bool within_parameter_budget(const device_model& m) {
  return cost::group_stats<E>().param_bytes <= m.kernel_param_bytes;
}

/// The outcome of comparing two plans on a model at n elements.
struct comparison {
  bool first_wins;
  double first_seconds, second_seconds;
};
/// Compares planned trees A (e.g. recompute) and B (e.g. materialize).
template <class A, class B>
constexpr comparison compare_plans(const device_model& m, double n) {
  const double a = cost::plan_estimate<A>(m, n).seconds, b = cost::plan_estimate<B>(m, n).seconds;
  return {a <= b, a, b};
}

}  // namespace fusor
