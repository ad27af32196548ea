// Tests for tests/support/golden.hpp against the committed PyTorch cases in
// tests/data/torch (written by tools/gen_golden.py).
//
// 1. The C++ generator reproduces the probes NumPy wrote, bitwise.
// 2. Every output file loads, as float32, with the manifest's shape.
// 3. An independent check of the data: every stage of every case is
//    recomputed here in plain float64 loops from the generated tensors and
//    the manifest's attributes (reading each stage's input from torch's
//    stored output of the previous stage, so a mismatch points at one stage)
//    and compared with torch's float32 result within an error bound (see
//    `contraction` below). Residual additions are compared bitwise.
// Catch2 v2; main() lives in another TU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>  // getpid: a private temporary directory

#include "support/golden.hpp"

namespace fs = std::filesystem;
using namespace fusor::testing;
using Catch::Matchers::Contains;
using shape_t = std::vector<std::int64_t>;

namespace {

constexpr double u32 = 0x1p-24;  // unit roundoff of float32

// Error model for torch's float32 dot products (conv, matmul, linear).
// Summing K products in float32, in any order, errs by at most about
// K * u32 * sum|terms| (Higham, "Accuracy and Stability of Numerical
// Algorithms", 3.1); rounding errors of a long sum behave like a random walk,
// so the typical error is sqrt(K) * u32 * sum|terms|. We allow
// kDot * sqrt(K) * u32 * sum|terms| + u32 * |result|. On this data (torch
// 1.13, MKL-DNN convs, BLAS matmuls) the largest error seen is 0.58 of that
// bound with kDot = 1, so kDot = 4 leaves a margin for data regenerated on
// another CPU while still catching a wrong attribute (pad, stride, group,
// dilation) by orders of magnitude. The worst-case K * u32 would be sqrt(K)
// (up to 55x) looser.
constexpr double kDot = 4.0;
// Elementwise stages round a few times each; we allow kEw roundings of the
// magnitudes involved. Torch's eval-mode BatchNorm rounds var + eps, the
// sqrt, the reciprocal, gamma * invstd, mean * alpha, beta - mean * alpha,
// x * alpha and the final add: 8. (The largest error seen needs kEw = 2.7.)
constexpr double kEw = 8.0;

// A float64 reference with, per element, the error torch's float32 result may have.
struct reference {
  shape_t shape;
  std::vector<double> value, bound;
};

std::int64_t numel(const shape_t& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

double contraction_bound(double magnitude, double value, std::int64_t k) {
  return kDot * std::sqrt(static_cast<double>(k)) * u32 * magnitude + u32 * std::abs(value);
}

// |torch - ref| <= bound for every element; on failure reports the worst one.
void check_close(const std::string& what, const golden_tensor& got, const reference& ref) {
  INFO(what);
  REQUIRE(got.shape == ref.shape);
  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < got.data.size(); ++i) {
    const double err = std::abs(static_cast<double>(got.data[i]) - ref.value[i]);
    if (!(err <= ref.bound[i])) ++bad;
    const double ratio = err == 0 ? 0 : (ref.bound[i] > 0 ? err / ref.bound[i] : INFINITY);
    if (!(ratio <= worst_ratio)) { worst_ratio = ratio; worst = i; }
  }
  INFO("worst element " << worst << ": torch " << got.data[worst] << ", float64 reference " << ref.value[worst]
                        << ", error/bound " << worst_ratio << "; " << bad << " of " << got.data.size()
                        << " elements out of bounds");
  CHECK(bad == 0);
}

// Bitwise equality with a float32 elementwise result.
void check_bitwise(const std::string& what, const golden_tensor& got, const shape_t& shape,
                   const std::vector<float>& want) {
  INFO(what);
  REQUIRE(got.shape == shape);
  REQUIRE(got.data.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::bit_cast<std::uint32_t>(got.data[i]) != std::bit_cast<std::uint32_t>(want[i])) ++bad;
  CHECK(bad == 0);
}

std::vector<std::int64_t> ints(const nlohmann::json& a, const char* key) {
  return a.at(key).get<std::vector<std::int64_t>>();
}

// NCHW conv2d, weight [O, C/groups, KH, KW], padding [top, left, bottom, right].
reference conv2d_ref(const golden_tensor& x, const golden_tensor& w, const golden_tensor* bias,
                     const nlohmann::json& a) {
  const auto stride = ints(a, "stride"), pad = ints(a, "padding"), dil = ints(a, "dilation");
  const auto groups = a.at("groups").get<std::int64_t>();
  REQUIRE(a.at("bias").get<bool>() == (bias != nullptr));
  REQUIRE(x.shape.size() == 4);
  REQUIRE(w.shape.size() == 4);
  const std::int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const std::int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  REQUIRE(C == Cg * groups);
  REQUIRE(O % groups == 0);
  const std::int64_t OH = (H + pad[0] + pad[2] - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  const std::int64_t OW = (W + pad[1] + pad[3] - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  const std::int64_t K = Cg * KH * KW + (bias ? 1 : 0);
  reference r{{N, O, OH, OW}, {}, {}};
  r.value.reserve(static_cast<std::size_t>(numel(r.shape)));
  r.bound.reserve(r.value.capacity());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      const std::int64_t g = o / (O / groups);
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double sum = 0, mag = 0;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t kh = 0; kh < KH; ++kh) {
              const std::int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
              if (ih < 0 || ih >= H) continue;
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
                if (iw < 0 || iw >= W) continue;
                const double t = static_cast<double>(x.data[static_cast<std::size_t>(((n * C + g * Cg + c) * H + ih) * W + iw)]) *
                                 w.data[static_cast<std::size_t>(((o * Cg + c) * KH + kh) * KW + kw)];
                sum += t;
                mag += std::abs(t);
              }
            }
          if (bias) {
            sum += bias->data[static_cast<std::size_t>(o)];
            mag += std::abs(bias->data[static_cast<std::size_t>(o)]);
          }
          r.value.push_back(sum);
          r.bound.push_back(contraction_bound(mag, sum, K));
        }
    }
  return r;
}

