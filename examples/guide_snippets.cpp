// guide_snippets: every C++ snippet of docs/user_guide.md (and the snippets of
// docs/attention.md and docs/model_blocks.md that are not quoted from another
// example or test) as real, running code. Each section runs its expressions
// on the fused host executor and checks them against fusor's unfused
// reference executor (or an independent formulation); the program prints
// "guide snippets: ok" when every check passes.
//
// The lines between `// guide-begin <name>` and `// guide-end <name>` are
// quoted in the docs; tools/check_doc_snippets.py (ctest docs.snippets)
// checks that every line of every C++ block in README.md and docs/*.md is
// found verbatim in a file under examples/ or tests/.
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

int failures = 0;

void report(const char* what, bool ok) {
  std::printf("  %-60s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) ++failures;
}

/// Deterministic values in [lo, hi).
std::vector<float> values(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  std::uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (auto& e : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    e = lo + (hi - lo) * float(s >> 40) / float(1ull << 24);
  }
  return v;
}

bool bitwise(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// |a - b| <= tol * (1 + |b|) everywhere, and no NaN.
bool close(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol * (1.0f + std::fabs(b[i])))) return false;
  return true;
}

// ---------------------------------------------------------------------------
// Views
void views() {
  std::vector<float> buf(24), out(24), ref(24);
  for (int i = 0; i < 24; ++i) buf[std::size_t(i)] = float(i);
  float* ptr = buf.data();
  const fusor::index_t n = 24, rows = 4, cols = 6;
  // guide-begin views
  auto x = fusor::host_view(ptr, n);                                    // rank 1, dynamic extent
  auto m = fusor::host_view(ptr, rows, cols);                           // rank 2, row-major [4, 6]
  auto s = fusor::host_view(ptr, fusor::extents<4, fusor::dyn>(cols));  // static 4 x dynamic 6
  auto t = fusor::host_view(ptr, fusor::extents<fusor::dyn, fusor::dyn>(cols, rows),
                            fusor::shape<2>{1, cols});                  // strides in elements: m transposed, [6, 4]
  auto r = fusor::host_view(ptr, fusor::extents<fusor::dyn, fusor::dyn>(rows, cols),
                            fusor::shape<2>{0, 1});                     // stride 0: row 0 repeated 4 times
  struct M;
  auto mt = m.with_id<M>();                                             // identity tag: "the same tensor"
  // guide-end views
  static_assert(fusor::rank_v<decltype(x)> == 1 && fusor::rank_v<decltype(s)> == 2);
  fusor::run(fusor::host_view(out.data(), cols, rows), fusor::relu(t), fusor::host());
  bool ok = true;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) ok = ok && out[std::size_t(j * rows + i)] == buf[std::size_t(i * cols + j)];
  report("views: a strided view is a transpose", ok);
  fusor::run(fusor::host_view(out.data(), rows, cols), m - r, fusor::host());
  ok = true;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) ok = ok && out[std::size_t(i * cols + j)] == float(i * cols);
  report("views: a stride-0 view broadcasts a row", ok);
  fusor::run(fusor::host_view(out.data(), rows, cols), mt * mt + s, fusor::host());
  fusor::run(fusor::host_view(ref.data(), rows, cols), mt * mt + s, fusor::unfused());
  report("views: tagged and static views, fused == unfused", bitwise(out, ref));
}

