// Compile-time plans of reductions: kernel counts, rules, static extents.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

using namespace fusor;
namespace {
using V = tensor_view<float, dextents<2>>;
using S = tensor_view<float, extents<4, 1024>>;
const V& v = *static_cast<const V*>(nullptr);  // only used in decltype
const S& s = *static_cast<const S*>(nullptr);
}  // namespace

TEST_CASE("softmax is one kernel, by rule reduction", "[static][reduction]") {
  using E = decltype(softmax(v, -1));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::reduction>);
  STATIC_REQUIRE(unfused_kernel_count<E> == 1);
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(softmax(s))>, extents<4, 1024>>);
  STATIC_REQUIRE(kernel_count<decltype(log_softmax(exp(v) * 2.0f))> == 1);
}

TEST_CASE("mean(square(a - b)): one kernel; unfused: three", "[static][reduction]") {
  using E = decltype(mean(square(v - v), {1}));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(unfused_kernel_count<E> == 3);
  STATIC_REQUIRE(std::is_same_v<value_t<E>, float>);
  STATIC_REQUIRE(rank_v<E> == 2);
  STATIC_REQUIRE(rank_v<decltype(mean<1>(square(v - v), {1}, false))> == 1);
}

TEST_CASE("reduction epilogues fuse; reductions of reductions are separate kernels", "[static][reduction]") {
  // Epilogues: scalar work on a reduced value, any elementwise consumer of a
  // normalization (same shape as its input).
  STATIC_REQUIRE(kernel_count<decltype(sqrt(mean(v, {1})))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(sqrt(mean(square(v), {1}) + 1e-5f))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(layer_norm(v, nullptr, nullptr) + v)> == 1);
  STATIC_REQUIRE(kernel_count<decltype(relu(softmax(v)) * 2.0f)> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<decltype(layer_norm(v, nullptr, nullptr) + v)>, rule::reduction>);
  STATIC_REQUIRE(unfused_kernel_count<decltype(layer_norm(v, nullptr, nullptr) + v)> == 2);
  // Not epilogues: a reduced value combined with a tensor (broadcast back),
  // a reduction of a reduction.
  STATIC_REQUIRE(kernel_count<decltype(v - max_reduce(v, {1}))> == 2);
  STATIC_REQUIRE(kernel_count<decltype(sum(softmax(v), {1}))> == 2);
  STATIC_REQUIRE(kernel_count<decltype(layer_norm(v + 1.0f, nullptr, nullptr))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(rms_norm(v, v))> == 1);
  STATIC_REQUIRE(op::reduce<reduce_kind::sum>::kind == op_kind::reduction);
}

TEST_CASE("reduction result types: fp32 accumulation for half", "[static][reduction]") {
  using H = tensor_view<__half, dextents<2>>;
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(sum(std::declval<H>()))>, float>);
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(softmax(std::declval<H>()))>, float>);
  using I = tensor_view<std::int64_t, dextents<1>>;
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(sum(std::declval<I>()))>, std::int64_t>);
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(mean(std::declval<I>()))>, float>);
}

// Decomposed forms (recognize/decomposed.hpp): the fused planner runs each as the
// fused op, one kernel; the unfused reference runs it as written.
namespace {
template <class E>
using recognized_root_op = typename recognized_t<canonical_t<E>>::op_type;
using Centered = decltype(v - mean(v, {-1}));
using Shifted = decltype(v - max_reduce(v, {-1}));
const Centered& centered = *static_cast<const Centered*>(nullptr);  // only used in decltype
const Shifted& shifted = *static_cast<const Shifted*>(nullptr);
using SoftmaxWritten = decltype(exp(shifted) / sum(exp(shifted), {-1}));
using LogSoftmaxLse = decltype(v - logsumexp(v, {-1}));
using LogSoftmaxWritten = decltype(shifted - log(sum(exp(shifted), {-1})));
using LayerNormDiv = decltype(centered / sqrt(mean(square(centered), {-1}) + 1e-5f));
using LayerNormRsqrt = decltype(rsqrt(mean(centered * centered, {-1}) + 1e-5) * centered);
using RmsNormRsqrt = decltype(v * rsqrt(mean(square(v), {-1}) + 1e-6f));
using RmsNormDiv = decltype(v / sqrt(1e-6f + mean(v * v, {-1})));
// ONNX's function bodies (issue 18): LayerNormalization's d * Reciprocal(Sqrt(
// ReduceMean(d * d) + eps)), RMSNormalization's Pow(x, 2), Softmax's
// e * Reciprocal(ReduceSum(e))
using LayerNormOnnx = decltype(centered * reciprocal(sqrt(mean(centered * centered, {-1}) + 1e-5f)));
using LayerNormPow = decltype(reciprocal(sqrt(mean(pow(centered, 2.0f), {-1}) + 1e-5f)) * centered);
using RmsNormOnnx = decltype(v * reciprocal(sqrt(mean(pow(v, 2.0f), {-1}) + 1e-6f)));
using SoftmaxReciprocal = decltype(exp(shifted) * reciprocal(sum(exp(shifted), {-1})));
using SoftmaxReciprocalFirst = decltype(reciprocal(sum(exp(shifted), {-1})) * exp(shifted));
}  // namespace