// Eval-mode BatchNorm over axis 1 of NCHW, applied to a reference (its
// bounds scale by |gamma / sqrt(var + eps)|), then an optional clamp.
reference batch_norm_ref(reference in, const golden_case& c, const std::string& prefix, double lo = -INFINITY,
                         double hi = INFINITY) {
  const double eps = c.attr(prefix).at("eps").get<double>();
  const auto gamma = c.tensor(prefix + ".weight").data, beta = c.tensor(prefix + ".bias").data;
  const auto mean = c.tensor(prefix + ".running_mean").data, var = c.tensor(prefix + ".running_var").data;
  const std::int64_t C = in.shape[1], inner = in.shape[2] * in.shape[3];
  REQUIRE(static_cast<std::int64_t>(gamma.size()) == C);
  for (std::size_t i = 0; i < in.value.size(); ++i) {
    const auto ch = static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % C);
    const double alpha = gamma[ch] / std::sqrt(static_cast<double>(var[ch]) + eps);
    const double v = in.value[i];
    in.value[i] = std::clamp((v - mean[ch]) * alpha + beta[ch], lo, hi);
    in.bound[i] = std::abs(alpha) * in.bound[i] +
                  kEw * u32 * (std::abs(v * alpha) + std::abs(mean[ch] * alpha) + std::abs(beta[ch]));
  }
  return in;
}

// A reference from torch's own float32 tensor (exact, no error of its own).
reference exact(const golden_tensor& t) {
  return {t.shape, std::vector<double>(t.data.begin(), t.data.end()), std::vector<double>(t.data.size(), 0.0)};
}