// ---------------------------------------------------------------------------
// Expressions, constants, running, siblings
void expressions() {
  const fusor::index_t rows = 4, cols = 6, n = rows * cols;
  const auto as = values(std::size_t(n), 1, -3.0f, 3.0f), bs = values(std::size_t(cols), 2);
  const std::size_t size = std::size_t(n);
  std::vector<float> out(size), ref(size), y1(size), y2(size), u1(size), u2(size);
  // guide-begin expressions
  using namespace fusor::literals;
  struct A;                                                               // a is used twice in e2: tag it
  auto a = fusor::host_view(as.data(), rows, cols).with_id<A>();
  auto bias = fusor::host_view(bs.data(), cols);                          // [6] broadcasts against [4, 6]
  auto e1 = fusor::clip(a * 0.5f + bias, -1.0f, 1.0f);                    // 0.5f: a run-time scalar
  auto e2 = 0.5_c * a * (1.0_c + fusor::erf(a * 0.7071067811865476_c));  // _c: compile-time constants
  static_assert(fusor::kernel_count<decltype(e1)> == 1);                  // one kernel, decided at compile time
  static_assert(fusor::unfused_kernel_count<decltype(e1)> == 3);          // mul, add, clip
  std::string text = fusor::explain(e2);                                  // "0.5*x*(1+erf(x/sqrt(2))) -> gelu(x)"
  // guide-end expressions
  report("expressions: the written-out GELU is recognised", text.find("-> gelu(x)") != std::string::npos);

  // guide-begin run
  auto ex = fusor::host();                                                // fused kernels, OpenMP threads
  fusor::run_result r = fusor::run(fusor::host_view(out.data(), rows, cols), e1, ex);
  fusor::run_result u = fusor::run(fusor::host_view(ref.data(), rows, cols), e1, fusor::unfused());
  // r.kernels == 1, u.kernels == 3, ex.launches == 1; out and ref are bitwise equal
  // guide-end run
  report("run: fused 1 kernel, unfused 3, bitwise equal",
         r.kernels == 1 && u.kernels == 3 && ex.launches == 1 && bitwise(out, ref));
  fusor::run(fusor::host_view(out.data(), rows, cols), e2, fusor::host(1));
  fusor::run(fusor::host_view(ref.data(), rows, cols), fusor::gelu(a), fusor::unfused());
  report("run: written-out GELU == gelu(a), bitwise", bitwise(out, ref));

  struct X;
  auto x = fusor::host_view(as.data(), n).with_id<X>();
  auto z = fusor::host_view(ref.data(), n);
  // guide-begin siblings
  auto both = fusor::siblings(fusor::silu(x), fusor::sigmoid(x) * z);   // two results, one kernel, x read once
  auto outs = fusor::outputs(fusor::host_view(y1.data(), n), fusor::host_view(y2.data(), n));
  static_assert(fusor::kernel_count<decltype(both)> == 1);
  fusor::run_result rs = fusor::run(outs, both, fusor::host());
  // guide-end siblings
  const auto us = fusor::run(fusor::outputs(fusor::host_view(u1.data(), n), fusor::host_view(u2.data(), n)), both,
                             fusor::unfused());
  report("siblings: one kernel, fused == unfused", rs.kernels == 1 && us.kernels == 3 && bitwise(y1, u1) && bitwise(y2, u2));
}

// ---------------------------------------------------------------------------
// Pattern library: reductions with prologue and epilogue
void reductions() {
  const fusor::index_t rows = 8, cols = 32;
  const auto xs = values(std::size_t(rows * cols), 3, -2.0f, 2.0f), rs = values(std::size_t(rows * cols), 4),
             gs = values(std::size_t(cols), 5, 0.5f, 1.5f), bs = values(std::size_t(cols), 6);
  std::vector<float> out(std::size_t(rows * cols)), ref(std::size_t(rows * cols));
  // guide-begin reductions
  struct Xt;
  auto x = fusor::host_view(xs.data(), rows, cols).with_id<Xt>();
  auto res = fusor::host_view(rs.data(), rows, cols);
  auto gamma = fusor::host_view(gs.data(), cols), beta = fusor::host_view(bs.data(), cols);
  auto ln = fusor::layer_norm(x, gamma, beta) + res;        // the residual add is the norm's epilogue
  auto rms = fusor::sqrt(fusor::mean(x * x, {1}) + 1e-5f);  // prologue x*x, epilogue sqrt(. + eps): [rows, 1]
  auto mse = fusor::mean(fusor::square(x - res), {1});      // the difference and square: prologue
  auto centered = x - fusor::max_reduce(x, {1});            // a reduced value broadcast back to [rows, cols]
  static_assert(fusor::kernel_count<decltype(ln)> == 1 && fusor::unfused_kernel_count<decltype(ln)> == 2);
  static_assert(fusor::kernel_count<decltype(rms)> == 1 && fusor::unfused_kernel_count<decltype(rms)> == 4);
  static_assert(fusor::kernel_count<decltype(mse)> == 1);
  static_assert(fusor::kernel_count<decltype(centered)> == 2);  // the max keeps a kernel of its own
  // guide-end reductions
  auto check = [&](const char* what, const auto& e, fusor::index_t out_cols, std::size_t kernels) {
    const auto r = fusor::run(fusor::host_view(out.data(), rows, out_cols), e, fusor::host());
    fusor::run(fusor::host_view(ref.data(), rows, out_cols), e, fusor::unfused());
    report(what, r.kernels == kernels && bitwise(out, ref));
  };
  check("reductions: layer_norm(x) + r, one kernel, fused == unfused", ln, cols, 1);
  check("reductions: sqrt(mean(x*x) + eps), one kernel, fused == unfused", rms, 1, 1);
  check("reductions: mean((x - r)^2), one kernel, fused == unfused", mse, 1, 1);
  check("reductions: x - max(x), two kernels, fused == unfused", centered, cols, 2);
}

