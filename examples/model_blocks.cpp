// model_blocks: four blocks of real models, at their real shapes, written as
// fusor expressions and run fused (fusor::host()) and op by op
// (fusor::unfused(), fusor's reference executor):
//
//   resnet     ResNet-18 basic block, 64 channels, 56x56, batch 1:
//              relu(bn2(conv3x3(relu(bn1(conv3x3(x))))) + x)
//   mobilenet  MobileNetV2 inverted residual, expansion 6, 16 -> 24
//              channels, 112x112 -> 56x56 (stride 2, so no residual), NCHW:
//              bn3(conv1x1(relu6(bn2(dwconv3x3/s2(relu6(bn1(conv1x1(x))))))))
//   bert       BERT-base encoder layer, 128 tokens, hidden 768, 12 heads,
//              FFN 3072, batch 1 (post-norm, GELU erf, LayerNorm eps 1e-12):
//              h = layer_norm(x + multi_head_attention(x))
//              y = layer_norm(h + linear(gelu(linear(h, W1, b1)), W2, b2))
//              (two fusor::run calls, h through a buffer: see bert())
//   llama      Llama-style SwiGLU MLP: linear(silu(linear(x, W1)) *
//              linear(x, W3), W2), reduced to hidden 1024, intermediate
//              2816, 64 tokens (Llama-7B's 4096 / 11008 is 16x the work:
//              one fused run took 6.8 s on a loaded 2-core host, so its 8
//              runs alone would fill the program's one-minute budget; the
//              program says so)
//
// The weights are deterministic pseudo-random numbers (splitmix64, fixed
// seeds), scaled like the usual initialisations so that activations stay of
// order 1; BatchNorm statistics are random too. For every block it prints
// the fusion plan (fusor::explain, host policy: the "kernels: N unfused -> M
// fused" line and the rule of every kernel), the kernels each executor
// launched, the time of both (best of 3 runs after a warm-up run), and how
// far the fused result is from the unfused one, with "agree: yes" when every
// element is within the block's tolerance (justified above kTolFolded and kTolPlain below).
// docs/model_blocks.md describes the blocks and their plans.
//
//   model_blocks [resnet|mobilenet|bert|llama|all]     (default: all)
//
// Exit status: 0 when every block run agrees, 1 when one does not (or fusor
// throws), 2 for a bad argument.
#include <fusor/fusor.hpp>
#include <fusor/ops/attention.hpp>
#include <fusor/ops/batch_norm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using fusor::index_t;

// ---------------------------------------------------------------------------
// Deterministic weights: splitmix64 (Steele, Lea & Flood 2014), 24-bit
// uniform floats.

struct splitmix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(double(next() >> 40) * 0x1.0p-24); }
};

std::vector<float> uniform(splitmix64& r, std::size_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = r.uniform(lo, hi);
  return v;
}
// U(-a, a) with a = sqrt(3 / fan_in): variance 1 / fan_in, so a layer keeps
// its input's scale (LeCun; PyTorch's Linear default is the same up to a
// factor sqrt(3)).
std::vector<float> weight(splitmix64& r, std::size_t n, std::size_t fan_in) {
  const float a = std::sqrt(3.0f / float(fan_in));
  return uniform(r, n, -a, a);
}

// Inference BatchNorm parameters of C channels: gamma ~ U(0.5, 1.5), beta ~
// U(-0.2, 0.2), running mean ~ U(-0.2, 0.2), running var ~ U(0.5, 2).
struct bn_weights {
  std::vector<float> gamma, beta, mean, var;
  bn_weights(splitmix64& r, std::size_t c)
      : gamma(uniform(r, c, 0.5f, 1.5f)), beta(uniform(r, c, -0.2f, 0.2f)), mean(uniform(r, c, -0.2f, 0.2f)),
        var(uniform(r, c, 0.5f, 2.0f)) {}
  auto params() const {
    const auto c = index_t(gamma.size());
    return fusor::batch_norm_params{fusor::host_view(gamma.data(), c), fusor::host_view(beta.data(), c),
                                    fusor::host_view(mean.data(), c), fusor::host_view(var.data(), c)};
  }
};

