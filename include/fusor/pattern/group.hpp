#pragma once
/// @file pattern/group.hpp
/// The kernels of a plan tree (pattern/plan_tree.hpp), in launch order, as a
/// type list: kernels_of_t, kernel_t. The planner counts them; the cost model
/// prices them.
#include <fusor/pattern/plan_tree.hpp>

namespace fusor {

/// A kernel's entry in kernels_of_t when its group is not provably identical
/// to another one (each occurrence is its own kernel).
template <class G, int K>
struct distinct_kernel {};

namespace detail {

// One specialization per plan kind; the primary is undefined, so a kind
// without one does not compile.
template <class P, class Acc, plan_kind K = plan_kind_v<P>>
struct collect_kernels;

template <class Acc, class... P>
struct collect_all {
  using type = Acc;
};
template <class Acc, class P, class... Rest>
struct collect_all<Acc, P, Rest...> {
  using type = typename collect_all<typename collect_kernels<P, Acc>::type, Rest...>::type;
};
template <class P, class Acc>
struct collect_kernels<P, Acc, plan_kind::view> {
  using type = Acc;
};
template <class P, class Acc>
struct collect_kernels<P, Acc, plan_kind::scalar> {
  using type = Acc;
};
template <class P, class Acc>
struct collect_kernels<P, Acc, plan_kind::constant> {
  using type = Acc;
};
template <class Op, class... A, class Acc>
struct collect_kernels<node<Op, A...>, Acc, plan_kind::node> {
  using type = typename collect_all<Acc, A...>::type;
};
template <class R>
inline constexpr bool is_cached_rule_v = [] {
  if constexpr (requires { R::cached; }) return R::cached;
  else return false;
}();
template <class R, class X, class Acc, bool Seen = statically_identical_v<group<R, X>> && list_contains<group<R, X>, Acc>>
struct collect_group {
  using inner = typename collect_kernels<X, Acc>::type;
  using key = std::conditional_t<statically_identical_v<group<R, X>>, group<R, X>,
                                 distinct_kernel<group<R, X>, list_length<inner>>>;
  using type = std::conditional_t<list_contains<key, inner>, inner, typename concat_lists<inner, type_list<key>>::type>;
};
/// A provably identical group seen before runs once per run (the executor
/// memoizes it), and so do the groups it reads.
template <class R, class X, class Acc>
struct collect_group<R, X, Acc, true> {
  using type = Acc;
};
template <class R, class X, class Acc>
struct collect_kernels<group<R, X>, Acc, plan_kind::group>
    : std::conditional_t<is_cached_rule_v<R>,
                         collect_kernels<X, Acc>,  // prepared once per weight set, not per run
                         collect_group<R, X, Acc>> {};
template <class R, class... X, class Acc>
struct collect_kernels<sibling_group<R, X...>, Acc, plan_kind::sibling_group> {
  using inner = typename collect_all<Acc, X...>::type;
  using type = typename concat_lists<inner, type_list<distinct_kernel<sibling_group<R, X...>, list_length<inner>>>>::type;
};
template <std::size_t I, class R, class... X, class Acc>
struct collect_kernels<sibling_output<I, sibling_group<R, X...>>, Acc, plan_kind::sibling_output> {
  // One kernel for all outputs of the set, listed where it is first read.
  using inner = typename collect_all<Acc, X...>::type;
  using key = sibling_group<R, X...>;
  using type = std::conditional_t<list_contains<key, inner>, inner, typename concat_lists<inner, type_list<key>>::type>;
};
/// A guarded plan lists its recognised form (what runs when the check holds).
template <class F, class S, class Acc>
struct collect_kernels<guarded_plan<F, S>, Acc, plan_kind::guarded> : collect_kernels<F, Acc> {};
/// A run-time choice has no static kernel list: its variants' lists differ
/// (group_count is -1; the executor counts the variant it runs).
template <class F, class S, class Acc>
struct collect_kernels<runtime_choice<F, S>, Acc, plan_kind::runtime_choice> {
  using type = Acc;
};
template <class... P, class Acc>
struct collect_kernels<plan_sequence<P...>, Acc, plan_kind::sequence> {
  using type = typename collect_all<Acc, P...>::type;
};
template <class... P, class Acc>
struct collect_kernels<siblings_expr<P...>, Acc, plan_kind::roots> {
  using type = typename collect_all<Acc, P...>::type;
};
}  // namespace detail

/// The kernels a planned tree launches, in launch order (producers first); a
/// provably identical group used several times is one kernel.
template <class P>
using kernels_of_t = typename detail::collect_kernels<std::remove_cvref_t<P>, type_list<>>::type;

/// The group type behind an entry of kernels_of_t.
template <class K>
struct kernel_group {
  using type = K;
};
template <class G, int N>
struct kernel_group<distinct_kernel<G, N>> {
  using type = G;
};

/// The I-th kernel (launch order) of planned tree P, as its group type.
template <std::size_t I, class P>
using kernel_t = typename kernel_group<type_at_t<I, kernels_of_t<P>>>::type;

}  // namespace fusor
