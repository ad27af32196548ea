// Compile-time plans of contractions (matmul, linear, gemm, conv2d): kernel
// counts, matched rules, batch-norm folding, prologue/epilogue patterns,
// second-contraction splits and static extents; plus one host run of the
// folded Conv-BN pattern (prepared-weights cache) for docs/contractions.md.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <vector>

using namespace fusor;

namespace {
using M = tensor_view<float, dextents<2>>;    // [rows, K] activations, [N, K] weights
using T3 = tensor_view<float, dextents<3>>;   // [batch, seq, d]
using V = tensor_view<float, dextents<1>>;    // bias, norm and batch-norm parameters
using I4 = tensor_view<float, dextents<4>>;   // NCHW images, OIHW conv weights
const M& x = *static_cast<const M*>(nullptr);  // only used in decltype
const M& W = *static_cast<const M*>(nullptr);
const T3& q = *static_cast<const T3*>(nullptr);
const V& b = *static_cast<const V*>(nullptr);
const I4& img = *static_cast<const I4*>(nullptr);
const I4& w = *static_cast<const I4*>(nullptr);
using bn_t = batch_norm_params<V, V, V, V>;
const bn_t& bn = *static_cast<const bn_t*>(nullptr);

struct Shared;  // identity tag: views with it are provably the same tensor
using xs_t = tensor_view<float, dextents<4>, host_space, Shared>;
using ws_t = tensor_view<float, dextents<4>, host_space, Shared>;
using bs_t = tensor_view<float, dextents<1>, host_space, Shared>;
const xs_t& img_s = *static_cast<const xs_t*>(nullptr);
const ws_t& w_s = *static_cast<const ws_t*>(nullptr);
const bs_t& b_s = *static_cast<const bs_t*>(nullptr);

// --- plan inspection helpers -------------------------------------------------

/// Does planned tree P contain a node of op Op (outside or inside groups)?
template <class Op, class P>
inline constexpr bool has_op = false;
template <class Op, class O, class... A>
inline constexpr bool has_op<Op, node<O, A...>> = std::is_same_v<Op, O> || (has_op<Op, A> || ...);
template <class Op, class R, class X>
inline constexpr bool has_op<Op, group<R, X>> = has_op<Op, X>;
template <class Op, class F, class S>
inline constexpr bool has_op<Op, runtime_choice<F, S>> = has_op<Op, F> || has_op<Op, S>;
template <class Op, class F, class S>
inline constexpr bool has_op<Op, guarded_plan<F, S>> = has_op<Op, F> || has_op<Op, S>;

/// Number of groups in P split off for reason Why.
template <reason Why, class P>
inline constexpr int split_groups = 0;
template <reason Why, class O, class... A>
inline constexpr int split_groups<Why, node<O, A...>> = (0 + ... + split_groups<Why, A>);
template <reason Why, class F, class S>
inline constexpr int split_groups<Why, guarded_plan<F, S>> = split_groups<Why, F>;  // (the fused form)
template <reason Why, class R, class X>
inline constexpr int split_groups<Why, group<R, X>> = [] {
  if constexpr (requires { R::why; }) return int(R::why == Why) + split_groups<Why, X>;
  else return split_groups<Why, X>;
}();

/// The expression of a group (of the fused form of a guarded plan: a
/// broadcast-up check, plan/plan_expr.hpp), and operand I of a node.
template <class G>
struct expr_of_t {
  using type = decltype(G::expr);
};
template <class F, class S>
struct expr_of_t<guarded_plan<F, S>> : expr_of_t<F> {};
template <class G>
using expr_of = typename expr_of_t<G>::type;
template <std::size_t I, class N>
using arg_t = std::tuple_element_t<I, decltype(N::args)>;

template <class E>
using kernels = kernels_of_t<plan_t<E>>;
template <class E>
inline constexpr int kernel_list_length = list_length<kernels<E>>;
template <std::size_t I, class E>
using kernel_rule = group_rule_t<kernel_t<I, plan_t<E>>>;
}  // namespace

TEST_CASE("linear, matmul and gemm with their epilogues are one kernel", "[static][contraction]") {
  using act = decltype(gelu(linear(x, W, b)));
  STATIC_REQUIRE(kernel_count<act> == 1);
  STATIC_REQUIRE(kernel_count<act, host_policy> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<act>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<act> == 2);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<act, unfused_policy>, rule::single_op>);

  using lin = decltype(linear(x, W, b));
  STATIC_REQUIRE(kernel_count<lin> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<lin>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<lin> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<lin, unfused_policy>, rule::single_contraction>);

  // GEMM + residual add + ReLU: the residual is read in the epilogue.
  using res = decltype(relu(matmul(x, transpose(W)) + x));
  STATIC_REQUIRE(kernel_count<res> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<res>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<res> == 3);

  using g = decltype(gemm(x, W, b, {.alpha = 0.5f, .beta = 2.0f, .trans_b = true}));
  STATIC_REQUIRE(kernel_count<g> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<g>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<g> == 1);
}