// ---------------------------------------------------------------------------
// Pattern library: contractions
void contractions() {
  const fusor::index_t M = 16, K = 24, N = 20;
  const auto xs = values(std::size_t(M * K), 7), ws = values(std::size_t(N * K), 8, -0.3f, 0.3f),
             w3s = values(std::size_t(N * K), 9, -0.3f, 0.3f), bs = values(std::size_t(N), 10),
             rs = values(std::size_t(M * N), 11), gs = values(std::size_t(K), 12, 0.5f, 1.5f),
             betas = values(std::size_t(K), 13), cs = values(std::size_t(M * N), 14);
  std::vector<float> out(std::size_t(M * N)), ref(std::size_t(M * N));
  // guide-begin contractions
  auto x = fusor::host_view(xs.data(), M, K);
  auto W = fusor::host_view(ws.data(), N, K);             // nn.Linear layout: [out, in]
  auto W3 = fusor::host_view(w3s.data(), N, K);
  auto b = fusor::host_view(bs.data(), N);
  auto res = fusor::host_view(rs.data(), M, N);
  auto g = fusor::host_view(gs.data(), K), beta = fusor::host_view(betas.data(), K);
  auto epi = fusor::gelu(fusor::linear(x, W, b)) + res;                   // bias, GELU, residual: the GEMM's epilogue
  auto pro = fusor::linear(fusor::layer_norm(x, g, beta), W, b);          // LayerNorm computed while loading x
  auto viaT = fusor::relu(fusor::matmul(x, fusor::transpose(W)) + b);     // canonicalized to linear(x, W, b)
  auto swiglu = fusor::silu(fusor::linear(x, W)) * fusor::linear(x, W3);  // two contractions: two kernels
  auto onnx = fusor::gemm(x, W, res, {.alpha = 0.5f, .beta = 2.0f, .trans_b = true});  // ONNX Gemm
  static_assert(fusor::kernel_count<decltype(epi)> == 1 && fusor::unfused_kernel_count<decltype(epi)> == 3);
  static_assert(fusor::kernel_count<decltype(pro)> == 1 && fusor::unfused_kernel_count<decltype(pro)> == 2);
  static_assert(fusor::kernel_count<decltype(viaT)> == 1);
  static_assert(fusor::kernel_count<decltype(swiglu)> == 2 && fusor::unfused_kernel_count<decltype(swiglu)> == 4);
  static_assert(std::is_same_v<fusor::root_rule_t<decltype(epi)>, fusor::rule::contraction>);
  // guide-end contractions
  (void)cs;
  auto check = [&](const char* what, const auto& e, std::size_t kernels, float tol) {
    const auto r = fusor::run(fusor::host_view(out.data(), M, N), e, fusor::host());
    fusor::run(fusor::host_view(ref.data(), M, N), e, fusor::unfused());
    report(what, r.kernels == kernels && (tol == 0.0f ? bitwise(out, ref) : close(out, ref, tol)));
  };
  check("contractions: GEMM epilogue, 1 kernel, fused == unfused", epi, 1, 0.0f);
  check("contractions: LayerNorm -> Linear, 1 kernel, fused == unfused", pro, 1, 0.0f);
  check("contractions: matmul(x, transpose(W)) + b, 1 kernel", viaT, 1, 0.0f);
  check("contractions: SwiGLU, 2 kernels, fused == unfused", swiglu, 2, 0.0f);
  check("contractions: ONNX gemm, 1 kernel, fused == unfused", onnx, 1, 0.0f);
}