// C[b, m, n] = sum_k A[b, m, k] B[b, k, n] with NumPy broadcasting of the
// batch dimensions (both operands of rank >= 2).
reference matmul_ref(const golden_tensor& A, const golden_tensor& B) {
  const std::size_t ra = A.shape.size(), rb = B.shape.size(), rank = std::max(ra, rb);
  REQUIRE(ra >= 2);
  REQUIRE(rb >= 2);
  const std::int64_t M = A.shape[ra - 2], K = A.shape[ra - 1], N = B.shape[rb - 1];
  REQUIRE(B.shape[rb - 2] == K);
  // Batch shape and element strides (0 where an operand broadcasts).
  shape_t batch(rank - 2);
  std::vector<std::int64_t> sa(rank - 2), sb(rank - 2);
  std::int64_t stride_a = M * K, stride_b = K * N;
  for (std::size_t d = rank - 2; d-- > 0;) {
    const std::int64_t da = d + ra >= rank ? A.shape[d + ra - rank] : 1;
    const std::int64_t db = d + rb >= rank ? B.shape[d + rb - rank] : 1;
    REQUIRE((da == db || da == 1 || db == 1));
    batch[d] = std::max(da, db);
    sa[d] = da == 1 ? 0 : stride_a;
    sb[d] = db == 1 ? 0 : stride_b;
    stride_a *= da;
    stride_b *= db;
  }
  shape_t out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  reference r{out_shape, {}, {}};
  std::vector<std::int64_t> idx(batch.size(), 0);
  for (std::int64_t b = 0; b < numel(batch); ++b) {
    std::int64_t oa = 0, ob = 0;
    for (std::size_t d = 0; d < batch.size(); ++d) { oa += idx[d] * sa[d]; ob += idx[d] * sb[d]; }
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double sum = 0, mag = 0;
        for (std::int64_t k = 0; k < K; ++k) {
          const double t = static_cast<double>(A.data[static_cast<std::size_t>(oa + m * K + k)]) *
                           B.data[static_cast<std::size_t>(ob + k * N + n)];
          sum += t;
          mag += std::abs(t);
        }
        r.value.push_back(sum);
        r.bound.push_back(contraction_bound(mag, sum, K));
      }
    for (std::size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

// y[..., o] = sum_k x[..., k] W[o, k] + bias[o]  (F.linear).
reference linear_ref(const golden_tensor& x, const golden_tensor& w, const golden_tensor& bias) {
  REQUIRE(w.shape.size() == 2);
  const std::int64_t O = w.shape[0], K = w.shape[1];
  REQUIRE(x.shape.back() == K);
  const std::int64_t rows = numel(x.shape) / K;
  shape_t out_shape = x.shape;
  out_shape.back() = O;
  reference r{out_shape, {}, {}};
  r.value.reserve(static_cast<std::size_t>(rows * O));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t o = 0; o < O; ++o) {
      double sum = bias.data[static_cast<std::size_t>(o)], mag = std::abs(sum);
      for (std::int64_t k = 0; k < K; ++k) {
        const double t = static_cast<double>(x.data[static_cast<std::size_t>(i * K + k)]) *
                         w.data[static_cast<std::size_t>(o * K + k)];
        sum += t;
        mag += std::abs(t);
      }
      r.value.push_back(sum);
      r.bound.push_back(contraction_bound(mag, sum, K + 1));
    }
  return r;
}

// out = a + b (or relu(a + b)) in float32, as torch computes it: one IEEE
// rounding per element, so the stored output must match bitwise.
std::vector<float> add(const golden_tensor& a, const golden_tensor& b, bool relu = false) {
  REQUIRE(a.shape == b.shape);
  std::vector<float> out(a.data.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float s = a.data[i] + b.data[i];
    out[i] = relu ? std::max(s, 0.0f) : s;
  }
  return out;
}

const std::vector<std::string> kCases = {"attention_bert",      "attention_cross",    "attention_llama_gqa",
                                         "bert_mlp",            "conv_variants",      "matmul_variants",
                                         "mha_block",           "mobilenet_v2_ir_s1", "mobilenet_v2_ir_s2",
                                         "resnet_basic_block_s2"};

}  // namespace