TEST_CASE("batch_norm directly after conv2d is folded into the weights", "[static][contraction][batch_norm]") {
  using E = decltype(relu(batch_norm(conv2d(img, w, b, {.padding = {1, 1, 1, 1}}), bn)));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(kernel_count<E, host_policy> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<E> == 3);  // conv, batch_norm, relu

  // The plan holds the folded weight and bias as their own groups, marked
  // folded_weights (computed once per weight set, then cached) ...
  using P = plan_t<E>;
  STATIC_REQUIRE(split_groups<reason::folded_weights, P> == 2);
  STATIC_REQUIRE(!has_op<op::batch_norm, P>);
  using conv = arg_t<0, expr_of<P>>;  // relu(conv2d(x, W', b'))
  STATIC_REQUIRE(std::is_same_v<typename conv::op_type, op::conv2d>);
  using folded_w = group_rule_t<arg_t<1, conv>>;
  using folded_b = group_rule_t<arg_t<2, conv>>;
  STATIC_REQUIRE(folded_w::why == reason::folded_weights);
  STATIC_REQUIRE(folded_b::why == reason::folded_weights);
  STATIC_REQUIRE(folded_w::cached);
  STATIC_REQUIRE(std::is_same_v<folded_w, split_off<reason::folded_weights, rule::elementwise_chain>>);
  // ... which kernels_of_t does not list: one kernel per run.
  STATIC_REQUIRE(kernel_list_length<E> == 1);
  STATIC_REQUIRE(std::is_same_v<kernel_t<0, P>, P>);

  // The unfused policy never folds.
  using U = plan_t<E, unfused_policy>;
  STATIC_REQUIRE(has_op<op::batch_norm, U>);
  STATIC_REQUIRE(split_groups<reason::folded_weights, U> == 0);
}

TEST_CASE("batch_norm is not folded across another op", "[static][contraction][batch_norm]") {
  // batch_norm(relu(conv)): conv + relu + batch_norm epilogue, weights as given.
  using E = decltype(batch_norm(relu(conv2d(img, w, b)), bn));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<E> == 3);
  using P = plan_t<E>;
  STATIC_REQUIRE(split_groups<reason::folded_weights, P> == 0);
  STATIC_REQUIRE(has_op<op::batch_norm, P>);
  STATIC_REQUIRE(!has_op<op::cache_weights, P>);
  using bn_node = expr_of<P>;
  STATIC_REQUIRE(std::is_same_v<typename bn_node::op_type, op::batch_norm>);
  using conv = arg_t<0, arg_t<0, bn_node>>;
  STATIC_REQUIRE(std::is_same_v<typename conv::op_type, op::conv2d>);
  STATIC_REQUIRE(std::is_same_v<arg_t<1, conv>, I4>);  // the original weight view
  STATIC_REQUIRE(std::is_same_v<arg_t<2, conv>, V>);
}

TEST_CASE("a conv shared by two consumers", "[static][contraction][batch_norm]") {
  // c is used by batch_norm(c) and by the add: two kernels (c on its own for
  // the second use, c + batch_norm epilogue + add for the first).
  using E = decltype(batch_norm(conv2d(img_s, w_s, b_s), bn) + conv2d(img_s, w_s, b_s));
  STATIC_REQUIRE(kernel_count<E> == 2);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<E> == 4);
  // The identity-tagged conv occurs twice: folding the batch norm into one
  // occurrence would compute the conv twice, so it is not folded (the list
  // of such convs is computed once at the root: detail::unfoldable_convs_t).
  using C = decltype(conv2d(img_s, w_s, b_s));
  STATIC_REQUIRE(std::is_same_v<detail::unfoldable_convs_t<canonical_t<E>>, type_list<C>>);
  STATIC_REQUIRE(split_groups<reason::folded_weights, plan_t<E>> == 0);
  // untagged, the two convs may be different tensors: each BN over a conv folds
  using U = decltype(batch_norm(conv2d(img, w, b), bn) + conv2d(img, w, b));
  STATIC_REQUIRE(std::is_same_v<detail::unfoldable_convs_t<canonical_t<U>>, type_list<>>);
  STATIC_REQUIRE(split_groups<reason::folded_weights, plan_t<U>> == 2);
}