// ---------------------------------------------------------------------------
// Tolerances. Agreement means |fused - unfused| <= atol + rtol * |unfused|
// for every element (and both finite). All blocks are fp32 with fp32
// accumulation (unit roundoff u = 2^-24 ~ 6e-8); the outputs are of order 1
// (max |y| 0.9 to 4.5 here).
//  - resnet, mobilenet: the fused planner folds every BatchNorm that directly
//    consumes a conv into the conv's weights and bias (w * gamma /
//    sqrt(var + eps), one rounding per weight), the unfused executor applies
//    BN after the conv. Each conv output then differs by rounding: at most
//    ~K u sum|w x| (worst case), ~sqrt(K) u sum|w x| typically. In resnet K
//    = 576 (3x3 x 64 channels) and sum|w x| ~ 10 (|w| ~ 0.036, |x| ~ 0.5),
//    so ~1.5e-5 typical and ~4e-4 worst case per layer; conv2 and bn2 pass
//    conv1's difference on with a gain of about 1. mobilenet's K = 16, 9 and
//    96 give less. Tolerance: atol = rtol = 1e-3, above the worst case;
//    a real fault (a wrong index, a missed epilogue) moves outputs by O(1).
//    Observed: 2.6e-6 (resnet), 7.8e-7 (mobilenet).
//  - bert, llama: no folding. The fused kernels use the same tiled GEMM
//    (k ascending), the same attention and LayerNorm kernels as the unfused
//    reference; an epilogue (bias, GELU, SiLU * product, residual add) is
//    applied in fp32 before the store instead of after a round trip through
//    an fp32 temporary, which rounds the same. With the same summation
//    order, a difference could only come from where a rounding happens: a
//    few ulps of values of order 1-5 (~1e-6), amplified by LayerNorm's
//    1/std (~1-3) and, in bert, carried into the FFN sums (K = 3072) with a
//    gain of about 1. Tolerance: atol = rtol = 1e-4, two orders above
//    that. Observed: 0 (bitwise equal).
// (An independent float64 PyTorch computation of the same blocks with the
// same weights, done when this example was written, is within 5.6e-6 of both
// executors; see docs/model_blocks.md.)
struct tolerance {
  double atol, rtol;
};
constexpr tolerance kTolFolded{1e-3, 1e-3};
constexpr tolerance kTolPlain{1e-4, 1e-4};

// ---------------------------------------------------------------------------
// Running, timing, comparing.

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// explain's per-kernel lines without the (long) expression each computes;
// consecutive kernels with the same description are merged ("kernels 1-4"),
// as fusor_demo prints them. Also returns the "kernels: N unfused -> M
// fused" line.
std::vector<std::string> plan_lines(const std::string& explain) {
  std::vector<std::pair<std::string, std::string>> ks;  // (number, description)
  std::string total;
  std::istringstream in(explain);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("kernels:", 0) == 0) {
      total = "kernels: " + line.substr(line.find_first_not_of(' ', 8));
      continue;
    }
    const auto k = line.find_first_not_of(' ');
    if (k == std::string::npos || line.compare(k, 7, "kernel ") != 0) continue;
    const auto colon = line.find(": ", k);
    if (colon == std::string::npos) continue;
    std::string desc = line.substr(colon + 2);
    if (const auto c = desc.find(" computes "); c != std::string::npos) desc.resize(c);
    ks.emplace_back(line.substr(k + 7, colon - k - 7), desc);
  }
  std::vector<std::string> out{total};
  for (std::size_t i = 0; i < ks.size();) {
    std::size_t j = i + 1;
    while (j < ks.size() && ks[j].second == ks[i].second) ++j;
    out.push_back(j - i == 1 ? "kernel " + ks[i].first + ": " + ks[i].second
                             : "kernels " + ks[i].first + "-" + ks[j - 1].first + ": " + ks[i].second);
    i = j;
  }
  return out;
}