TEST_CASE("splitmix64 and the element generator match reference values", "[golden]") {
  // First output of Vigna's splitmix64 PRNG seeded with 0.
  STATIC_REQUIRE(splitmix64(0) == 0xE220A8397B1DCDAFull);
  // Seed 7, scale 0.3, offset -0.25: u is exact; the value is rounded once
  // from double (checked against NumPy in tools/gen_golden.py's self-check).
  const std::uint64_t bits = splitmix64(7 * 0x100000001B3ull) >> 40;
  CHECK(generate_element(7, 0.3, -0.25, 0) == static_cast<float>(-0.25 + 0.3 * (bits * 0x1p-24 * 2 - 1)));
  // u spans [-1, 1): scale 1, offset 0 keeps every value in range.
  const auto v = generate(tensor_spec{"t", {1000}, 42, 1.0, 0.0});
  REQUIRE(v.size() == 1000);
  CHECK(std::all_of(v.begin(), v.end(), [](float f) { return f >= -1.0f && f < 1.0f; }));
  CHECK(*std::min_element(v.begin(), v.end()) < -0.99f);
  CHECK(*std::max_element(v.begin(), v.end()) > 0.99f);
  CHECK(generate(tensor_spec{"empty", {3, 0}, 1, 1.0, 0.0}).empty());
}

TEST_CASE("every golden case: generator reproduces the probes bitwise, outputs load with the manifest's shape",
          "[golden]") {
  REQUIRE(golden_case_names() == kCases);
  for (const auto& name : kCases) {
    INFO("case " << name);
    const golden_case c = load_golden(name);
    CHECK(c.name == name);
    CHECK(!c.torch_version.empty());
    CHECK(!c.description.empty());
    REQUIRE(!c.tensors.empty());
    REQUIRE(!c.outputs.empty());
    CHECK(c.attributes.is_object());
    CHECK(c.probes.size() == c.tensors.size());  // every tensor has probes

    std::vector<std::uint64_t> seeds;
    for (const auto& [tname, spec] : c.tensors) {
      INFO("tensor " << tname);
      seeds.push_back(spec.seed);
      const auto& probe = c.probes.at(tname);
      REQUIRE(probe.size() == static_cast<std::size_t>(std::min<std::int64_t>(8, spec.size())));
      for (std::size_t i = 0; i < probe.size(); ++i) {
        INFO("element " << i);
        CHECK(std::bit_cast<std::uint32_t>(generate_element(spec.seed, spec.scale, spec.offset, i)) ==
              std::bit_cast<std::uint32_t>(probe[i]));
      }
      const golden_tensor t = c.tensor(tname);
      CHECK(t.shape == spec.shape);
      CHECK(static_cast<std::int64_t>(t.data.size()) == spec.size());
    }
    std::sort(seeds.begin(), seeds.end());
    CHECK(std::adjacent_find(seeds.begin(), seeds.end()) == seeds.end());  // distinct seeds

    for (const auto& [oname, spec] : c.outputs) {
      INFO("output " << oname);
      const golden_tensor o = c.output(oname);
      CHECK(o.shape == spec.shape);
      CHECK(static_cast<std::int64_t>(o.data.size()) == numel(spec.shape));
      CHECK(std::all_of(o.data.begin(), o.data.end(), [](float f) { return std::isfinite(f); }));
      CHECK(!spec.formula.empty());
    }
  }
}

TEST_CASE("resnet_basic_block_s2: every stage recomputed in float64", "[golden]") {
  const golden_case c = load_golden("resnet_basic_block_s2");
  const auto x = c.tensor("x");
  const auto conv1 = c.output("conv1"), stage1 = c.output("stage1"), conv2 = c.output("conv2");
  const auto main = c.output("main"), sconv = c.output("shortcut_conv"), shortcut = c.output("shortcut");
  check_close("conv1", conv1, conv2d_ref(x, c.tensor("conv1.weight"), nullptr, c.attr("conv1")));
  check_close("stage1", stage1, batch_norm_ref(exact(conv1), c, "bn1", 0.0));
  check_close("conv2", conv2, conv2d_ref(stage1, c.tensor("conv2.weight"), nullptr, c.attr("conv2")));
  check_close("main", main, batch_norm_ref(exact(conv2), c, "bn2"));
  check_close("shortcut_conv", sconv,
              conv2d_ref(x, c.tensor("downsample.0.weight"), nullptr, c.attr("downsample.0")));
  check_close("shortcut", shortcut, batch_norm_ref(exact(sconv), c, "downsample.1"));
  check_bitwise("out = relu(main + shortcut)", c.output("out"), main.shape, add(main, shortcut, true));
  // The chain end to end as well: stage1 from x directly (conv error scaled by BN).
  check_close("stage1 from x", stage1,
              batch_norm_ref(conv2d_ref(x, c.tensor("conv1.weight"), nullptr, c.attr("conv1")), c, "bn1", 0.0));
}