TEST_CASE("LayerNorm/RMSNorm -> Linear is one kernel (norm prologue)", "[static][contraction]") {
  using ln = decltype(linear(layer_norm(x, b, b), W));
  STATIC_REQUIRE(kernel_count<ln> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<ln>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<ln> == 2);
  STATIC_REQUIRE(has_op<op::layer_norm, plan_t<ln>>);

  using rms = decltype(linear(rms_norm(x, b), W, b));
  STATIC_REQUIRE(kernel_count<rms> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<rms>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<rms> == 2);
}

TEST_CASE("depthwise -> BN -> ReLU6 -> pointwise is one kernel", "[static][contraction]") {
  // MobileNetV2: the depthwise conv's BN is folded into its weights, the
  // depthwise result is computed inside the pointwise conv's loads.
  using E = decltype(conv2d(clip(batch_norm(depthwise_conv2d(img, w, nullptr, {.padding = {1, 1, 1, 1}}), bn), 0.0f, 6.0f), w));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<E> == 4);  // depthwise, batch_norm, clip, pointwise
  STATIC_REQUIRE(split_groups<reason::folded_weights, plan_t<E>> == 2);
  // Stride and padding are run-time attributes: the plan (a type) is the same.
  using S = decltype(conv2d(clip(batch_norm(depthwise_conv2d(img, w, nullptr, {.padding = {1, 1, 1, 1}}), bn), 0.0f, 6.0f),
                            w, nullptr, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}));
  STATIC_REQUIRE(kernel_count<S> == 1);
  STATIC_REQUIRE(std::is_same_v<plan_t<S>, plan_t<E>>);
}

TEST_CASE("a second contraction in an epilogue is split off", "[static][contraction]") {
  // SwiGLU: silu(x W1^T) * (x W3^T). One contraction is the group's core, the
  // other one its own kernel: silu(x W1^T) with the silu as its epilogue
  // (a producer epilogue: computed once per GEMM output).
  using E = decltype(silu(linear(x, W)) * linear(x, W));
  STATIC_REQUIRE(kernel_count<E> == 2);
  STATIC_REQUIRE(unfused_kernel_count<E> == 4);  // linear, silu, linear, mul
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::contraction>);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<0, E>, split_off<reason::producer_epilogue, rule::contraction>>);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<1, E>, rule::contraction>);
  STATIC_REQUIRE(split_groups<reason::producer_epilogue, plan_t<E>> == 1);
}

TEST_CASE("a normalization or softmax after a contraction is its own kernel", "[static][contraction]") {
  // Post-LN transformer: GEMM + bias + residual in one kernel, the norm in a second.
  using ln = decltype(layer_norm(linear(x, W, b) + x, b, b));
  STATIC_REQUIRE(kernel_count<ln> == 2);
  STATIC_REQUIRE(unfused_kernel_count<ln> == 3);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<ln>, rule::reduction>);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<0, ln>, rule::contraction>);

  // Attention scores: QK^T, then the softmax rows.
  using att = decltype(softmax(matmul(q, transpose(q)), -1));
  STATIC_REQUIRE(kernel_count<att> == 2);
  STATIC_REQUIRE(unfused_kernel_count<att> == 2);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<att>, rule::reduction>);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<0, att>, split_off<reason::expensive_producer, rule::contraction>>);
}

TEST_CASE("static extents propagate through contractions", "[static][contraction]") {
  using A = tensor_view<float, extents<2, 3, 5, 7>>;
  using B = tensor_view<float, extents<3, 7, 4>>;
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(matmul(std::declval<A>(), std::declval<B>()))>, extents<2, 3, 5, 4>>);

  using X = tensor_view<float, extents<dyn, 768>>;
  using Wt = tensor_view<float, extents<3072, 768>>;
  using lin = decltype(linear(std::declval<X>(), std::declval<Wt>()));
  STATIC_REQUIRE(std::is_same_v<static_extents_t<lin>, extents<dyn, 3072>>);
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(gelu(std::declval<lin>()))>, extents<dyn, 3072>>);

  using tr = decltype(transpose(std::declval<Wt>()));
  STATIC_REQUIRE(std::is_same_v<static_extents_t<tr>, extents<768, 3072>>);
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(transpose(std::declval<B>()))>, extents<3, 4, 7>>);
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(matmul(std::declval<X>(), std::declval<tr>()))>, extents<dyn, 3072>>);

  // conv2d: only the batch extent is static (layout, stride, padding are run-time attributes).
  using Img = tensor_view<float, extents<8, 3, 32, 32>>;
  using Ker = tensor_view<float, extents<16, 3, 3, 3>>;
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(conv2d(std::declval<Img>(), std::declval<Ker>()))>,
                                extents<8, dyn, dyn, dyn>>);
  // gemm: which dims are M, N, K is a run-time attribute.
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(gemm(std::declval<A>(), std::declval<B>()))>, dextents<2>>);
  // Half operands accumulate in fp32; value_t is the compute type (fp32, as
  // for elementwise ops on half), the output view's dtype is what is stored.
  using H = tensor_view<__half, dextents<2>>;
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(linear(std::declval<H>(), std::declval<H>()))>, float>);
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(relu(std::declval<H>()))>, float>);
}