struct report {
  bool agree = false;
  double seconds = 0;  // wall time of the whole block (plans, runs, comparison)
};

// The plan of one fusor::run of a block (one expression).
struct stage_plan {
  std::string name;
  std::vector<std::string> lines;  // "kernels: N unfused -> M fused", then one line per kernel (group)
  int fused = 0, unfused = 0;      // kernel_count<E, host_policy>, unfused_kernel_count<E>
};
template <class E>
stage_plan plan_of(std::string name, const E& e) {
  return {std::move(name), plan_lines(fusor::explain<fusor::host_policy>(e)),
          int(fusor::kernel_count<E, fusor::host_policy>), int(fusor::unfused_kernel_count<E>)};
}

// Runs a block fused and unfused and prints its plan, times and agreement.
// run(ex, out, reference) runs the whole block with executor ex into out
// (`elements` floats; reference = true for the unfused run, so that a
// multi-stage block keeps its intermediate tensors apart) and returns the
// kernels launched.
template <class Run>
report run_block(const char* name, const std::string& title, const std::vector<std::string>& notes,
                 const std::vector<stage_plan>& plans, std::size_t elements, Run run, tolerance tol) {
  const auto t_block = std::chrono::steady_clock::now();
  std::printf("== %s: %s ==\n", name, title.c_str());
  for (const auto& n : notes) std::printf("  %s\n", n.c_str());
  int total_fused = 0, total_unfused = 0;
  for (const auto& p : plans) {
    std::printf("  plan%s%s (fusor::explain, host policy): %s\n", p.name.empty() ? "" : " of ", p.name.c_str(),
                p.lines[0].c_str());
    for (std::size_t i = 1; i < p.lines.size(); ++i) std::printf("    %s\n", p.lines[i].c_str());
    total_fused += p.fused;
    total_unfused += p.unfused;
  }
  if (plans.size() > 1)
    std::printf("  plan total: kernels: %d unfused -> %d fused\n", total_unfused, total_fused);
  std::fflush(stdout);

  std::vector<float> fused(elements), ref(elements);
  auto best_of_3 = [](auto&& f) {
    double best = 1e300;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      best = std::min(best, seconds_since(t0));
    }
    return best;
  };

  // Fused. The first run is the warm-up; for blocks with BatchNorm after a
  // conv it also computes the folded weights and biases (2 preparation
  // kernels per BN, cached by the executor object), so it launches more
  // kernels and is not timed with the others.
  const auto host = fusor::host();
  auto t0 = std::chrono::steady_clock::now();
  const std::size_t k_first = run(host, fused.data(), false);
  const double t_first = seconds_since(t0);
  std::size_t k_fused = 0;
  const double t_fused = best_of_3([&] { k_fused = run(host, fused.data(), false); });

  // Unfused reference: one kernel per op, temporaries in between.
  const auto unfused = fusor::unfused();
  t0 = std::chrono::steady_clock::now();
  std::size_t k_unfused = run(unfused, ref.data(), true);
  const double t_unfused_first = seconds_since(t0);
  const double t_unfused = best_of_3([&] { k_unfused = run(unfused, ref.data(), true); });

  // Relative differences are taken over the outputs of at least 1% of the
  // largest one: below that |diff| / |unfused| measures cancellation in that
  // element, not the executors (the tolerance's atol covers those).
  double max_abs = 0, max_rel = 0, max_ref = 0;
  bool agree = true;
  for (std::size_t i = 0; i < elements; ++i) {
    const double f = fused[i], u = ref[i], d = std::fabs(f - u);
    if (!std::isfinite(f) || !std::isfinite(u) || d > tol.atol + tol.rtol * std::fabs(u)) agree = false;
    max_abs = std::max(max_abs, d);
    max_ref = std::max(max_ref, std::fabs(u));
  }
  for (std::size_t i = 0; i < elements; ++i)
    if (std::fabs(ref[i]) >= 0.01 * max_ref)
      max_rel = std::max(max_rel, std::fabs(double(fused[i]) - ref[i]) / std::fabs(double(ref[i])));

  std::printf("  launched: fused %zu per run (first run %zu%s), unfused %zu\n", k_fused, k_first,
              k_first > k_fused ? ": + the BN-folding preparation kernels, once" : "", k_unfused);
  std::printf("  time: fused %.2f ms, unfused %.2f ms (best of 3 after a warm-up; unfused/fused %.2fx); "
              "warm-up runs: fused %.2f ms%s, unfused %.2f ms\n",
              t_fused * 1e3, t_unfused * 1e3, t_unfused / t_fused, t_first * 1e3,
              k_first > k_fused ? " (includes folding the BN weights)" : "", t_unfused_first * 1e3);
  std::printf("  agreement, fused vs unfused over %zu outputs (max |unfused| %.3g): max abs diff %.3g, max rel diff "
              "%.3g (over |unfused| >= 1%% of the max); tolerance |diff| <= %.0e + %.0e |unfused|: agree: %s\n\n",
              elements, max_ref, max_abs, max_rel, tol.atol, tol.rtol, agree ? "yes" : "NO");
  std::fflush(stdout);
  return {agree, seconds_since(t_block)};
}