void convolutions() {
  const fusor::index_t C = 8, H = 6, Wd = 6, P = 12;
  const auto is = values(std::size_t(C * H * Wd), 15), ws = values(std::size_t(C * C * 9), 16, -0.3f, 0.3f),
             cbs = values(std::size_t(C), 17), dws = values(std::size_t(C * 9), 18, -0.5f, 0.5f),
             pws = values(std::size_t(P * C), 19, -0.4f, 0.4f), gam = values(std::size_t(C), 20, 0.5f, 1.5f),
             bet = values(std::size_t(C), 21), mu = values(std::size_t(C), 22, -0.2f, 0.2f),
             var = values(std::size_t(C), 23, 0.5f, 2.0f);
  std::vector<float> o(std::size_t(C * H * Wd)), ref(std::size_t(C * H * Wd)), o2(std::size_t(P * H * Wd)),
      ref2(std::size_t(P * H * Wd));
  // guide-begin conv-bn
  auto img = fusor::host_view(is.data(), 1, C, H, Wd);  // NCHW
  auto w = fusor::host_view(ws.data(), C, C, 3, 3);     // OIHW
  auto cb = fusor::host_view(cbs.data(), C);
  auto bn = fusor::batch_norm_params{fusor::host_view(gam.data(), C), fusor::host_view(bet.data(), C),
                                     fusor::host_view(mu.data(), C), fusor::host_view(var.data(), C)};
  auto block = fusor::relu(fusor::batch_norm(fusor::conv2d(img, w, cb, {.padding = {1, 1, 1, 1}}), bn));
  static_assert(fusor::kernel_count<decltype(block)> == 1);         // BN folded into the conv, ReLU as epilogue
  static_assert(fusor::unfused_kernel_count<decltype(block)> == 3); // conv, batch_norm, relu
  auto out = fusor::host_view(o.data(), 1, C, H, Wd);
  auto ex = fusor::host();
  std::size_t first = fusor::run(out, block, ex).kernels;  // 3: folded weights, folded bias, conv + ReLU
  std::size_t later = fusor::run(out, block, ex).kernels;  // 1: the executor cached the folded weights
  ex.clear_prepared();                                     // after changing w, cb or bn's views in place
  // guide-end conv-bn
  const auto u = fusor::run(fusor::host_view(ref.data(), 1, C, H, Wd), block, fusor::unfused());
  report("conv-bn: first run 3 kernels, later 1, unfused 3; fused ~ unfused",
         first == 3 && later == 1 && u.kernels == 3 && fusor::run(out, block, ex).kernels == 3 && close(o, ref, 1e-5f));

  // guide-begin depthwise-pointwise
  auto dw = fusor::host_view(dws.data(), C, 1, 3, 3);   // depthwise: [C, 1, kh, kw]
  auto pw = fusor::host_view(pws.data(), P, C, 1, 1);   // pointwise 1x1: [P, C, 1, 1]
  auto relu6 = fusor::clip(fusor::batch_norm(fusor::depthwise_conv2d(img, dw, nullptr, {.padding = {1, 1, 1, 1}}), bn), 0.0f, 6.0f);
  auto mbconv = fusor::conv2d(relu6, pw);               // the depthwise result is computed in pw's loads
  static_assert(fusor::kernel_count<decltype(mbconv)> == 1 && fusor::unfused_kernel_count<decltype(mbconv)> == 4);
  // guide-end depthwise-pointwise
  const auto r2 = fusor::run(fusor::host_view(o2.data(), 1, P, H, Wd), mbconv, fusor::host());
  const auto u2 = fusor::run(fusor::host_view(ref2.data(), 1, P, H, Wd), mbconv, fusor::unfused());
  report("depthwise -> pointwise: 1 kernel (+2 folding), unfused 4; fused ~ unfused",
         r2.kernels == 3 && u2.kernels == 4 && close(o2, ref2, 1e-5f));
}