TEST_CASE("decomposed softmax and log_softmax are recognised: one kernel", "[static][reduction][decomposed]") {
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<SoftmaxWritten>, op::softmax>);
  STATIC_REQUIRE(std::is_same_v<recognized_t<canonical_t<SoftmaxWritten>>, node<op::softmax, V>>);
  STATIC_REQUIRE(kernel_count<SoftmaxWritten> == 1);
  STATIC_REQUIRE(unfused_kernel_count<SoftmaxWritten> == 8);  // the reference runs it as written
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<LogSoftmaxLse>, op::log_softmax>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<LogSoftmaxWritten>, op::log_softmax>);
  STATIC_REQUIRE(kernel_count<LogSoftmaxLse> == 1);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<decltype(-logsumexp(v, {1}) + v)>, op::log_softmax>);
  STATIC_REQUIRE(kernel_count<decltype(-logsumexp(v, {1}) + v)> == 1);
  STATIC_REQUIRE(kernel_count<LogSoftmaxWritten> == 1);
  // elementwise work on the recognised op stays its epilogue
  STATIC_REQUIRE(kernel_count<decltype(relu(exp(shifted) / sum(exp(shifted), {-1})) * 2.0f)> == 1);
  // inside a larger expression
  STATIC_REQUIRE(std::is_same_v<recognized_t<canonical_t<decltype(sum(exp(shifted) / sum(exp(shifted), {-1}), {0}))>>,
                                node<op::reduce<reduce_kind::sum>, node<op::softmax, V>>>);
  // the unstable form exp(x) / sum(exp(x)) is NOT rewritten (it overflows where softmax does not)
  STATIC_REQUIRE(std::is_same_v<recognized_t<canonical_t<decltype(exp(v) / sum(exp(v), {-1}))>>,
                                canonical_t<decltype(exp(v) / sum(exp(v), {-1}))>>);
}

TEST_CASE("decomposed layer_norm and rms_norm are recognised: one kernel with scale, shift, residual",
          "[static][reduction][decomposed]") {
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<LayerNormDiv>, op::layer_norm>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<LayerNormRsqrt>, op::layer_norm>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<RmsNormRsqrt>, op::rms_norm>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<RmsNormDiv>, op::rms_norm>);
  STATIC_REQUIRE(kernel_count<LayerNormDiv> == 1);
  STATIC_REQUIRE(kernel_count<LayerNormRsqrt> == 1);
  STATIC_REQUIRE(kernel_count<RmsNormRsqrt> == 1);
  STATIC_REQUIRE(kernel_count<RmsNormDiv> == 1);
  using G = tensor_view<float, dextents<1>>;
  const G& g = *static_cast<const G*>(nullptr);
  using Affine = decltype((centered / sqrt(mean(square(centered), {-1}) + 1e-5f)) * g + g + v);
  STATIC_REQUIRE(kernel_count<Affine> == 1);  // layer_norm + scale + shift + residual
  STATIC_REQUIRE(std::is_same_v<root_rule_t<Affine>, rule::reduction>);
  STATIC_REQUIRE(unfused_kernel_count<LayerNormDiv> == 9);  // as written: x - mean(x) twice (untagged)
}

TEST_CASE("ONNX's spellings of layer_norm, rms_norm and softmax are recognised", "[static][reduction][decomposed]") {
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<LayerNormOnnx>, op::layer_norm>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<LayerNormPow>, op::layer_norm>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<RmsNormOnnx>, op::rms_norm>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<SoftmaxReciprocal>, op::softmax>);
  STATIC_REQUIRE(std::is_same_v<recognized_root_op<SoftmaxReciprocalFirst>, op::softmax>);
  STATIC_REQUIRE(kernel_count<LayerNormOnnx> == 1);
  STATIC_REQUIRE(kernel_count<LayerNormPow> == 1);
  STATIC_REQUIRE(kernel_count<RmsNormOnnx> == 1);
  STATIC_REQUIRE(kernel_count<SoftmaxReciprocal> == 1);
  STATIC_REQUIRE(unfused_kernel_count<LayerNormOnnx> == 12);  // as written: x - mean(x) three times
  STATIC_REQUIRE(unfused_kernel_count<RmsNormOnnx> == 6);
  STATIC_REQUIRE(unfused_kernel_count<SoftmaxReciprocal> == 9);
}

TEST_CASE("mse_loss is mean(square(a - b)): written either way, one kernel", "[static][reduction][decomposed]") {
  STATIC_REQUIRE(std::is_same_v<decltype(mse_loss(v, v)), decltype(mean<0>(square(v - v), {}, false))>);
  STATIC_REQUIRE(kernel_count<decltype(mean<0>(square(v - v), {}, false))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(mse_loss<loss_reduction::sum>(v, v))> == 1);
}

TEST_CASE("cost: a row kernel's operands count once per pass over the row", "[static][reduction][cost]") {
  STATIC_REQUIRE(cost::group_stats<decltype(sum(v, {1}))>().bytes_read == sizeof(float));
  STATIC_REQUIRE(cost::group_stats<decltype(softmax(v))>().bytes_read == 2 * sizeof(float));       // max/sum, output
  STATIC_REQUIRE(cost::group_stats<decltype(rms_norm(v, nullptr))>().bytes_read == 2 * sizeof(float));
  STATIC_REQUIRE(cost::group_stats<decltype(layer_norm(v, nullptr, nullptr))>().bytes_read == 3 * sizeof(float));
  STATIC_REQUIRE(cost::group_stats<decltype(layer_norm(v, nullptr, nullptr) + v)>().bytes_read == 4 * sizeof(float));  // + the residual, once
}
