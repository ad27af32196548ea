#pragma once
/// @file exec/contraction_problem.hpp
/// Lowering of a contraction group's expression to the contraction family's
/// problem (kernels/parts/gemm_problems.hpp): the spine contraction, its
/// epilogue over the accumulator, A/B operands with their storage dtypes
/// (prologues: elementwise trees, a norm, a conv computed while loading),
/// conv geometry, and the aliasing and layout checks made before a launch.
#include <fusor/exec/epilogue.hpp>
#include <fusor/exec/reduction.hpp>
#include <fusor/exec/validate.hpp>

namespace fusor::exec {

namespace contraction_detail {

template <class E>
inline constexpr bool is_absent_v = std::is_same_v<E, constant<0.0>>;

/// The contraction node on E's epilogue spine.
template <class E>
const auto& spine_contraction(const E& e) {
  return epilogue_detail::spine_root<epilogue_detail::contraction_spine>(e);
}
/// E with its spine contraction replaced by `r`.
template <class E, class Rep>
auto replace_spine(const E& e, const Rep& r) {
  return epilogue_detail::replace_spine_root<epilogue_detail::contraction_spine>(e, r);
}

/// C's own epilogue over accumulator leaf `acc`: bias, alpha/beta.
template <class Acc, class Op, class... A>
auto own_epilogue(const node<Op, A...>& c, const Acc& acc) {
  if constexpr (std::is_same_v<Op, op::matmul>) {
    return acc;
  } else if constexpr (std::is_same_v<Op, op::linear>) {
    using B = std::remove_cvref_t<decltype(fusor::get<2>(c.args))>;
    if constexpr (is_absent_v<B>) return acc;
    else return make_node_unchecked(op::add{}, acc, fusor::get<2>(c.args));
  } else if constexpr (std::is_same_v<Op, op::gemm>) {
    auto scaled = make_node_unchecked(op::mul{}, acc, scalar<float>{c.op.alpha});
    using C = std::remove_cvref_t<decltype(fusor::get<2>(c.args))>;
    if constexpr (is_absent_v<C>) return scaled;
    else return make_node_unchecked(op::add{}, scaled, make_node_unchecked(op::mul{}, fusor::get<2>(c.args), scalar<float>{c.op.beta}));
  } else {
    static_assert(is_conv_op_v<Op>);
    using B = std::remove_cvref_t<decltype(fusor::get<2>(c.args))>;
    if constexpr (is_absent_v<B>) {
      return acc;
    } else if constexpr (is_view_v<B>) {
      static_assert(B::rank == 1, "fusor: conv2d: the bias must be a 1-D view [Cout]");
      return make_node_unchecked(op::add{}, acc,
                                 channel_leaf<B>{fusor::get<2>(c.args), c.op.p.layout == layout::nhwc ? 3 : 1});
    } else {
      static_assert(is_scalar_v<B> || is_constant_v<B>, "fusor: conv2d: the bias must be a 1-D view [Cout] or a scalar");
      return make_node_unchecked(op::add{}, acc, fusor::get<2>(c.args));
    }
  }
}

template <int R, class E>
auto make_epilogue(const E& e) {
  return epilogue_detail::make_epilogue<R>(e);
}

/// The storage dtype of operand expression E, as a framework would type it:
/// the stored type of its tensors when they all have the same one (scalars
/// and constants adapt: gelu(x_f16) * 0.5 is f16), `mixed_dtype` otherwise.
/// A 16-bit dtype on both GEMM operands selects the tensor-core path
/// (kernels/contraction.hpp: the loaded values are rounded to it).
struct any_dtype {};
struct mixed_dtype {};
template <class A, class B>
struct combine_dtype {
  using type = std::conditional_t<std::is_same_v<A, B>, A, mixed_dtype>;
};
template <class B>
struct combine_dtype<any_dtype, B> {
  using type = B;
};
template <class A>
struct combine_dtype<A, any_dtype> {
  using type = A;
};
template <>
struct combine_dtype<any_dtype, any_dtype> {
  using type = any_dtype;
};
template <class E>
struct storage_dtype {
  using type = mixed_dtype;  // anything else: no single storage type
};
template <class T, class X, class S, class I>
struct storage_dtype<tensor_view<T, X, S, I>> {
  using type = std::remove_cv_t<T>;
};
template <class T>
struct storage_dtype<scalar<T>> {
  using type = any_dtype;
};
template <auto V>
struct storage_dtype<constant<V>> {
  using type = any_dtype;
};
template <class Op, class... A>
struct storage_dtype<node<Op, A...>> {
  template <class... D>
  struct fold {
    using type = any_dtype;
  };
  template <class D0, class... D>
  struct fold<D0, D...> {
    using type = typename combine_dtype<D0, typename fold<D...>::type>::type;
  };
  using type = typename fold<typename storage_dtype<A>::type...>::type;
};
/// storage_dtype<E> when it is a dtype, else E's compute type.
template <class E>
using storage_t = std::conditional_t<std::is_same_v<typename storage_dtype<E>::type, any_dtype> ||
                                         std::is_same_v<typename storage_dtype<E>::type, mixed_dtype>,
                                     value_t<E>, typename storage_dtype<E>::type>;

/// An operand read as its elementwise tree, tagged with its storage dtype.
template <int R, class E>
auto make_plain(const E& e) {
  auto o = make_row_operand<R>(e);
  return kernels::plain_operand<decltype(o), storage_t<E>>{o};
}

/// Can the epilogue tree E (over its spine contraction) have a larger shape
/// than the contraction's result? Only through an operand other than a
/// scalar or constant, or a non-elementwise op: epilogues made of unary ops
/// and scalars (gelu(linear(...)), relu(conv2d(...)) * 2) cannot, and do not
/// instantiate the split-off path (one kernel entry per group).
template <class E>
inline constexpr bool may_broadcast_up_v = true;
template <class Op, class... A>
inline constexpr bool may_broadcast_up_v<node<Op, A...>> = [] {
  if constexpr (Op::kind == op_kind::contraction) {
    return false;
  } else if constexpr (Op::kind != op_kind::elementwise) {
    return true;
  } else {
    return ([] {
      if constexpr (spine_contractions_v<A> > 0) return may_broadcast_up_v<A>;
      else return !(is_scalar_v<A> || is_constant_v<A>);
    }() || ...);
  }
}();

/// An empty epilogue/sink for a conv computed inside another kernel's loads.
struct no_sink {
  using value_type = float;
  float* data = nullptr;
  cuda::std::array<index_t, 4> stride{};
};
struct no_epilogue {};

/// Throws shape_error when the batch_norm folded into conv2d `op` was over
/// another channel axis than the conv's layout (checked before any kernel).
inline void check_folded_batch_norm_layout(const op::conv2d& op) {
  const bool nhwc = op.p.layout == layout::nhwc;
  if (op.folded_bn_rank == 3 && nhwc)
    throw shape_error("fusor: conv2d: batch_norm over channel axis 1 (NCHW) follows an NHWC conv2d; pass the "
                      "channel axis: batch_norm<-1>(...)");
  if (op.folded_bn_rank == 1 && !nhwc)
    throw shape_error("fusor: conv2d: batch_norm over the last axis (NHWC) follows an NCHW conv2d; use batch_norm<1>");
}

/// Fills a conv_problem's geometry from the op and the operand shapes.
template <class P>
void setup_conv(P& p, const op::conv2d& op, const shape<4>& x, const shape<4>& w) {
  p.nhwc = op.p.layout == layout::nhwc;
  p.n = x[0];
  p.c = p.nhwc ? x[3] : x[1];
  p.h = p.nhwc ? x[1] : x[2];
  p.w = p.nhwc ? x[2] : x[3];
  p.cout = w[0];
  p.kh = w[2];
  p.kw = w[3];
  p.ho = op.out_extent(0, p.h, p.kh);
  p.wo = op.out_extent(1, p.w, p.kw);
  for (int d = 0; d < 2; ++d) {
    p.stride[d] = op.p.stride[d];
    p.pad[d] = op.p.padding[d];
    p.dilation[d] = op.p.dilation[d];
  }
  p.groups = op.p.groups;
  p.batches = p.groups;
  p.M = p.n * p.ho * p.wo;
  p.N = p.cout / p.groups;
  p.K = (p.c / p.groups) * p.kh * p.kw;
  check_folded_batch_norm_layout(op);
}

/// A conv2d node computed at each read index of a consumer's operand,
/// followed by the elementwise ops `outer` applies to it (outer is the
/// operand expression with the conv on its spine).
template <class Outer>
auto make_conv_operand(const Outer& outer) {
  const auto& c = spine_contraction(outer);
  using C = std::remove_cvref_t<decltype(c)>;
  using T = value_t<C>;
  auto ep = make_epilogue<4>(replace_spine(outer, own_epilogue(c, accumulator_leaf<T, 4>{})));
  auto a = make_plain<4>(fusor::get<0>(c.args));
  auto b = make_plain<4>(fusor::get<1>(c.args));
  kernels::conv_problem<decltype(a), decltype(b), no_epilogue, no_sink> p{a, b, {}, {}};
  setup_conv(p, c.op, shape_of(fusor::get<0>(c.args)), shape_of(fusor::get<1>(c.args)));
  return kernels::conv_operand<decltype(p), decltype(ep), value_t<Outer>, storage_t<Outer>>{p, ep};
}

/// Operand A of a GEMM-like contraction at rank R.
template <int R, class Op, class A>
auto make_a_operand(const A& a) {
  if constexpr (fusor::detail::is_norm_node_v<A>) {
    using NormOp = typename A::op_type;
    constexpr bool rms = std::is_same_v<NormOp, op::rms_norm>;
    auto x = make_row_operand<R>(fusor::get<0>(a.args));
    auto g = make_row_operand<R>(fusor::get<1>(a.args));
    auto b = [&] {
      if constexpr (rms) return g;
      else return make_row_operand<R>(fusor::get<2>(a.args));
    }();
    const bool has_beta = [&] {
      if constexpr (rms) return false;
      else return a.op.has_beta;
    }();
    return kernels::norm_operand<rms, value_t<A>, decltype(x), decltype(g), decltype(b), storage_t<A>>{
        x, g, b, a.op.eps, a.op.has_gamma, has_beta};
  } else {
    return make_plain<R>(a);
  }
}

/// Throws argument_error when output view o overlaps a view that the
/// contraction reads through its operands (other tiles would read what one
/// already wrote); the epilogue's operands may alias the output exactly.
template <std::size_t Operands = 2, class O, class C>
void check_operand_aliasing(const O& o, const C& c) {
  const byte_range r = range_of(o);
  auto check = [&](const auto& operand, int which) {
    detail::for_each_view(operand, [&](const auto& v, const char* op, int i) {
      const byte_range in = range_of(v);
      if (r.lo < in.hi && in.lo < r.hi)
        throw argument_error(std::string("fusor: run: the output overlaps ") + operand_name("input", i, op, v) +
                             ", read by operand " + std::to_string(which) + " of " + C::op_type::name +
                             "; a tiled contraction cannot run in place (write to another buffer)");
    });
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (check(fusor::get<I>(c.args), int(I)), ...);
  }(std::make_index_sequence<Operands>{});
}

/// The gemm_problem of a matmul/linear/gemm group expression e (spine
/// contraction with a plain or norm A operand) writing output view o.
template <class E, class O>
auto make_gemm_problem(const E& e, const O& o) {
  const auto& c = spine_contraction(e);
  using C = std::remove_cvref_t<decltype(c)>;
  using Op = typename C::op_type;
  using T = value_t<C>;
  constexpr int RO = rank_v<E>;
  auto ep = make_epilogue<RO>(replace_spine(e, own_epilogue(c, accumulator_leaf<T, RO>{})));
  auto sink = make_sink<RO>(o);
  // matmul: NB = RO - 2 batch dims; linear: NB = 0 (leading dims are M); gemm: rank 2.
  constexpr int NB = std::is_same_v<Op, op::matmul> ? RO - 2 : 0;
  const auto& a_expr = fusor::get<0>(c.args);
  const auto& b_expr = fusor::get<1>(c.args);
  auto a = make_a_operand<RO, Op>(a_expr);
  auto b = make_plain<NB + 2>(b_expr);
  kernels::gemm_problem<RO, NB, decltype(a), decltype(b), decltype(ep), decltype(sink)> p{a, b, ep, sink, {}};
  const auto out = shape_of(c);
  for (int d = 0; d < RO; ++d) p.out_extent[d] = out[d];
  p.batches = 1;
  for (int d = 0; d < NB; ++d) p.batches *= out[d];
  p.M = 1;
  for (int d = NB; d < RO - 1; ++d) p.M *= out[d];
  p.N = out[RO - 1];
  const auto as = shape_of(a_expr);
  constexpr int RA = rank_v<decltype(a_expr)>;
  if constexpr (std::is_same_v<Op, op::gemm>) {
    p.trans_a = c.op.trans_a;
    p.trans_b = c.op.trans_b;
    p.K = c.op.trans_a ? as[0] : as[1];
  } else {
    p.K = as[RA - 1];
    p.trans_b = std::is_same_v<Op, op::linear>;
  }
  p.norm_len = p.K;
  if constexpr (fusor::detail::is_norm_node_v<std::remove_cvref_t<decltype(a_expr)>>) {
    // The normalized dims (trailing, from the norm's axis) in the rank-RO
    // index, with A's own extents (1 on a broadcast batch dim of matmul).
    // (gemm with trans_a never gets here: run_contraction normalizes first.)
    const auto m = a_expr.op.template mask<RA>();
    int first = RA - 1;
    while (first > 0 && m[first - 1]) --first;
    p.norm_first = RO - RA + first;
    p.norm_len = 1;
    for (int d = first; d < RA; ++d) {
      p.norm_extent[RO - RA + d] = as[d];
      p.norm_len *= as[d];
    }
  }
  return p;
}

}  // namespace contraction_detail

}  // namespace fusor::exec