TEST_CASE("mobilenet_v2 inverted residuals: every stage recomputed in float64", "[golden]") {
  for (const char* name : {"mobilenet_v2_ir_s1", "mobilenet_v2_ir_s2"}) {
    INFO("case " << name);
    const golden_case c = load_golden(name);
    const auto x = c.tensor("x");
    const auto expand = c.output("expand"), dw = c.output("dw"), project = c.output("project");
    check_close("expand", expand,
                batch_norm_ref(conv2d_ref(x, c.tensor("expand.conv.weight"), nullptr, c.attr("expand.conv")), c,
                               "expand.bn", 0.0, 6.0));
    check_close("dw", dw,
                batch_norm_ref(conv2d_ref(expand, c.tensor("dw.conv.weight"), nullptr, c.attr("dw.conv")), c,
                               "dw.bn", 0.0, 6.0));
    check_close("project", project,
                batch_norm_ref(conv2d_ref(dw, c.tensor("project.conv.weight"), nullptr, c.attr("project.conv")), c,
                               "project.bn"));
    // The generator's input scale makes ReLU6 clamp on both sides.
    CHECK(std::count(expand.data.begin(), expand.data.end(), 6.0f) > 0);
    CHECK(std::count(expand.data.begin(), expand.data.end(), 0.0f) > 0);
    if (c.outputs.contains("out")) check_bitwise("out = x + project", c.output("out"), x.shape, add(x, project));
  }
  CHECK(!load_golden("mobilenet_v2_ir_s2").outputs.contains("out"));  // stride 2: no residual
}

TEST_CASE("bert_mlp: LayerNorm, fc1 + GELU, fc2 recomputed in float64", "[golden]") {
  const golden_case c = load_golden("bert_mlp");
  const auto x = c.tensor("x"), gamma = c.tensor("ln.weight"), beta = c.tensor("ln.bias");
  const auto ln = c.output("ln"), h = c.output("h"), y = c.output("y");
  const double eps = c.attr("ln").at("eps").get<double>();
  REQUIRE(eps == 1e-12);
  const std::int64_t D = x.shape.back(), rows = numel(x.shape) / D;
  REQUIRE(ints(c.attr("ln"), "normalized_shape") == shape_t{D});

  // LayerNorm: torch reduces mean and variance over D = 768 floats (a sum's
  // error, as for a dot product: kDot * sqrt(D) * u32 relative), then
  // normalizes and applies the affine part (kEw roundings).
  reference ref{x.shape, {}, {}};
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data.data() + r * D;
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < D; ++i) mean += xr[i];
    mean /= static_cast<double>(D);
    for (std::int64_t i = 0; i < D; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(D);  // biased, as LayerNorm uses
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (std::int64_t i = 0; i < D; ++i) {
      const double g = gamma.data[static_cast<std::size_t>(i)], b = beta.data[static_cast<std::size_t>(i)];
      ref.value.push_back((xr[i] - mean) * rstd * g + b);
      ref.bound.push_back((kDot * std::sqrt(static_cast<double>(D)) + kEw) * u32 *
                              (std::abs(xr[i]) + std::abs(mean)) * rstd * std::abs(g) +
                          kEw * u32 * std::abs(b));
    }
  }
  check_close("ln", ln, ref);

  // h = gelu(fc1(ln)), erf form. GELU's slope is at most 1.13 (max of
  // Phi(z) + z phi(z)), so the linear layer's bound grows by that factor; the
  // float32 GELU itself adds a few roundings of |z| (0.5 z (1 + erf) cancels
  // for negative z).
  reference z = linear_ref(ln, c.tensor("fc1.weight"), c.tensor("fc1.bias"));
  REQUIRE(c.attr("gelu").at("approximate").get<std::string>() == "none");
  for (std::size_t i = 0; i < z.value.size(); ++i) {
    const double zi = z.value[i];
    z.value[i] = 0.5 * zi * (1.0 + std::erf(zi / std::sqrt(2.0)));
    z.bound[i] = 1.13 * z.bound[i] + kEw * u32 * std::abs(zi);
  }
  check_close("h", h, z);

  check_close("y", y, linear_ref(h, c.tensor("fc2.weight"), c.tensor("fc2.bias")));
  check_bitwise("out = x + y", c.output("out"), x.shape, add(x, y));
}