// ---------------------------------------------------------------------------
// Pattern library: attention (docs/attention.md quotes these lines)
void attention() {
  constexpr fusor::index_t B = 1, H = 2, S = 5, D = 8;
  const std::size_t n4 = std::size_t(B * H * S * D);
  const auto qs = values(n4, 24), ks = values(n4, 25), vs = values(n4, 26);
  std::vector<float> causal_mask(std::size_t(S * S)), zero_mask(std::size_t(S * S), 0.0f);
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < S; ++j)
      causal_mask[std::size_t(i * S + j)] = j <= i ? 0.0f : -std::numeric_limits<float>::infinity();
  std::vector<float> o_buf(n4), ref(n4), o2_buf(n4), ref2(n4);
  {
    auto q = fusor::host_view(qs.data(), B, H, S, D);
    auto k = fusor::host_view(ks.data(), B, H, S, D);
    auto v = fusor::host_view(vs.data(), B, H, S, D);
    auto mask = fusor::host_view(causal_mask.data(), S, S);
    const float s = 1.0f / std::sqrt(float(D));
    // guide-begin attention
    // q [B, Hq, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] (bhsd)
    auto o = fusor::scaled_dot_product_attention(q, k, v, {.causal = true});
    // [B, S, H, D] operands
    auto o2 = fusor::scaled_dot_product_attention(q, k, v, {.layout = fusor::attention_layout::bshd});
    // guide-end attention
    static_assert(fusor::kernel_count<decltype(o)> == 1);
    // guide-begin attention-by-hand
    auto hand = fusor::matmul(fusor::softmax(fusor::matmul(q, fusor::transpose(k)) * s + mask), v);
    static_assert(fusor::kernel_count<decltype(hand)> == 1);           // recognised: one flash-attention kernel
    static_assert(fusor::unfused_kernel_count<decltype(hand)> == 5);  // matmul, mul, add, softmax, matmul
    // guide-end attention-by-hand
    const auto r = fusor::run(fusor::host_view(o_buf.data(), B, H, S, D), o, fusor::host());
    const auto u = fusor::run(fusor::host_view(ref.data(), B, H, S, D), hand, fusor::unfused());
    report("attention: causal SDPA == softmax(q k^T s + causal mask) v (unfused)",
           r.kernels == 1 && u.kernels == 5 && close(o_buf, ref, 1e-5f));
    const auto rh = fusor::run(fusor::host_view(o2_buf.data(), B, H, S, D), hand, fusor::host());
    report("attention: hand-written form, 1 kernel, fused ~ unfused", rh.kernels == 1 && close(o2_buf, ref, 1e-5f));
    // bshd: the same data read as [B, S=H, H=S, D]; reference: the bhsd
    // computation on the permuted operands.
    fusor::run(fusor::host_view(o2_buf.data(), B, H, S, D), o2, fusor::host());
    auto permute = [&](const std::vector<float>& a) {  // [1, H, S, D] read as bshd [1, S'=H, H'=S, D] -> bhsd [1, S, H, D]
      std::vector<float> p(a.size());
      for (int h = 0; h < H; ++h)
        for (int s2 = 0; s2 < S; ++s2)
          for (int d = 0; d < D; ++d) p[std::size_t((s2 * H + h) * D + d)] = a[std::size_t((h * S + s2) * D + d)];
      return p;
    };
    const auto qp = permute(qs), kp = permute(ks), vp = permute(vs);
    auto qb = fusor::host_view(qp.data(), B, S, H, D), kb = fusor::host_view(kp.data(), B, S, H, D),
         vb = fusor::host_view(vp.data(), B, S, H, D);
    auto zmask = fusor::host_view(zero_mask.data(), H, H);
    const float sb = 1.0f / std::sqrt(float(D));
    std::vector<float> refp(n4);
    fusor::run(fusor::host_view(refp.data(), B, S, H, D),
               fusor::matmul(fusor::softmax(fusor::matmul(qb, fusor::transpose(kb)) * sb + zmask), vb), fusor::unfused());
    report("attention: bshd layout == bhsd on permuted operands", close(permute(o2_buf), refp, 1e-5f));
  }
  {
    constexpr fusor::index_t heads = 8, kv_heads = 2;
    const auto qs3 = values(std::size_t(B * S * heads * D), 27), ks3 = values(std::size_t(B * S * kv_heads * D), 28),
               vs3 = values(std::size_t(B * S * kv_heads * D), 29), ms = values(std::size_t(S * S), 30);
    std::vector<float> o3_buf(std::size_t(B * S * heads * D)), ref3(o3_buf.size());
    auto q = fusor::host_view(qs3.data(), B, S, heads * D);
    auto k = fusor::host_view(ks3.data(), B, S, kv_heads * D);
    auto v = fusor::host_view(vs3.data(), B, S, kv_heads * D);
    auto mask = fusor::host_view(ms.data(), S, S);
    // guide-begin attention-packed
    // packed [B, S, H * D] operands (what a projection GEMM writes), grouped-query
    auto o3 = fusor::scaled_dot_product_attention(q, k, v, {.heads = 8, .kv_heads = 2}, mask);
    // guide-end attention-packed
    const auto r = fusor::run(fusor::host_view(o3_buf.data(), B, S, heads * D), o3, fusor::host());
    const auto u = fusor::run(fusor::host_view(ref3.data(), B, S, heads * D), o3, fusor::unfused());
    report("attention: packed GQA with a mask, fused ~ unfused", r.kernels == 1 && u.kernels == 1 && close(o3_buf, ref3, 1e-5f));
  }
  {
    constexpr fusor::index_t E = 48;
    const auto xs = values(std::size_t(B * S * E), 31);
    const auto w4 = values(std::size_t(4 * E * E), 32, -0.2f, 0.2f), b4 = values(std::size_t(4 * E), 33, -0.1f, 0.1f);
    std::vector<float> y_buf(xs.size()), ref_y(xs.size());
    auto x = fusor::host_view(xs.data(), B, S, E);
    auto wq = fusor::host_view(w4.data(), E, E), wk = fusor::host_view(w4.data() + E * E, E, E),
         wv = fusor::host_view(w4.data() + 2 * E * E, E, E), wo = fusor::host_view(w4.data() + 3 * E * E, E, E);
    auto bq = fusor::host_view(b4.data(), E), bk = fusor::host_view(b4.data() + E, E),
         bv = fusor::host_view(b4.data() + 2 * E, E), bo = fusor::host_view(b4.data() + 3 * E, E);
    // guide-begin mha
    auto w = fusor::attention_weights{wq, wk, wv, wo, bq, bk, bv, bo};
    auto y = fusor::multi_head_attention(x, w, {.causal = true, .heads = 12}) + x;  // x [B, S, E]
    static_assert(fusor::kernel_count<decltype(y)> == 3);
    // guide-end mha
    const auto r = fusor::run(fusor::host_view(y_buf.data(), B, S, E), y, fusor::host());
    const auto u = fusor::run(fusor::host_view(ref_y.data(), B, S, E), y, fusor::unfused());
    report("attention: multi_head_attention + x, 3 kernels (unfused 6)",
           r.kernels == 3 && u.kernels == 6 && close(y_buf, ref_y, 1e-5f));
  }
}

