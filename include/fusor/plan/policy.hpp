#pragma once
/// @file plan/policy.hpp
/// Planning policies (rule list, horizontal fusion, device model) and the
/// split_off rule wrapper that records why a group was split from its consumer.
#include <fusor/cost/decision.hpp>

namespace fusor {

/// How to plan: a fusion rule list, whether siblings may share a kernel, and
/// the device model (a type with `static constexpr device_model model`).
template <class Rules, bool Horizontal, class Model = models::h100_sxm>
struct planning_policy {
  using rules = Rules;
  using model_type = Model;
  static constexpr bool horizontal = Horizontal;
  static constexpr const device_model& model = Model::model;
  /// Inference batch_norm directly after conv2d is folded into the conv's
  /// weights and bias (every policy but the unfused reference's).
  static constexpr bool fold_batch_norm = !std::is_same_v<Rules, unfused_rules>;
};
/// fusor's default: the built-in pattern library, horizontal fusion, H100.
using fused_policy = planning_policy<default_fusion_rules, true, models::h100_sxm>;
/// The default library planned for a generic host CPU (the host executor).
using host_policy = planning_policy<default_fusion_rules, true, models::generic_cpu>;
/// Every op its own kernel (the unfused executor).
using unfused_policy = planning_policy<unfused_rules, false, models::generic_cpu>;
/// fusor's default library with user rules tried first (each rule checked
/// against the rule interface, with a "fusor:" message when it does not fit).
template <class... UserRules>
  requires(diagnostic::check_fusion_rule<UserRules>::value && ...)
using with_rules =
    planning_policy<type_list<UserRules..., rule::attention, rule::contraction, rule::reduction, rule::elementwise_chain>,
                    true, models::h100_sxm>;
/// A policy planned for another device model.
template <class Policy, class Model>
using for_model = planning_policy<typename Policy::rules, Policy::horizontal, Model>;

/// A group split off from its consumer's group for `why`; behaves as Rule.
template <reason Why, class Rule>
struct split_off : Rule {
  static constexpr reason why = Why;
  /// Computed once per weight set and cached by the executor, so it is not
  /// counted among the kernels of a run (kernels_of_t, kernel_count).
  static constexpr bool cached = Why == reason::folded_weights;
};

namespace rule {
/// A ReduceX group whose rows the plan splits into chunks (few, very long
/// rows; plan_guard::whole_rows, kernels::row_chunks): its kernel runs twice,
/// partials per (row, chunk), then a finalize per row. Behaves as Rule.
template <class Rule>
struct split_rows : Rule {
  static constexpr int launches = 2;
  static constexpr bool rows_split = true;
  static constexpr const char* launch_note = "split rows: partials, then a finalize";
};
/// The sibling group of N projections (attention's Q/K/V, sibling linears)
/// whose inputs differ at run time (plan_guard::shared_projection_input): its
/// multi-output GEMM runs once per projection, each launch with one
/// non-empty part. Behaves as Rule.
template <class Rule, int N = 3>
struct separate_projections : Rule {
  static constexpr int launches = N;
  static constexpr bool projections_separate = true;
  static constexpr const char* launch_note = "one GEMM per projection";
};
}  // namespace rule

}  // namespace fusor