TEST_CASE("conv_variants: each convolution recomputed in float64 from the manifest's attributes", "[golden]") {
  const golden_case c = load_golden("conv_variants");
  const std::vector<std::string> names = {"grouped", "dilated", "depthwise", "pointwise", "k1x3"};
  CHECK(c.outputs.size() == names.size());
  for (const auto& n : names) {
    const auto b = c.tensor(n + ".bias");
    check_close(n, c.output(n), conv2d_ref(c.tensor(n + ".x"), c.tensor(n + ".weight"), &b, c.attr(n)));
  }
  // The attributes the case exists for.
  CHECK(ints(c.attr("grouped"), "padding") == shape_t{1, 0, 2, 1});
  CHECK(ints(c.attr("grouped"), "stride") == shape_t{2, 1});
  CHECK(c.attr("grouped").at("groups") == 4);
  CHECK(ints(c.attr("dilated"), "dilation") == shape_t{2, 2});
  CHECK(c.attr("depthwise").at("groups") == 6);
  CHECK(c.output("depthwise").shape == shape_t{1, 12, 7, 6});
  CHECK(c.output("grouped").shape == shape_t{2, 12, 5, 6});
  CHECK(ints(c.attr("k1x3"), "padding") == shape_t{0, 1, 0, 1});
}

TEST_CASE("matmul_variants: each product recomputed in float64", "[golden]") {
  const golden_case c = load_golden("matmul_variants");
  check_close("bmm", c.output("bmm"), matmul_ref(c.tensor("bmm.A"), c.tensor("bmm.B")));
  CHECK(c.output("bmm").shape == shape_t{2, 3, 5, 4});
  check_close("mm", c.output("mm"), matmul_ref(c.tensor("mm.A"), c.tensor("mm.B")));
  check_close("linear", c.output("linear"),
              linear_ref(c.tensor("linear.x"), c.tensor("linear.weight"), c.tensor("linear.bias")));

  // Gemm: Y = alpha * op(A) op(B) + beta * C, op = transpose when trans* = 1,
  // C [1, N] broadcast over rows.
  const auto& a = c.attr("gemm");
  const double alpha = a.at("alpha").get<double>(), beta = a.at("beta").get<double>();
  const bool ta = a.at("transA").get<int>() != 0, tb = a.at("transB").get<int>() != 0;
  CHECK((alpha == 0.5 && beta == 2.0 && ta && tb));
  const auto A = c.tensor("gemm.A"), B = c.tensor("gemm.B"), C = c.tensor("gemm.C");
  const std::int64_t M = ta ? A.shape[1] : A.shape[0], K = ta ? A.shape[0] : A.shape[1];
  const std::int64_t N = tb ? B.shape[0] : B.shape[1];
  REQUIRE((tb ? B.shape[1] : B.shape[0]) == K);
  REQUIRE(C.shape == shape_t{1, N});
  reference ref{{M, N}, {}, {}};
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double sum = 0, mag = 0;
      for (std::int64_t k = 0; k < K; ++k) {
        const double t = static_cast<double>(A.data[static_cast<std::size_t>(ta ? k * M + m : m * K + k)]) *
                         B.data[static_cast<std::size_t>(tb ? n * K + k : k * N + n)];
        sum += t;
        mag += std::abs(t);
      }
      const double bc = beta * C.data[static_cast<std::size_t>(n)], v = alpha * sum + bc;
      ref.value.push_back(v);
      ref.bound.push_back(std::abs(alpha) * contraction_bound(mag, sum, K) + kEw * u32 * (std::abs(bc) + std::abs(v)));
    }
  check_close("gemm", c.output("gemm"), ref);
}