// ---------------------------------------------------------------------------
// The cost model and how to override it; static vs dynamic shapes

// guide-begin device-model
struct small_gpu {  // an H100 with 30 registers per thread
  static constexpr fusor::device_model model = [] {
    fusor::device_model m = fusor::models::h100_sxm::model;
    m.name = "H100, 30 registers per thread";
    m.max_registers_per_thread = 30;
    return m;
  }();
};
using small_gpu_policy = fusor::for_model<fusor::fused_policy, small_gpu>;
// guide-end device-model

void cost_model() {
  const fusor::index_t n = 4099;
  const auto xs = values(std::size_t(n), 34, -3.0f, 3.0f), zs = values(std::size_t(n), 35);
  const std::size_t size = std::size_t(n);
  std::vector<float> out(size), ref(size);
  struct X;
  struct Z;
  auto x = fusor::host_view(xs.data(), n).with_id<X>();
  auto z = fusor::host_view(zs.data(), n).with_id<Z>();
  // guide-begin overrides
  auto plain = fusor::relu(fusor::gelu(x * 2.0f + z)) * fusor::sigmoid(x);                           // 1 kernel
  auto forced = fusor::relu(fusor::materialize(fusor::gelu(x * 2.0f + z))) * fusor::sigmoid(x);      // 2 kernels
  static_assert(fusor::kernel_count<decltype(plain)> == 1 && fusor::kernel_count<decltype(forced)> == 2);
  static_assert(fusor::kernel_count<decltype(plain), fusor::host_policy> == 1);  // planned for the host CPU
  auto deep = fusor::exp(fusor::tanh(fusor::exp(fusor::tanh(x)))) + fusor::exp(fusor::tanh(fusor::exp(fusor::tanh(z))));
  auto kept = fusor::fuse(fusor::exp(fusor::tanh(fusor::exp(fusor::tanh(x))))) + fusor::fuse(fusor::exp(fusor::tanh(fusor::exp(fusor::tanh(z)))));
  static_assert(fusor::kernel_count<decltype(deep)> == 1);                     // H100: fits in 255 registers
  static_assert(fusor::kernel_count<decltype(deep), small_gpu_policy> >= 2);   // register budget exceeded: split
  static_assert(fusor::kernel_count<decltype(kept), small_gpu_policy> == 1);   // fusor::fuse overrides the budget
  auto on_model = fusor::with_policy<fusor::for_model<fusor::host_policy, small_gpu>>(fusor::host());
  fusor::run(fusor::host_view(out.data(), n), deep, on_model);                  // runs on the host, plans for small_gpu
  // guide-end overrides
  fusor::run(fusor::host_view(ref.data(), n), deep, fusor::unfused());
  report("cost model: the register budget splits, values unchanged", bitwise(out, ref) && on_model.launches >= 2);
  const auto rk = fusor::run(fusor::host_view(out.data(), n), kept, on_model);
  report("cost model: fusor::fuse keeps one kernel, values unchanged", bitwise(out, ref) && rk.kernels == 1);
  fusor::run(fusor::host_view(out.data(), n), forced, fusor::host());
  fusor::run(fusor::host_view(ref.data(), n), plain, fusor::unfused());
  report("cost model: materialize changes kernels, not values", bitwise(out, ref));
  report("cost model: explain gives the reason",
         fusor::explain<fusor::host_policy>(forced).find("forced by fusor::materialize") != std::string::npos);
}