// A block that is one expression e, written through out_view(float*).
template <class E, class MakeOut>
report run_expression_block(const char* name, const std::string& title, const std::vector<std::string>& notes,
                            const E& e, std::size_t elements, MakeOut out_view, tolerance tol) {
  // Planned == launched: every run launches the kernels fusor::kernels_planned
  // lists for these tensors (plus, on a first run, the BN-folding kernels).
  bool planned = true;
  report r = run_block(name, title, notes, {plan_of("", e)}, elements,
                       [&](const auto& ex, float* out, bool) {
                         const std::size_t k = fusor::run(out_view(out), e, ex).kernels;
                         using Policy = typename std::remove_cvref_t<decltype(ex)>::policy;
                         const fusor::planned_kernels p = fusor::kernels_planned<Policy>(e);
                         if (k < p.per_run || k > p.per_run + p.prepared) planned = false;
                         return k;
                       },
                       tol);
  std::printf("  planned == launched: %s (fusor::kernels_planned, both executors)\n\n", planned ? "yes" : "NO");
  r.agree = r.agree && planned;
  return r;
}

std::string shape_text(std::initializer_list<index_t> s) {
  std::string t = "[";
  for (auto it = s.begin(); it != s.end(); ++it) t += (it == s.begin() ? "" : ", ") + std::to_string(*it);
  return t + "]";
}

// ---------------------------------------------------------------------------
// 1. ResNet-18 basic block (conv2_x stage): 64 -> 64 channels, 56x56.

report resnet() {
  constexpr index_t N = 1, C = 64, H = 56, W = 56;
  splitmix64 r{0x5e5e7};
  const auto x = uniform(r, std::size_t(N * C * H * W), -1.0f, 1.0f);
  const auto w1 = weight(r, std::size_t(C * C * 9), std::size_t(C * 9));
  const auto w2 = weight(r, std::size_t(C * C * 9), std::size_t(C * 9));
  const bn_weights bn1(r, C), bn2(r, C);

  const auto X = fusor::host_view(x.data(), N, C, H, W);
  const auto W1 = fusor::host_view(w1.data(), C, C, 3, 3), W2 = fusor::host_view(w2.data(), C, C, 3, 3);
  constexpr fusor::conv2d_params same3x3{.padding = {1, 1, 1, 1}};
  const auto a1 = fusor::relu(fusor::batch_norm(fusor::conv2d(X, W1, nullptr, same3x3), bn1.params()));
  const auto y = fusor::relu(fusor::batch_norm(fusor::conv2d(a1, W2, nullptr, same3x3), bn2.params()) + X);

  return run_expression_block("resnet", "ResNet-18 basic block, 64 channels, 56x56, batch 1 (NCHW)",
                   {"computes: relu(bn2(conv3x3(relu(bn1(conv3x3(x))))) + x), x " + shape_text({N, C, H, W}) +
                        ", 2 x 64x64x3x3 conv weights, no conv bias"},
                   y, std::size_t(N * C * H * W),
                   [&](float* p) { return fusor::host_view(p, N, C, H, W); }, kTolFolded);
}

