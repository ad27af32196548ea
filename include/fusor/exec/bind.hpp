#pragma once
/// @file exec/bind.hpp
/// Binding: turns one fusion group's expression (views, scalars, constants,
/// nodes) into the plain kernel structs of kernels/elementwise.hpp. Views
/// become numbered sources; a view carrying an identity tag is one source
/// however often it appears, so the kernel loads it once per element.
#include <fusor/core/error.hpp>
#include <fusor/kernels/contraction.hpp>
#include <fusor/kernels/elementwise.hpp>
#include <fusor/plan/describe.hpp>
#include <fusor/plan/plan.hpp>

#include <tuple>
#include <utility>

namespace fusor::exec {

namespace detail {
template <class Id, class Slots, std::size_t K = 0>
constexpr int slot_of_id() {
  if constexpr (std::is_void_v<Id> || K == std::tuple_size_v<Slots>) {
    return -1;
  } else if constexpr (std::is_same_v<typename std::tuple_element_t<K, Slots>::id, Id>) {
    return int(K);
  } else {
    return slot_of_id<Id, Slots, K + 1>();
  }
}

template <class A, class B>
bool same_view(const A& a, const B& b) {
  if constexpr (A::rank != B::rank) {
    return false;
  } else {
    return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.shape() == b.shape() &&
           a.strides() == b.strides();
  }
}
}  // namespace detail

/// Result of lowering: a kernel expression tree and the sources it reads.
template <class Tree, class Slots>
struct lowered {
  Tree tree;
  Slots slots;
};

template <class Slots, class Op, class... A>
auto lower_node(const node<Op, A...>& n, const Slots& slots);
template <class Op, class... A, class Slots, class... Trees>
auto lowered_node(const node<Op, A...>& n, const Slots& slots, const Trees&... trees);

/// Lowers expression e, appending the views it reads to `slots` (a std::tuple
/// of views). Throws argument_error when two different views carry the same
/// identity tag.
template <class Slots, class E>
auto lower(const E& e, const Slots& slots) {
  if constexpr (is_view_v<E>) {
    constexpr int k = detail::slot_of_id<typename E::id, Slots>();
    if constexpr (k >= 0) {
      if (!detail::same_view(std::get<k>(slots), e))
        throw argument_error("fusor: run: two different tensors carry the same identity tag (with_id<Tag>); "
                             "a tag must name exactly one tensor");
      return lowered<kernels::k_input<k>, Slots>{{}, slots};
    } else {
      return lowered<kernels::k_input<int(std::tuple_size_v<Slots>)>, decltype(std::tuple_cat(slots, std::tuple<E>(e)))>{
          {}, std::tuple_cat(slots, std::tuple<E>(e))};
    }
  } else if constexpr (is_transpose_leaf_v<E>) {
    return lower(transposed_view(fusor::get<0>(e.args)), slots);
  } else if constexpr (requires { E::is_accumulator; }) {
    return lowered<kernels::k_acc, Slots>{{}, slots};  // the contraction's value (kernels/contraction.hpp)
  } else if constexpr (requires { E::is_channel_leaf; }) {
    constexpr int k = int(std::tuple_size_v<Slots>);
    return lowered<kernels::k_input<k>, decltype(std::tuple_cat(slots, std::tuple<E>(e)))>{
        {}, std::tuple_cat(slots, std::tuple<E>(e))};
  } else if constexpr (is_scalar_v<E>) {
    return lowered<kernels::k_scalar<value_t<E>>, Slots>{{e.value}, slots};
  } else if constexpr (is_constant_v<E>) {
    return lowered<kernels::k_scalar<value_t<E>>, Slots>{{value_t<E>(E::value)}, slots};
  } else {
    static_assert(is_node_v<E>, "fusor: lower: not an expression");
    static_assert(!is_view_map_node_v<E>, "fusor: internal: lower: a shape op over a computed value reached a kernel "
                                           "(exec/materialize.hpp turns it into a view first)");
    // Unary and binary nodes lower their operands here, not through
    // lower_node's stepping lambda: one nested instantiation per expression
    // level instead of three (nvcc's front end stops at about 256 nested
    // instantiations of functions with deduced return types; a 96-op chain
    // did not compile, docs/compile_time.md).
    constexpr std::size_t arity = std::tuple_size_v<std::remove_cvref_t<decltype(e.args)>>;
    if constexpr (arity == 1) {
      auto l0 = lower(fusor::get<0>(e.args), slots);
      return lowered_node(e, l0.slots, l0.tree);
    } else if constexpr (arity == 2) {
      auto l0 = lower(fusor::get<0>(e.args), slots);
      auto l1 = lower(fusor::get<1>(e.args), l0.slots);
      return lowered_node(e, l1.slots, l0.tree, l1.tree);
    } else {
      return lower_node(e, slots);
    }
  }
}

/// batch_norm lowered to the primitive ops its functor applies, in its
/// order and types (so the same bits): (x - mean) * (gamma / sqrt(var +
/// eps)) + beta. Its per-channel part, gamma / sqrt(var + eps), is then a
/// subtree of its own that the host evaluates once per run along W
/// (exec/run_invariant.hpp) instead of per element.
template <class... A, class Slots, class X, class G, class B, class M, class V>
auto lowered_batch_norm(const node<op::batch_norm, A...>& n, const Slots& slots, const X& x, const G& gamma,
                        const B& beta, const M& mean, const V& var) {
  using T = value_t<node<op::batch_norm, A...>>;
  static_assert(std::is_same_v<typename op::batch_norm::template operand_types<A...>, type_list<T, T, T, T, T>>);
  using TT = type_list<T, T>;
  using Eps = kernels::k_scalar<T>;
  using Shifted = kernels::k_node<op::add, T, TT, V, Eps>;
  using Std = kernels::k_node<op::sqrt, T, type_list<T>, Shifted>;
  using Scale = kernels::k_node<op::div, T, TT, G, Std>;
  using Centered = kernels::k_node<op::sub, T, TT, X, M>;
  using Scaled = kernels::k_node<op::mul, T, TT, Centered, Scale>;
  using Tree = kernels::k_node<op::add, T, TT, Scaled, B>;
  const Std std_dev{{}, fusor::make_tuple(Shifted{{}, fusor::make_tuple(var, Eps{T(n.op.eps)})})};
  const Scale scale{{}, fusor::make_tuple(gamma, std_dev)};
  const Scaled scaled{{}, fusor::make_tuple(Centered{{}, fusor::make_tuple(x, mean)}, scale)};
  return lowered<Tree, Slots>{Tree{{}, fusor::make_tuple(scaled, beta)}, slots};
}

/// The lowered form of node n whose operands lowered to `trees` over `slots`.
template <class Op, class... A, class Slots, class... Trees>
auto lowered_node(const node<Op, A...>& n, const Slots& slots, const Trees&... trees) {
  if constexpr (std::is_same_v<Op, op::batch_norm>) {
    return lowered_batch_norm(n, slots, trees...);
  } else {
    using Tree = kernels::k_node<Op, value_t<node<Op, A...>>, typename Op::template operand_types<A...>, Trees...>;
    return lowered<Tree, Slots>{Tree{n.op, {trees...}}, slots};
  }
}

template <class Slots, class Op, class... A>
auto lower_node(const node<Op, A...>& n, const Slots& slots) {
  // Operands are lowered left to right, each seeing the slots of those before it.
  auto step = [&]<std::size_t I>(auto self, std::integral_constant<std::size_t, I>, const auto& s, auto... trees) {
    if constexpr (I == sizeof...(A)) {
      return lowered_node(n, std::remove_cvref_t<decltype(s)>(s), trees...);
    } else {
      auto l = lower(fusor::get<I>(n.args), s);
      return self(self, std::integral_constant<std::size_t, I + 1>{}, l.slots, trees..., l.tree);
    }
  };
  return step(step, std::integral_constant<std::size_t, 0>{}, slots);
}

/// Lowers several roots over one shared source list.
template <class Slots, class... E>
auto lower_all(const Slots& slots, const E&... e);
template <class Slots>
auto lower_all(const Slots& slots) {
  return lowered<fusor::tuple<>, Slots>{{}, slots};
}
template <class Slots, class E, class... Rest>
auto lower_all(const Slots& slots, const E& e, const Rest&... rest) {
  auto first = lower(e, slots);
  auto others = lower_all(first.slots, rest...);
  auto trees = fusor::apply([&](const auto&... t) { return fusor::make_tuple(first.tree, t...); }, others.tree);
  return lowered<decltype(trees), decltype(others.slots)>{trees, others.slots};
}

/// Is view V constant along the last dim of a rank-R output whatever the run
/// time extents: rank 0, or a static 1 as its last extent (broadcast_strides
/// gives it stride 0 there)?
template <int R, class V>
inline constexpr bool run_invariant_view_v = [] {
  if constexpr (V::rank == 0) return true;
  else return R > 0 && V::extents_type::static_extent(V::rank - 1) == 1;
}();

/// Is view V constant along every dim of a rank-R output but the last: rank
/// 0 or 1, or static 1s before its last extent?
template <int R, class V>
inline constexpr bool row_invariant_view_v = [] {
  bool ones = true;
  for (int d = 0; d + 1 < int(V::rank); ++d) ones = ones && V::extents_type::static_extent(d) == 1;
  return ones;
}();

/// A kernel source for view v read at each index of an output of rank R.
template <int R, class V>
auto make_source(const V& v) {
  return kernels::k_source<typename V::value_type, R>{v.data(), broadcast_strides<R, V::rank>(v.shape(), v.strides())};
}
/// make_source for an elementwise kernel: the source type also says whether
/// the host may hoist what reads it out of its loops (k_source's
/// RunInvariant, RowInvariant). Only elementwise kernels carry the flags:
/// the row and contraction families reshape their sources' dims.
template <int R, class V>
auto make_elementwise_source(const V& v) {
  const auto s = make_source<R>(v);
  if constexpr (requires { V::rank; } && !requires { V::is_channel_leaf; }) {
    using S = kernels::k_source<typename decltype(s)::value_type, R, run_invariant_view_v<R, V>,
                                row_invariant_view_v<R, V>>;
    return S{s.data, s.stride};
  } else {
    return s;
  }
}
/// A per-channel leaf (conv2d's bias [Cout]) read at each index of a rank-R
/// output: stride on the channel axis only.
template <int R, class V>
  requires requires { V::is_channel_leaf; }
auto make_source(const V& c) {
  kernels::k_source<typename V::view_type::value_type, R> s{c.v.data(), {}};
  s.stride[c.axis] = c.v.extent(0) == 1 ? 0 : c.v.stride(0);
  return s;
}
/// A kernel sink for output view v.
template <int R, class V>
auto make_sink(const V& v) {
  static_assert(!std::is_const_v<typename V::element_type>, "fusor: run: an output view must not be const");
  return kernels::k_sink<typename V::value_type, R>{v.data(), broadcast_strides<R, V::rank>(v.shape(), v.strides())};
}

/// Builds the elementwise kernel for roots `exprs` written to `outs` (all of
/// rank R and shape `out_shape`) and picks its access path.
template <int R, class Outs, class... E>
auto make_elementwise_kernel(const shape<R>& out_shape, const Outs& outs, const E&... exprs) {
  auto l = lower_all(std::tuple<>{}, exprs...);
  auto sources = std::apply([](const auto&... v) { return fusor::make_tuple(make_elementwise_source<R>(v)...); }, l.slots);
  auto sinks = std::apply([](const auto&... v) { return fusor::make_tuple(make_sink<R>(v)...); }, outs);
  using K = kernels::elementwise_kernel<R, decltype(sources), decltype(l.tree), decltype(sinks)>;
  K k{sources, l.tree, sinks, {}, element_count<R>(out_shape), kernels::access::strided};
  for (int d = 0; d < R; ++d) k.extent[d] = out_shape[d];

  const auto dense = [&](const auto& v) { return v.shape() == out_shape && v.is_contiguous(); };
  bool contiguous = true, aligned = true;
  const auto visit = [&](const auto& v) {
    using T = typename std::remove_cvref_t<decltype(v)>::value_type;
    if constexpr (std::remove_cvref_t<decltype(v)>::rank != R) {
      contiguous = false;
    } else {
      contiguous = contiguous && dense(v);
    }
    aligned = aligned && reinterpret_cast<std::uintptr_t>(v.data()) % K::template vector_alignment<T> == 0;
  };
  std::apply([&](const auto&... v) { (visit(v), ...); }, l.slots);
  std::apply([&](const auto&... v) { (visit(v), ...); }, outs);
  k.path = !contiguous ? kernels::access::strided : (aligned ? kernels::access::vectorized : kernels::access::contiguous);
  return k;
}

/// what() of a buffer holding expression e of shape s, for allocation
/// errors: "run: temporary for softmax(f32[?, ?]) (f32[4, 8])".
template <int R, class E>
auto temporary_name(const char* role, const E& e, const shape<R>& s) {
  return [role, &e, s] {
    return std::string("run: ") + role + " for " + describe(e) + " (" + dtype_traits<value_t<E>>::name +
           to_string<R>(s) + ")";
  };
}

}  // namespace fusor::exec