void shapes() {
  constexpr std::size_t big = std::size_t(1) << 20;
  const auto xs = values(big, 36, -2.0f, 2.0f);
  std::vector<float> out(big), ref(big);
  const fusor::index_t n = 1000;
  // guide-begin dynamic
  struct X;
  auto xd = fusor::host_view(xs.data(), n).with_id<X>();                          // dynamic extent
  auto g = fusor::gelu(fusor::tanh(fusor::gelu(xd)));                             // an expensive producer ...
  auto dyn = g * g + fusor::sqrt(g);                                              // ... used three times
  static_assert(fusor::plan_is_dynamic_v<decltype(dyn), fusor::host_policy>);    // recompute or materialize: per run
  std::size_t k = fusor::run(fusor::host_view(out.data(), n), dyn, fusor::host()).kernels;  // 1 here: recompute
  std::string why = fusor::explain<fusor::host_policy>(dyn);                      // "plan chosen at run time ..."
  auto gm = fusor::materialize(fusor::gelu(fusor::tanh(fusor::gelu(xd))));         // decide it yourself:
  static_assert(fusor::kernel_count<decltype(gm * gm + fusor::sqrt(gm)), fusor::host_policy> == 2);  // static again
  // guide-end dynamic
  fusor::run(fusor::host_view(ref.data(), n), dyn, fusor::unfused());
  report("shapes: dynamic plan, small n: 1 kernel, bitwise equal",
         k == 1 && why.find("plan chosen at run time") != std::string::npos && bitwise(out, ref));
  auto xl = fusor::host_view(xs.data(), fusor::index_t(big)).with_id<X>();
  auto gl = fusor::gelu(fusor::tanh(fusor::gelu(xl)));
  const auto kl = fusor::run(fusor::host_view(out.data(), fusor::index_t(big)), gl * gl + fusor::sqrt(gl), fusor::host());
  fusor::run(fusor::host_view(ref.data(), fusor::index_t(big)), gl * gl + fusor::sqrt(gl), fusor::unfused());
  report("shapes: the same type, 2^20 elements: 2 kernels, bitwise equal", kl.kernels == 2 && bitwise(out, ref));

  // guide-begin static
  auto xs20 = fusor::host_view(xs.data(), fusor::extents<(1 << 20)>{}).with_id<X>();  // static extent
  auto gs = fusor::gelu(fusor::tanh(fusor::gelu(xs20)));
  auto stat = gs * gs + fusor::sqrt(gs);
  static_assert(fusor::kernel_count<decltype(stat), fusor::host_policy> == 2);  // host: materialize gs once
  static_assert(fusor::kernel_count<decltype(stat)> == 1);                      // H100 (the default): recompute
  // guide-end static
  const auto ks = fusor::run(fusor::host_view(out.data(), fusor::extents<(1 << 20)>{}), stat, fusor::host());
  report("shapes: static plan, 2 kernels on the host, bitwise equal", ks.kernels == 2 && bitwise(out, ref));
}