// ---------------------------------------------------------------------------
// 2. MobileNetV2 inverted residual (the first block of the 24-channel
// stage): t = 6, 16 -> 96 -> 24 channels, stride 2.

report mobilenet() {
  constexpr index_t N = 1, C = 16, H = 112, W = 112, E = 6 * C, CO = 24, HO = 56, WO = 56;
  splitmix64 r{0x30b11e};
  const auto x = uniform(r, std::size_t(N * C * H * W), -1.0f, 1.0f);
  const auto we = weight(r, std::size_t(E * C), std::size_t(C));
  const auto wd = weight(r, std::size_t(E * 9), 9);
  const auto wp = weight(r, std::size_t(CO * E), std::size_t(E));
  const bn_weights bn1(r, E), bn2(r, E), bn3(r, CO);

  const auto X = fusor::host_view(x.data(), N, C, H, W);
  const auto WE = fusor::host_view(we.data(), E, C, 1, 1);
  const auto WD = fusor::host_view(wd.data(), E, 1, 3, 3);
  const auto WP = fusor::host_view(wp.data(), CO, E, 1, 1);
  const auto expand = fusor::clip(fusor::batch_norm(fusor::conv2d(X, WE), bn1.params()), 0.0f, 6.0f);
  const auto dw = fusor::clip(
      fusor::batch_norm(fusor::depthwise_conv2d(expand, WD, nullptr, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}),
                        bn2.params()),
      0.0f, 6.0f);
  const auto y = fusor::batch_norm(fusor::conv2d(dw, WP), bn3.params());

  return run_expression_block("mobilenet", "MobileNetV2 inverted residual, expansion 6, 112x112x16 -> 56x56x24, stride 2, batch 1 (NCHW)",
                   {"computes: bn3(conv1x1_96->24(relu6(bn2(dwconv3x3_s2(relu6(bn1(conv1x1_16->96(x)))))))), x " +
                        shape_text({N, C, H, W}) + " -> " + shape_text({N, CO, HO, WO}) +
                        "; stride 2, so no residual; relu6 = clip(., 0, 6)"},
                   y, std::size_t(N * CO * HO * WO),
                   [&](float* p) { return fusor::host_view(p, N, CO, HO, WO); }, kTolFolded);
}

// ---------------------------------------------------------------------------
// 3. BERT-base encoder layer (post-norm), in two stages: h (attention
// sublayer) is written to a buffer that the FFN sublayer reads, as a model
// runtime keeps it.
//
// Why not one expression: h is read twice (residual and FFN input). fusor
// shares a repeated subexpression only when it is provably identical at
// compile time, which needs tagged views AND attribute-free ops
// (statically_identical_v requires std::is_empty_v<Op>); layer_norm, linear
// and attention carry attributes, so written as one expression the fused
// plan computes h's attention and output projection twice (9 kernels, the
// unfused reference 19 ops). The program prints that plan's counts below.