TEST_CASE("golden.hpp errors name the file, the tensor and the output", "[golden]") {
  const fs::path tmp = fs::temp_directory_path() / ("fusor_golden_test_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto write = [&](const std::string& text) { std::ofstream(tmp / "manifest.json") << text; };

  // Missing directory / manifest.
  CHECK_THROWS_WITH(load_golden("no_such_case"), Contains("no_such_case") && Contains("manifest.json") &&
                                                     Contains("no such file"));
  // Invalid JSON.
  write("{ not json");
  CHECK_THROWS_WITH(load_golden_case(tmp), Contains("manifest.json") && Contains("invalid JSON"));
  // A tensor lacking its seed.
  write(R"({"case": "t", "tensors": {"w": {"shape": [2], "scale": 1.0, "offset": 0.0}}, "outputs": {}})");
  CHECK_THROWS_WITH(load_golden_case(tmp), Contains("manifest.json") && Contains("tensor 'w'") && Contains("seed"));
  // A negative extent.
  write(R"({"case": "t", "tensors": {"w": {"shape": [-2], "seed": 1, "scale": 1.0, "offset": 0.0}}, "outputs": {}})");
  CHECK_THROWS_WITH(load_golden_case(tmp), Contains("tensor 'w'") && Contains("negative"));
  // Probes of an unknown tensor.
  write(R"({"case": "t", "tensors": {}, "outputs": {}, "probes": {"v": [1.0]}})");
  CHECK_THROWS_WITH(load_golden_case(tmp), Contains("probes of 'v'"));

  // A valid manifest whose output files are missing, of the wrong shape or dtype.
  write(R"({"case": "t", "tensors": {"w": {"shape": [2, 3], "seed": 5, "scale": 0.5, "offset": 1.0}},
            "attributes": {"conv": {"stride": [1, 1]}},
            "outputs": {"gone": {"file": "out_gone.npy", "shape": [2]},
                        "bad_shape": {"file": "out_bad_shape.npy", "shape": [3]},
                        "bad_dtype": {"file": "out_bad_dtype.npy", "shape": [2]},
                        "ok": {"file": "out_ok.npy", "shape": [2]}}})");
  auto write_npy = [&](const std::string& file, const std::string& descr, const std::string& shape, std::size_t bytes) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // data starts at a multiple of 64
    header += '\n';
    std::ofstream f(tmp / file, std::ios::binary);
    f << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff)
      << static_cast<char>(header.size() >> 8) << header << std::string(bytes, '\0');
  };
  write_npy("out_bad_shape.npy", "<f4", "(2,)", 8);
  write_npy("out_bad_dtype.npy", "<f8", "(2,)", 16);
  write_npy("out_ok.npy", "<f4", "(2,)", 8);
  const golden_case c = load_golden_case(tmp);
  CHECK(c.output("ok").data == std::vector<float>{0.0f, 0.0f});
  CHECK_THROWS_WITH(c.output("gone"), Contains("output 'gone'") && Contains("out_gone.npy") && Contains("no such file"));
  CHECK_THROWS_WITH(c.output("bad_shape"), Contains("output 'bad_shape'") && Contains("[2]") && Contains("[3]"));
  CHECK_THROWS_WITH(c.output("bad_dtype"), Contains("out_bad_dtype.npy") && Contains("float64"));
  CHECK_THROWS_WITH(c.output("nope"), Contains("no output 'nope'") && Contains("manifest.json"));
  CHECK_THROWS_WITH(c.tensor("nope"), Contains("no tensor 'nope'") && Contains("manifest.json"));
  CHECK_THROWS_WITH(c.attr("nope"), Contains("no attributes for 'nope'"));
  CHECK(c.attr("conv").at("stride") == nlohmann::json::array({1, 1}));
  const auto w = c.tensor("w");
  CHECK(w.shape == shape_t{2, 3});
  CHECK(w.data.size() == 6);
  CHECK(std::all_of(w.data.begin(), w.data.end(), [](float f) { return f >= 0.5f && f < 1.5f; }));

  fs::remove_all(tmp);
}