// ---------------------------------------------------------------------------
// Sharing a repeated subexpression (docs/model_blocks.md quotes these lines)
void sharing() {
  const fusor::index_t M = 6, K = 8;
  const auto xs = values(std::size_t(M * K), 37), ws = values(std::size_t(K * K), 38, -0.3f, 0.3f);
  const float* x = xs.data();
  const float* w = ws.data();
  const std::size_t size = std::size_t(M * K);
  std::vector<float> out(size), ref(size);
  // guide-begin sharing
  struct XT; struct WT;
  auto X = fusor::host_view(x, M, K).with_id<XT>();
  auto W = fusor::host_view(w, K, K).with_id<WT>();
  auto h  = fusor::linear(X, W);                   // op with an attribute (has_bias)
  auto ya = h + fusor::linear(h, W);               // kernel_count 3, unfused_kernel_count 4; run: 2 (shared by value)
  auto h3 = fusor::relu(fusor::matmul(X, W));      // attribute-free ops
  auto yc = h3 + fusor::matmul(h3, W);             // kernel_count 2, unfused_kernel_count 4: shared by type
  auto yb = fusor::softmax(X, -1) + fusor::linear(fusor::softmax(X, -1), W);  // 3 and 4; run: 2 (by value)
  struct ST;
  auto s  = fusor::tag<ST>(fusor::softmax(X, -1)); // a tag names the value: one softmax
  auto yt = s + fusor::linear(s, W);               // kernel_count 2, unfused_kernel_count 4: shared
  // guide-end sharing
  using hp = fusor::host_policy;
  static_assert(fusor::kernel_count<decltype(ya), hp> == 3 && fusor::unfused_kernel_count<decltype(ya)> == 4);
  static_assert(fusor::kernel_count<decltype(yc), hp> == 2 && fusor::unfused_kernel_count<decltype(yc)> == 4);
  static_assert(fusor::kernel_count<decltype(yb), hp> == 3 && fusor::unfused_kernel_count<decltype(yb)> == 4);
  static_assert(fusor::kernel_count<decltype(yt), hp> == 2 && fusor::unfused_kernel_count<decltype(yt)> == 4);
  bool ok = true;
  auto check = [&](const auto& e) {
    fusor::run(fusor::host_view(out.data(), M, K), e, fusor::host());
    fusor::run(fusor::host_view(ref.data(), M, K), e, fusor::unfused());
    ok = ok && close(out, ref, 1e-5f);
  };
  check(ya);
  check(yc);
  check(yb);
  check(yt);
  {
    const auto r = fusor::run(fusor::host_view(out.data(), M, K), yt, fusor::host());
    ok = ok && r.kernels == 2;
    const auto u = fusor::run(fusor::host_view(ref.data(), M, K), yb, fusor::host());
    ok = ok && u.kernels == 2 && close(out, ref, 0.0f);  // tagged or shared by value: the same values
  }
  [&](const auto& X) {  // an untagged view (a tagged X - m would be a shared producer priced per run)
    // docs/user_guide.md, "Repeated subexpressions by value"
    auto m = fusor::mean(X, {1});
    auto y = (X - m) * (X - m) + m;  // 2 kernels: the mean once, then one elementwise kernel
    static_assert(fusor::kernel_count<decltype(y), hp> == 4);  // the written form: an upper bound
    const auto r = fusor::run(fusor::host_view(out.data(), M, K), y, fusor::host());
    fusor::run(fusor::host_view(ref.data(), M, K), y, fusor::unfused());
    ok = ok && r.kernels == 2 && close(out, ref, 0.0f);  // bitwise: each mean is the same computation
  }(fusor::host_view(x, M, K));
  report("sharing: repeated subexpressions, fused ~ unfused", ok);
}

// ---------------------------------------------------------------------------
// Errors
void errors() {
  std::vector<float> as(4, 1.0f), bs(5, 2.0f), out(4, -1.0f), big(8, 0.0f);
  auto a = fusor::host_view(as.data(), 4);
  auto b = fusor::host_view(bs.data(), 5);
  // guide-begin errors
  try {
    fusor::run(fusor::host_view(out.data(), 4), a + b, fusor::host());  // [4] + [5]
  } catch (const fusor::shape_error& e) {
    std::printf("  %s\n", e.what());  // fusor: add: operand shapes [4] and [5] do not broadcast ...
  }
  auto lhs = fusor::host_view(big.data(), 4);
  auto rhs = fusor::host_view(big.data() + 2, 4);                       // overlaps lhs partially
  try {
    fusor::run(rhs, fusor::relu(lhs), fusor::host());
  } catch (const fusor::error& e) {                                     // base of every fusor exception
    std::printf("  %s\n", e.what());  // fusor: run: output 0 (f32[4]) partially overlaps input 0 of relu ...
  }
  // guide-end errors
  bool shape = false, overlap = false;
  try {
    fusor::run(fusor::host_view(out.data(), 4), a + b, fusor::host());
  } catch (const fusor::shape_error& e) {
    shape = std::string(e.what()).rfind("fusor: add", 0) == 0;
  }
  try {
    fusor::run(rhs, fusor::relu(lhs), fusor::host());
  } catch (const fusor::argument_error&) {
    overlap = true;
  }
  bool untouched = true;
  for (float v : out) untouched = untouched && v == -1.0f;
  for (float v : big) untouched = untouched && v == 0.0f;
  report("errors: shape_error and argument_error before any kernel", shape && overlap && untouched);
}

}  // namespace

int main() {
  std::puts("guide snippets (docs/user_guide.md, docs/attention.md, docs/model_blocks.md):");
  views();
  expressions();
  reductions();
  contractions();
  convolutions();
  attention();
  cost_model();
  shapes();
  sharing();
  errors();
  if (failures) {
    std::printf("guide snippets: %d check(s) FAILED\n", failures);
    return 1;
  }
  std::puts("guide snippets: ok");
  return 0;
}