TEST_CASE("folded Conv-BN: prepared weights on the first run only", "[contraction][batch_norm]") {
  // Conv (8 -> 8 channels, 3x3, padding 1) + BN + ReLU on a 1x8x6x6 image.
  std::vector<float> xd(1 * 8 * 6 * 6), wd(8 * 8 * 3 * 3), bd(8), out(1 * 8 * 6 * 6);
  std::vector<float> gamma(8), beta(8), mean(8), var(8);
  for (std::size_t i = 0; i < xd.size(); ++i) xd[i] = float(i % 11) * 0.1f - 0.5f;
  for (std::size_t i = 0; i < wd.size(); ++i) wd[i] = float(i % 7) * 0.02f - 0.06f;
  for (std::size_t c = 0; c < 8; ++c) {
    bd[c] = 0.1f * float(c) - 0.3f;
    gamma[c] = 0.5f + 0.25f * float(c);
    beta[c] = 0.2f - 0.05f * float(c);
    mean[c] = 0.03f * float(c) - 0.1f;
    var[c] = 0.5f + 0.3f * float(c);
  }
  auto xv = host_view(xd.data(), 1, 8, 6, 6);
  auto wv = host_view(wd.data(), 8, 8, 3, 3);
  auto bv = host_view(bd.data(), 8);
  auto ov = host_view(out.data(), 1, 8, 6, 6);
  auto params = batch_norm_params{host_view(gamma.data(), 8), host_view(beta.data(), 8), host_view(mean.data(), 8),
                                  host_view(var.data(), 8)};
  auto block = relu(batch_norm(conv2d(xv, wv, bv, {.padding = {1, 1, 1, 1}}), params));
  static_assert(fusor::kernel_count<decltype(block)> == 1);

  auto ex = fusor::host();
  CHECK(fusor::run(ov, block, ex).kernels == 3);  // folded weight, folded bias, conv + ReLU
  CHECK(fusor::run(ov, block, ex).kernels == 1);  // the folded weights are cached
  ex.clear_prepared();                            // after changing wd, bd or the BN parameters in place
  CHECK(fusor::run(ov, block, ex).kernels == 3);

  std::vector<float> ref(out.size());
  CHECK(fusor::run(host_view(ref.data(), 1, 8, 6, 6), block, fusor::unfused()).kernels == 3);  // never folds
  // Folding changes the result by rounding only (W * k and the folded bias
  // are each rounded to fp32 once).
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(ref[i]).epsilon(1e-5).margin(1e-6));

  const std::string s = fusor::explain(block);
  CHECK_THAT(s, Catch::Contains("folded"));
  CHECK_THAT(s, Catch::Contains("contraction_epilogue"));
}

TEST_CASE("contraction errors at run time name the op and the shapes", "[contraction][errors]") {
  std::vector<float> xd(4 * 8, 1.0f), wd(16 * 6, 1.0f), out(4 * 16);
  auto xv = host_view(xd.data(), 4, 8);
  auto w_bad = host_view(wd.data(), 16, 6);  // W is [N, K]: K = 6, but x has K = 8
  CHECK_THROWS_AS(fusor::run(host_view(out.data(), 4, 16), linear(xv, w_bad), fusor::host()), fusor::shape_error);
  CHECK_THROWS_WITH(fusor::run(host_view(out.data(), 4, 16), linear(xv, w_bad), fusor::host()),
                    Catch::StartsWith("fusor: linear: x [4, 8] has K = 8 but W [16, 6]"));

  // A tiled contraction cannot write over a tensor its A/B operands read.
  std::vector<float> sq(8 * 8, 0.5f);
  auto s = host_view(sq.data(), 8, 8);
  CHECK_THROWS_AS(fusor::run(s, matmul(s, s), fusor::host()), fusor::argument_error);
}