report bert() {
  constexpr index_t B = 1, S = 128, E = 768, F = 3072;
  constexpr int heads = 12;
  splitmix64 r{0xbe27};
  const auto x = uniform(r, std::size_t(B * S * E), -1.0f, 1.0f);
  const auto wq = weight(r, std::size_t(E * E), E), wk = weight(r, std::size_t(E * E), E),
             wv = weight(r, std::size_t(E * E), E), wo = weight(r, std::size_t(E * E), E);
  const auto bq = uniform(r, E, -0.1f, 0.1f), bk = uniform(r, E, -0.1f, 0.1f), bv = uniform(r, E, -0.1f, 0.1f),
             bo = uniform(r, E, -0.1f, 0.1f);
  const auto g1 = uniform(r, E, 0.8f, 1.2f), be1 = uniform(r, E, -0.1f, 0.1f);
  const auto w1 = weight(r, std::size_t(F * E), E), w2 = weight(r, std::size_t(E * F), F);
  const auto b1 = uniform(r, F, -0.1f, 0.1f), b2 = uniform(r, E, -0.1f, 0.1f);
  const auto g2 = uniform(r, E, 0.8f, 1.2f), be2 = uniform(r, E, -0.1f, 0.1f);
  // The intermediate h of the fused and of the unfused run (kept apart, so
  // the unfused result depends on unfused computations only).
  std::vector<float> h_fused(std::size_t(B * S * E)), h_ref(std::size_t(B * S * E));

  auto mat = [](const std::vector<float>& v, index_t rows, index_t cols) { return fusor::host_view(v.data(), rows, cols); };
  auto vec = [](const std::vector<float>& v) { return fusor::host_view(v.data(), index_t(v.size())); };
  const auto X = fusor::host_view(x.data(), B, S, E);
  const auto attn = fusor::attention_weights{mat(wq, E, E), mat(wk, E, E), mat(wv, E, E), mat(wo, E, E),
                                             vec(bq),       vec(bk),       vec(bv),       vec(bo)};
  constexpr float eps = 1e-12f;  // BERT's LayerNorm epsilon
  // Stage 1: h = layer_norm(x + attention(x)). Stage 2: y = layer_norm(h + ffn(h)), h read from a buffer.
  const auto attention_sublayer =
      fusor::layer_norm(X + fusor::multi_head_attention(X, attn, {.heads = heads}), vec(g1), vec(be1), -1, eps);
  auto ffn_sublayer = [&](const auto& h) {
    return fusor::layer_norm(
        h + fusor::linear(fusor::gelu(fusor::linear(h, mat(w1, F, E), vec(b1))), mat(w2, E, F), vec(b2)), vec(g2),
        vec(be2), -1, eps);
  };
  const auto ffn_fused = ffn_sublayer(fusor::host_view(h_fused.data(), B, S, E));
  const auto ffn_ref = ffn_sublayer(fusor::host_view(h_ref.data(), B, S, E));  // the same type, other buffer
  // The same layer as one expression: h untagged is shared by value (its two
  // uses are the same tensors at run time); tagged (fusor::tag) it is one
  // value by its type.
  using one_expression = decltype(ffn_sublayer(attention_sublayer));
  struct h_tag;
  using one_expression_tagged = decltype(ffn_sublayer(fusor::tag<h_tag>(attention_sublayer)));

  auto run = [&](const auto& ex, float* out, bool reference) {
    std::vector<float>& h = reference ? h_ref : h_fused;
    std::size_t k = fusor::run(fusor::host_view(h.data(), B, S, E), attention_sublayer, ex).kernels;
    k += fusor::run(fusor::host_view(out, B, S, E), reference ? ffn_ref : ffn_fused, ex).kernels;
    return k;
  };
  report rep = run_block(
      "bert", "BERT-base encoder layer, seq 128, hidden 768, 12 heads, FFN 3072, batch 1",
      {"computes: h = layer_norm(x + multi_head_attention(x, {.heads = 12})); y = layer_norm(h + linear(gelu(linear(h, "
       "W1, b1)), W2, b2)), x " + shape_text({B, S, E}) + ", LayerNorm eps 1e-12, GELU erf, no attention mask",
       "two fusor::run calls, h written to a buffer: written as one expression (h used twice), fusor plans " +
           std::to_string(int(fusor::unfused_kernel_count<one_expression>)) + " unfused -> " +
           std::to_string(int(fusor::kernel_count<one_expression, fusor::host_policy>)) +
           " fused kernels as written (h twice; a run shares h by value when both uses read the same tensors, "
           "fewer kernels); with h tagged (fusor::tag<h_tag>(h)) " +
           std::to_string(int(fusor::unfused_kernel_count<one_expression_tagged>)) + " unfused -> " +
           std::to_string(int(fusor::kernel_count<one_expression_tagged, fusor::host_policy>)) + " fused kernels"},
      {plan_of("h = attention sublayer", attention_sublayer), plan_of("y = FFN sublayer", ffn_fused)},
      std::size_t(B * S * E), run, kTolPlain);
  // The layer as one expression with h tagged: the same kernels as the two
  // runs (h is a temporary instead of h_fused), so the same bits.
  std::vector<float> two(std::size_t(B * S * E)), one(two.size());
  run(fusor::host(), two.data(), false);
  const std::size_t k =
      fusor::run(fusor::host_view(one.data(), B, S, E), ffn_sublayer(fusor::tag<h_tag>(attention_sublayer)), fusor::host())
          .kernels;
  const bool same = std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0;
  std::printf("  one expression, h tagged: %zu kernels, %s the two runs\n", k,
              same ? "bitwise equal to" : "DIFFERENT FROM");
  rep.agree = rep.agree && same;
  return rep;
}

