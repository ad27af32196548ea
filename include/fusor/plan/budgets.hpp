#pragma once
/// @file plan/budgets.hpp
/// Planning step 2: register and parameter budgets.
#include <fusor/plan/attention_projections.hpp>

namespace fusor::detail {

// Step 2: split the largest operand subtree while a budget is exceeded.
template <class X>
constexpr int largest_operand() {
  if constexpr (!is_node_v<X>) {
    return -1;
  } else {
    return []<class Op, class... A>(std::type_identity<node<Op, A...>>) {
      if constexpr (std::is_same_v<Op, op::fuse>) {
        return -1;  // the user forced this subtree into its consumer
      } else {
        int best = -1, size = 0, i = 0;
        ((node_count<A> > size && !is_fuse_hint_v<A> ? (best = i, size = node_count<A>) : 0, ++i), ...);
        return best;
      }
    }(std::type_identity<X>{});
  }
}

template <class Policy, class R, class X>
auto enforce_budgets(const group<R, X>& g) {
  constexpr bool regs_ok = within_register_budget<X>(Policy::model);
  constexpr bool params_ok = within_parameter_budget<X>(Policy::model);
  constexpr int cut = largest_operand<X>();
  if constexpr ((regs_ok && params_ok) || cut < 0) {
    return g;
  } else {
    constexpr reason why = regs_ok ? reason::parameter_budget : reason::register_budget;
    auto split = [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        const auto& k = fusor::get<K>(g.expr.args);
        if constexpr (int(K) == cut) {
          using Kid = std::remove_cvref_t<decltype(k)>;
          return enforce_budgets<Policy>(group<split_off<why, R>, Kid>{k});
        } else {
          return k;
        }
      };
      return make_node_unchecked(g.expr.op, one(std::integral_constant<std::size_t, I>{})...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(g.expr.args)>>{});
    return enforce_budgets<Policy>(group<R, decltype(split)>{split});
  }
}

}  // namespace fusor::detail