// ---------------------------------------------------------------------------
// 4. Llama-style SwiGLU MLP, reduced.

report llama() {
  constexpr index_t T = 64, D = 1024, I = 2816;
  splitmix64 r{0x11a3a};
  const auto x = uniform(r, std::size_t(T * D), -1.0f, 1.0f);
  const auto w1 = weight(r, std::size_t(I * D), D), w3 = weight(r, std::size_t(I * D), D),
             w2 = weight(r, std::size_t(D * I), I);
  const auto X = fusor::host_view(x.data(), T, D);
  const auto W1 = fusor::host_view(w1.data(), I, D), W3 = fusor::host_view(w3.data(), I, D);
  const auto W2 = fusor::host_view(w2.data(), D, I);
  const auto y = fusor::linear(fusor::silu(fusor::linear(X, W1)) * fusor::linear(X, W3), W2);

  return run_expression_block("llama", "Llama-style SwiGLU MLP, hidden 1024, intermediate 2816, 64 tokens (REDUCED)",
                   {"computes: linear(silu(linear(x, W1)) * linear(x, W3), W2), x " + shape_text({T, D}) +
                        ", no biases",
                    "REDUCED from Llama-7B's hidden 4096 / intermediate 11008 (16x the multiply-adds, ~16x the time "
                    "per run: its 8 runs alone would take about a minute on a 2-core host)"},
                   y, std::size_t(T * D), [&](float* p) { return fusor::host_view(p, T, D); }, kTolPlain);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  const char* const usage = "usage: model_blocks [resnet|mobilenet|bert|llama|all]   (default: all)\n";
  if (argc > 2 || (which != "resnet" && which != "mobilenet" && which != "bert" && which != "llama" && which != "all")) {
    std::fprintf(stderr, "model_blocks: unknown argument '%s'\n%s", argc > 2 ? argv[2] : which.c_str(), usage);
    return 2;
  }
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  std::printf("model_blocks: real-shape model blocks with fusor " FUSOR_VERSION_STRING
              ", fp32, deterministic random weights\n"
              "backend: host; fused = fusor::host(), reference = fusor::unfused(); %d OpenMP thread(s)\n\n",
              threads);
  try {
    bool ok = true;
    double total = 0;
    auto go = [&](const char* name, report (*block)()) {
      if (which != "all" && which != name) return;
      const report r = block();
      ok = ok && r.agree;
      total += r.seconds;
    };
    go("resnet", resnet);
    go("mobilenet", mobilenet);
    go("bert", bert);
    go("llama", llama);
    std::printf("total: %.1f s; %s\n", total, ok ? "every block agrees" : "DISAGREEMENT (see above)");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "model_blocks: error: %s\n", e.what());
    return 1;
  }
}
