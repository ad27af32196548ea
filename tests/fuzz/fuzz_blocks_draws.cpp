// Block fuzzer: fusor's fused host plan (fusor::host()) against the unfused
// reference (fusor::unfused()) for random expressions around the non-
// elementwise op families: reductions (sum, mean, max, min, sum_square, l2,
// logsumexp over run-time axes, with or without keepdims), softmax and
// log_softmax, layer_norm, rms_norm, instance_norm, batch_norm, matmul (batch
// broadcasting, transposed weight views), linear, gemm, conv2d (NCHW/NHWC,
// stride, asymmetric padding, dilation, groups), depthwise conv2d, conv2d +
// batch_norm (BN folding), scaled_dot_product_attention (bhsd, bshd, packed,
// GQA, causal, masks) and attention written by hand, each with elementwise
// prologues and epilogues. The structures are generated (gen_fuzz_blocks.py
// -> fuzz_blocks_cases.inc); each draw (a pure function of case and seed)
// draws the geometry, the attributes, extents including 0 and 1, strides
// (row-major, permuted, padded, zero-stride, odd strides on extent-1 dims),
// misaligned data, values (NaN, +-Inf, denormals, extremes) and scalars.
//
// Comparison (README.md, "fuzz_blocks"):
//  - BITWISE (NaN == NaN, any payload) for every family except the two below:
//    fusor documents fused and unfused host results as bitwise equal for
//    reductions/normalizations (same row algorithm, same order), contractions
//    without BN folding (same tile algorithm, k ascending; docs/contractions.md
//    "Numerics") and scaled_dot_product_attention (the unfused executor runs
//    the same flash kernel; tests/host/test_attention.cpp). Prologues and
//    epilogues are exact in both (temporaries of unfused() are kept in compute
//    precision).
//  - BOUNDED for conv2d + batch_norm (host() folds the BN into the weights:
//    W * k and the folded bias are rounded once more, docs/contractions.md) and
//    for attention written by hand (host() runs the flash kernel's online
//    softmax, unfused() runs matmul, mul, add, softmax, matmul). NaN positions
//    must match exactly, infinities must be equal, and finite values must
//    differ by at most the per-element bound computed here in float64 from the
//    inputs (see conv_bn_bound and attention_bound: first-order rounding-error
//    bounds of both computations, after Higham, "Accuracy and Stability of
//    Numerical Algorithms", eq. 3.5; the same bounds as test_contractions.cpp
//    and test_attention.cpp). These cases draw finite values (a NaN in some
//    draws, -inf in masks) and only 1-Lipschitz epilogues (relu, clip,
//    residual add), which do not enlarge an absolute error.
// Also: no write outside the output view (inputs unchanged: collect()), the
// fused plan launches no more kernels than unfused (for BN folding: the
// second run on the same executor, whose prepared weights are cached, and
// the first and second runs must agree bitwise), and any exception fails.
//
// This file: geometry, values, bounds, comparison and reports (plan_block,
// plan_block_output, judge_block) and the suite description for fuzz_cli
// (blocks_suite). main() is fuzz_blocks_main.cpp; fuzz_gpu reuses the draws.
#include "fuzz_cli.hpp"
#include "fuzz_blocks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace fz {


const char* family_name(family f) {
  switch (f) {
    case family::reduce: return "reduce";
    case family::softmax: return "softmax";
    case family::layer_norm: return "layer_norm";
    case family::rms_norm: return "rms_norm";
    case family::instance_norm: return "instance_norm";
    case family::batch_norm: return "batch_norm";
    case family::matmul: return "matmul";
    case family::linear: return "linear";
    case family::gemm: return "gemm";
    case family::conv2d: return "conv2d";
    case family::depthwise: return "depthwise";
    case family::conv_bn: return "conv_bn";
    case family::sdpa: return "sdpa";
    case family::attn_hand: return "attn_hand";
    case family::norm_linear: return "norm_linear";
    case family::swiglu: return "swiglu";
    case family::linear_norm: return "linear_norm";
    case family::dwpw: return "dwpw";
    case family::mha: return "mha";
    case family::reduce_chain: return "reduce_chain";
  }
  return "?";
}

namespace {

constexpr double u32 = 0x1p-24;  // fp32 unit roundoff

struct bstats {
  long long draws = 0, empty = 0, nan_outputs = 0, bounded = 0, bounded_differ = 0, large = 0, several_kernels = 0,
            in_place = 0, shared_inputs = 0;
  double worst_ratio = 0;  // largest |fused - unfused| / bound of the bounded families
  int worst_case = -1;
  std::uint64_t worst_seed = 0;
} g_bstats;

using shp = std::vector<std::int64_t>;

std::string shape_text(const shp& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// An extent: 0 with probability p0, 1 with p1, else uniform in [lo, hi].
std::int64_t ext(rng& r, int lo, int hi, double p0 = 0.03, double p1 = 0.15) {
  const double p = r.unit();
  if (p < p0) return 0;
  if (p < p0 + p1) return 1;
  return r.range(lo, hi);
}

/// A shape of `rank` dims that broadcasts to `target` (right-aligned): each
/// dim is the target's or (30%) 1.
shp broadcast_to(rng& r, const shp& target, int rank) {
  shp s(std::size_t(rank), 1);
  const int t = int(target.size());
  for (int k = 0; k < rank; ++k) {
    const int j = t - rank + k;
    s[std::size_t(k)] = j >= 0 && !r.chance(0.3) ? target[std::size_t(j)] : 1;
  }
  return s;
}

/// Run-time axes: `dims` distinct dims of a rank-R tensor in random order,
/// each written as d or d - R (ONNX negative axes).
fusor::axis_list draw_axes(rng& r, int R, std::vector<int> dims) {
  for (std::size_t i = dims.size(); i > 1; --i) std::swap(dims[i - 1], dims[std::size_t(r.below(i))]);
  fusor::axis_list a;
  for (int x : dims) a.push(r.chance(0.3) ? x - R : x);
  return a;
}

float draw_eps(rng& r) {
  static const float e[] = {1e-5f, 1e-5f, 1e-3f, 0.1f, 0.0f, 1e-12f};
  return e[r.below(6)];
}

// ===================================================================== geometry
/// Sets every input's shape from its role and the family's geometry; fills
/// d.at and d.geometry.
void draw_geometry(block_draw& d) {
  rng& r = d.r;
  battrs& at = d.at;
  at.eps = draw_eps(r);
  auto rank_of = [&](role w) {
    for (std::size_t i = 0; i < d.roles.size(); ++i)
      if (d.roles[i] == w) return d.spec[i].rank;
    return -1;
  };
  // Static extents of the input with role w (-1: dynamic), or null: the
  // geometry takes them (x of the row families, w of the linear ones;
  // gen_fuzz_blocks.py makes no others static).
  auto static_of = [&](role w) -> const dims* {
    for (std::size_t i = 0; i < d.roles.size(); ++i)
      if (d.roles[i] == w) return &d.spec[i].static_ext;
    return nullptr;
  };
  auto take_static = [&](role w, int k, std::int64_t& v) {
    const dims* st = static_of(w);
    if (st != nullptr && (*st)[std::size_t(k)] >= 0) v = (*st)[std::size_t(k)];
  };
  const bool large = r.chance(0.04);
  if (large) d.size_class = "large";
  shp xs, ws, w2s, wkvs, vs, outs, mask_target;
  std::int64_t bias_len = 1, chan_len = 1, bias_kv_len = 1;
  char buf[256];
  switch (d.fam) {
    case family::mha: break;  // below
    case family::reduce:
    case family::reduce_chain:
    case family::softmax:
    case family::layer_norm:
    case family::rms_norm:
    case family::instance_norm:
    case family::batch_norm: {
      const int R = rank_of(role::x);
      xs.resize(std::size_t(R));
      for (auto& e : xs) e = ext(r, 2, R <= 2 ? 9 : 5);
      if (large && R > 0) xs[std::size_t(r.below(std::uint64_t(R)))] = r.range(20000, 70000);
      if (large && R > 1) {
        // keep it at most ~70k elements: the other dims small
        for (auto& e : xs)
          if (e < 20000) e = std::min<std::int64_t>(e, 2);
      }
      for (int k = 0; k < R; ++k) take_static(role::x, k, xs[std::size_t(k)]);
      outs = xs;
      if (d.fam == family::reduce || d.fam == family::reduce_chain) {
        std::vector<int> red;
        if (d.aux < 0) {  // keepdims: any subset
          at.keepdims = true;
          for (int k = 0; k < R; ++k)
            if (r.chance(0.5)) red.push_back(k);
          if (red.empty()) at.noop = r.chance(0.5);
          for (int k = 0; k < R; ++k) {
            const bool reduced = red.empty() ? !at.noop : std::find(red.begin(), red.end(), k) != red.end();
            if (reduced) outs[std::size_t(k)] = 1;
          }
          if (d.aux == -2) outs = xs;  // the reduced value broadcast back against x
        } else {  // d.aux dims dropped
          at.keepdims = false;
          std::vector<int> all = std::vector<int>(std::size_t(R));
          for (int k = 0; k < R; ++k) all[std::size_t(k)] = k;
          for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[std::size_t(r.below(i))]);
          red.assign(all.begin(), all.begin() + d.aux);
          std::sort(red.begin(), red.end());
          outs.clear();
          for (int k = 0; k < R; ++k)
            if (std::find(red.begin(), red.end(), k) == red.end()) outs.push_back(xs[std::size_t(k)]);
          if (d.aux == R && r.chance(0.4)) red.clear();  // empty axes = all axes
        }
        at.axes = draw_axes(r, R, red);
        if (d.fam == family::reduce_chain) at.axis = r.range(-R, R - 1);
        std::string ax;
        for (int k = 0; k < at.axes.count; ++k) ax += (k ? "," : "") + std::to_string(at.axes.axis[k]);
        std::snprintf(buf, sizeof buf, "x %s, axes {%s}, keepdims %d, noop_with_empty_axes %d, axis %d, eps %g",
                      shape_text(xs).c_str(), ax.c_str(), int(at.keepdims), int(at.noop), at.axis, double(at.eps));
      } else if (d.fam == family::instance_norm) {
        chan_len = xs[1];
        std::snprintf(buf, sizeof buf, "x %s, eps %g", shape_text(xs).c_str(), double(at.eps));
      } else if (d.fam == family::batch_norm) {
        chan_len = xs[std::size_t(d.aux < 0 ? R + d.aux : d.aux)];
        std::snprintf(buf, sizeof buf, "x %s, channel axis %d, eps %g", shape_text(xs).c_str(), d.aux, double(at.eps));
      } else {
        at.axis = r.range(-R, R - 1);
        std::snprintf(buf, sizeof buf, "x %s, axis %d, eps %g", shape_text(xs).c_str(), at.axis, double(at.eps));
      }
      break;
    }
    case family::matmul: {
      const int ra = rank_of(role::x), rb = std::max(rank_of(role::w), rank_of(role::wt)), ro = std::max(ra, rb);
      const int hi = large ? 70 : 9;
      const std::int64_t M = ext(r, 2, hi), N = ext(r, 2, hi), K = ext(r, 2, hi);
      shp batch(std::size_t(ro - 2));
      for (auto& e : batch) e = ext(r, 2, 3);
      auto side = [&](int rk, std::int64_t a, std::int64_t b) {
        shp s = broadcast_to(r, batch, rk - 2);
        s.push_back(a);
        s.push_back(b);
        return s;
      };
      xs = side(ra, M, K);
      ws = side(rb, K, N);
      outs = batch;
      for (int k = 0; k < ro - 2; ++k) {  // broadcast batch of the two operands
        const int ia = k - (ro - ra), ib = k - (ro - rb);
        const std::int64_t a = ia >= 0 ? xs[std::size_t(ia)] : 1, b = ib >= 0 ? ws[std::size_t(ib)] : 1;
        outs[std::size_t(k)] = a == 1 ? b : a;
      }
      outs.push_back(M);
      outs.push_back(N);
      std::snprintf(buf, sizeof buf, "a %s, b %s", shape_text(xs).c_str(), shape_text(ws).c_str());
      break;
    }
    case family::linear:
    case family::norm_linear:
    case family::swiglu:
    case family::linear_norm: {
      const int rx = rank_of(role::x);
      const int hi = large ? 70 : 9;
      std::int64_t N = ext(r, 2, hi), K = ext(r, 2, hi);
      take_static(role::w, 0, N);
      take_static(role::w, 1, K);
      xs.resize(std::size_t(rx));
      for (auto& e : xs) e = ext(r, 2, hi > 9 ? 40 : 6);
      xs.back() = K;
      ws = {N, K};
      w2s = ws;
      bias_len = r.chance(0.1) ? 1 : N;
      outs = xs;
      outs.back() = N;
      at.axis = d.fam == family::norm_linear && r.chance(0.5) ? r.range(-rx, rx - 1) : -1;
      std::snprintf(buf, sizeof buf, "x %s, W %s, bias [%lld], norm axis %d, eps %g", shape_text(xs).c_str(),
                    shape_text(ws).c_str(), (long long)bias_len, at.axis, double(at.eps));
      break;
    }
    case family::gemm: {
      const int hi = large ? 70 : 9;
      const std::int64_t M = ext(r, 2, hi), N = ext(r, 2, hi), K = ext(r, 2, hi);
      at.gemm.trans_a = r.chance(0.5);
      at.gemm.trans_b = r.chance(0.5);
      static const float alphas[] = {1.0f, 1.0f, 0.5f, -2.0f, 0.0f, 3.25f};
      static const float betas[] = {1.0f, 1.0f, 0.0f, 2.5f, -1.0f};
      at.gemm.alpha = alphas[r.below(6)];
      at.gemm.beta = betas[r.below(5)];
      xs = at.gemm.trans_a ? shp{K, M} : shp{M, K};
      ws = at.gemm.trans_b ? shp{N, K} : shp{K, N};
      outs = {M, N};
      std::snprintf(buf, sizeof buf, "A %s%s, B %s%s, alpha %g, beta %g", shape_text(xs).c_str(),
                    at.gemm.trans_a ? " (trans_a)" : "", shape_text(ws).c_str(), at.gemm.trans_b ? " (trans_b)" : "",
                    double(at.gemm.alpha), double(at.gemm.beta));
      break;
    }
    case family::conv2d:
    case family::depthwise:
    case family::dwpw:
    case family::conv_bn: {
      auto& p = at.conv;
      p.layout = d.fam == family::conv_bn ? (d.aux == 0 ? fusor::layout::nchw : fusor::layout::nhwc)
                                          : (r.chance(0.5) ? fusor::layout::nchw : fusor::layout::nhwc);
      const std::int64_t N = r.chance(0.04) ? 0 : r.range(1, 2);
      std::int64_t C, Cout, cin_w;
      if (d.fam == family::depthwise || d.fam == family::dwpw) {
        C = r.range(1, large ? 8 : 4);
        Cout = C * r.range(1, 2);
        p.groups = C;
        cin_w = 1;
      } else {
        static const int gs[] = {1, 1, 1, 2, 3};
        p.groups = gs[r.below(5)];
        cin_w = r.range(1, large ? 6 : 3);
        C = p.groups * cin_w;
        Cout = p.groups * r.range(1, large ? 6 : 3);
      }
      const std::int64_t kh = r.range(1, 3), kw = r.range(1, 3);
      for (int k = 0; k < 2; ++k) {
        p.stride[k] = r.chance(0.6) ? 1 : r.range(2, 3);
        p.dilation[k] = r.chance(0.7) ? 1 : 2;
      }
      for (auto& pad : p.padding) pad = r.chance(0.5) ? 0 : r.range(1, 2);
      auto spatial = [&](int k, std::int64_t kk) {
        const std::int64_t span = p.dilation[k] * (kk - 1) + 1;
        const std::int64_t lo = std::max<std::int64_t>(0, span - p.padding[k] - p.padding[k + 2]);
        if (r.chance(0.05)) return lo;  // the smallest input (maybe 0: all padding)
        return std::max<std::int64_t>(lo, 1) + r.range(0, large ? 20 : 5);
      };
      const std::int64_t H = spatial(0, kh), W = spatial(1, kw);
      const bool nhwc = p.layout == fusor::layout::nhwc;
      xs = nhwc ? shp{N, H, W, C} : shp{N, C, H, W};
      ws = {Cout, cin_w, kh, kw};
      bias_len = Cout;
      chan_len = Cout;
      auto o = [&](int k, std::int64_t in, std::int64_t kk) {
        return (in + p.padding[k] + p.padding[k + 2] - (p.dilation[k] * (kk - 1) + 1)) / p.stride[k] + 1;
      };
      const std::int64_t Ho = o(0, H, kh), Wo = o(1, W, kw);
      outs = nhwc ? shp{N, Ho, Wo, Cout} : shp{N, Cout, Ho, Wo};
      if (d.fam == family::dwpw) {  // then a pointwise 1x1 conv to P channels
        const std::int64_t P = r.range(1, 4);
        at.conv2.layout = p.layout;
        w2s = {P, Cout, 1, 1};
        outs = nhwc ? shp{N, Ho, Wo, P} : shp{N, P, Ho, Wo};
      }
      d.g[0] = N, d.g[1] = C, d.g[2] = H, d.g[3] = W, d.g[4] = Cout, d.g[5] = kh, d.g[6] = kw;
      std::snprintf(buf, sizeof buf,
                    "%s x %s, w %s, stride {%lld, %lld}, padding {%lld, %lld, %lld, %lld}, dilation {%lld, %lld}, "
                    "groups %lld, eps %g",
                    nhwc ? "NHWC" : "NCHW", shape_text(xs).c_str(), shape_text(ws).c_str(), (long long)p.stride[0],
                    (long long)p.stride[1], (long long)p.padding[0], (long long)p.padding[1], (long long)p.padding[2],
                    (long long)p.padding[3], (long long)p.dilation[0], (long long)p.dilation[1], (long long)p.groups,
                    double(at.eps));
      break;
    }
    case family::sdpa:
    case family::attn_hand: {
      const int R = rank_of(role::x);
      auto& p = at.att;
      const std::int64_t B = r.chance(0.04) ? 0 : r.range(1, 2);
      const std::int64_t Hkv = r.range(1, 2);
      const std::int64_t Hq = d.fam == family::attn_hand ? Hkv : Hkv * r.range(1, 3);
      auto len = [&] { return large ? std::int64_t(r.range(30, 70)) : ext(r, 2, 9, 0.05, 0.15); };
      const std::int64_t Sq = len(), Sk = len();
      const std::int64_t D = large ? r.range(16, 64) : r.range(1, 8), Dv = large ? r.range(8, 32) : r.range(1, 8);
      p.causal = d.fam == family::sdpa && r.chance(0.4);
      p.scale = r.chance(0.5) ? std::numeric_limits<float>::quiet_NaN() : float(r.range(-8, 16)) / 8.0f;
      at.scale = float(r.range(1, 16)) / 8.0f;
      if (R == 3) {
        p.heads = int(Hq);
        p.kv_heads = Hkv == Hq && r.chance(0.5) ? 0 : int(Hkv);
        xs = {B, Sq, Hq * D};
        ws = {B, Sk, Hkv * D};
        vs = {B, Sk, Hkv * Dv};
        outs = {B, Sq, Hq * Dv};
      } else {
        const bool bshd = d.fam == family::sdpa && r.chance(0.5);
        p.layout = bshd ? fusor::attention_layout::bshd : fusor::attention_layout::bhsd;
        auto mk = [&](std::int64_t h, std::int64_t s, std::int64_t dd) { return bshd ? shp{B, s, h, dd} : shp{B, h, s, dd}; };
        xs = mk(Hq, Sq, D);
        ws = mk(Hkv, Sk, D);
        vs = mk(Hkv, Sk, Dv);
        outs = mk(Hq, Sq, Dv);
      }
      mask_target = {B, Hq, Sq, Sk};
      d.g[0] = B, d.g[1] = Hq, d.g[2] = Hkv, d.g[3] = Sq, d.g[4] = Sk, d.g[5] = D, d.g[6] = Dv;
      std::snprintf(buf, sizeof buf, "q %s, k %s, v %s (%s), causal %d, scale %g%s", shape_text(xs).c_str(),
                    shape_text(ws).c_str(), shape_text(vs).c_str(),
                    R == 3 ? "packed" : (p.layout == fusor::attention_layout::bshd ? "bshd" : "bhsd"), int(p.causal),
                    double(d.fam == family::attn_hand ? at.scale : p.scale),
                    R == 3 ? (", heads " + std::to_string(p.heads) + ", kv_heads " + std::to_string(p.kv_heads)).c_str()
                           : "");
      break;
    }
  }
  if (d.fam == family::mha) {
    auto& p = at.att;
    const std::int64_t B = r.chance(0.04) ? 0 : r.range(1, 2), S = ext(r, 2, large ? 40 : 9, 0.05, 0.15);
    const std::int64_t H = r.range(1, 3), Hkv = H == 2 && r.chance(0.5) ? 1 : (H == 3 && r.chance(0.5) ? 1 : H);
    const std::int64_t D = r.range(1, large ? 16 : 6), E = H * D;
    p.heads = int(H);
    p.kv_heads = Hkv == H && r.chance(0.5) ? 0 : int(Hkv);
    p.causal = r.chance(0.5);
    p.scale = r.chance(0.5) ? std::numeric_limits<float>::quiet_NaN() : 0.25f;
    xs = {B, S, E};
    ws = {E, E};
    w2s = {E, E};
    wkvs = {Hkv * D, E};
    bias_len = E;
    bias_kv_len = Hkv * D;
    outs = xs;
    std::snprintf(buf, sizeof buf, "x %s, heads %lld, kv_heads %lld, head_dim %lld, causal %d, scale %g",
                  shape_text(xs).c_str(), (long long)H, (long long)Hkv, (long long)D, int(p.causal), double(p.scale));
  }
  d.geometry = buf;
  for (std::size_t i = 0; i < d.roles.size(); ++i) {
    const int rk = d.spec[i].rank;
    shp s;
    switch (d.roles[i]) {
      case role::x: s = xs; break;
      case role::w: s = ws; break;
      case role::wt:
        s = ws;
        std::swap(s[s.size() - 1], s[s.size() - 2]);
        break;
      case role::v: s = vs; break;
      case role::w2: s = w2s; break;
      case role::wkv: s = wkvs; break;
      case role::bias: s = {bias_len}; break;
      case role::bias_kv: s = {bias_kv_len}; break;
      case role::chan:
      case role::var: s = {chan_len}; break;
      case role::gamma: s = broadcast_to(r, xs, rk); break;
      case role::like_x: s = broadcast_to(r, xs, rk); break;
      case role::like_w: s = broadcast_to(r, ws, rk); break;
      case role::like_out: s = broadcast_to(r, outs, rk); break;
      case role::mask: s = broadcast_to(r, mask_target, rk); break;
    }
    view_layout& l = d.in[i];
    l.rank = rk;
    for (int k = 0; k < rk; ++k) l.shape[std::size_t(k)] = s[std::size_t(k)];
  }
}

/// Finite values for the bounded families: uniform in [-scale, scale], with
/// (per buffer, 15%) a NaN, and (masks, 30%) some -inf entries.
void fill_bounded(rng& r, buffer& b, role w) {
  static const float scales[] = {0.5f, 1.0f, 2.0f, 4.0f};
  fill(r, b, value_profile{0.0, scales[r.below(4)], false});
  auto put = [&](std::size_t i, float v) {
    if (b.type == dt::f32) std::memcpy(b.pristine.data() + 4 * i, &v, 4);
    else {
      const std::uint16_t h = b.type == dt::f16 ? __half_raw(__float2half_rn(v)).x
                                                : __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
      std::memcpy(b.pristine.data() + 2 * i, &h, 2);
    }
  };
  if (b.count == 0) return;
  if (w == role::mask && r.chance(0.3)) {
    const std::size_t n = 1 + std::size_t(r.below(b.count));
    for (std::size_t k = 0; k < n; ++k) put(std::size_t(r.below(b.count)), -std::numeric_limits<float>::infinity());
  } else if ((w == role::x || w == role::w || w == role::v) && r.chance(0.15)) {
    put(std::size_t(r.below(b.count)), std::numeric_limits<float>::quiet_NaN());
  }
}

/// Values of the bitwise families: a NaN or an infinity poisons a whole row
/// of a reduction or a contraction, so most buffers get none (fuzz_elementwise
/// draws far more specials): per buffer, 60% no special values, 25% 1%, 15%
/// 10% (NaNs with payloads, +-Inf, +-0, denormals, extremes, thresholds).
value_profile block_profile(rng& r) {
  static const float scales[] = {1.0f, 1.0f, 4.0f, 100.0f, 1e-3f, 1e6f};
  const double p = r.unit();
  return {p < 0.6 ? 0.0 : p < 0.85 ? 0.01 : 0.1, scales[r.below(6)], r.chance(0.1)};
}

/// |values| of a buffer (running variances).
void make_nonnegative(buffer& b) {
  const std::size_t es = dt_size(b.type);
  for (std::size_t i = 0; i < b.count; ++i) {
    unsigned char* p = b.pristine.data() + i * es + es - 1;  // little-endian: the sign bit is in the last byte
    *p &= 0x7f;
  }
}

}  // namespace

void plan_block(block_draw& d, const options& o) {
  rng& r = d.r;
  draw_scalars(r);
  d.size_class = "small";
  d.bounded = d.fam == family::conv_bn || d.fam == family::attn_hand;
  draw_geometry(d);
  d.dense = r.chance(0.2);
  for (std::size_t i = 0; i < d.in.size(); ++i) {
    view_layout& l = d.in[i];
    draw_layout(r, l, true, o, d.dense);
    if (l.elements() == 0 && r.chance(0.3)) {
      l.null_data = true;
      l.how += "+null";
      continue;
    }
    // Inputs sharing memory (an earlier input's buffer, read through this
    // input's own layout: the same tensor twice, a transposed or shifted view
    // of it). Reads only, so fused and unfused must still agree bitwise. Not
    // for the bounded families (their bounds assume independent values) nor
    // running variances (kept >= 0).
    if (!d.bounded && d.roles[i] != role::var && r.chance(0.12)) {
      int shared = -1;
      for (std::size_t j = 0; j < i && shared < 0; ++j) {
        const view_layout& o = d.in[j];
        if (o.null_data || o.buffer < 0 || d.spec[j].type != d.spec[i].type || d.roles[j] == role::var) continue;
        if (extent_of(l) <= std::int64_t(d.buffers[std::size_t(o.buffer)].count)) shared = int(j);
      }
      if (shared >= 0) {
        l.buffer = d.in[std::size_t(shared)].buffer;
        l.how += "+shares input " + std::to_string(shared) + "'s memory";
        continue;
      }
    }
    l.buffer = new_buffer(d, d.spec[i].type, "input " + std::to_string(i));
    buffer& b = d.buffers[std::size_t(l.buffer)];
    allocate(b, std::size_t(std::max<std::int64_t>(1, extent_of(l))));
    if (d.bounded) fill_bounded(r, b, d.roles[i]);
    else fill(r, b, block_profile(r));
    if (d.roles[i] == role::var) make_nonnegative(b);
  }
}

void plan_block_output(block_draw& d, dt type, const std::vector<std::int64_t>& shape, const options& o) {
  rng& r = d.r;
  d.out.assign(1, view_layout{});
  d.out_type = {type};
  d.out_alias = {-1};
  view_layout& l = d.out[0];
  l.rank = int(shape.size());
  for (int k = 0; k < l.rank; ++k) l.shape[std::size_t(k)] = shape[std::size_t(k)];
  // In place: the output is exactly the view of an epilogue operand (a
  // residual or gemm's C of the result's shape and type): documented for
  // contraction epilogues ("the epilogue's operands may alias the output
  // exactly", exec/contraction.hpp) and elementwise consumers. Both executors
  // run in place on the same pristine memory.
  if (r.chance(0.2))
    for (std::size_t i = 0; i < d.in.size(); ++i) {
      const view_layout& v = d.in[i];
      if (d.roles[i] != role::like_out || v.null_data || v.rank != l.rank || d.spec[i].type != type) continue;
      // Not over memory another input reads too: that is a partial overlap,
      // an argument_error on both executors (test_errors covers it).
      bool shared = false;
      for (std::size_t j = 0; j < d.in.size(); ++j) shared = shared || (j != i && d.in[j].buffer == v.buffer);
      if (shared) continue;
      bool same = true;
      for (int k = 0; k < l.rank; ++k)
        same = same && v.shape[std::size_t(k)] == l.shape[std::size_t(k)] &&
               (v.strides[std::size_t(k)] != 0 || v.shape[std::size_t(k)] <= 1);
      if (!same) continue;
      l = v;
      l.how = "in place on input " + std::to_string(i);
      d.out_alias[0] = int(i);
      d.out_ref = d.out;
      return;
    }
  draw_layout(r, l, false, o, d.dense);
  if (l.elements() == 0 && r.chance(0.3)) {
    l.null_data = true;
    l.how += "+null";
  } else {
    l.buffer = new_buffer(d, type, "output");
    buffer& b = d.buffers[std::size_t(l.buffer)];
    allocate(b, std::size_t(std::max<std::int64_t>(1, extent_of(l))));
    const unsigned char sentinel = (unsigned char)(r.chance(0.5) ? 0xA5 : 0xFF);
    std::fill(b.pristine.begin(), b.pristine.end(), sentinel);
  }
  d.out_ref = d.out;
}

// ===================================================================== bounds
namespace {

double to_double(dt t, const unsigned char* p) {
  switch (t) {
    case dt::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case dt::f16: {
      __half_raw h;
      std::memcpy(&h.x, p, 2);
      return double(__half2float(__half(h)));
    }
    case dt::bf16: {
      std::uint16_t u;
      std::memcpy(&u, p, 2);
      const std::uint32_t w = std::uint32_t(u) << 16;
      float f;
      std::memcpy(&f, &w, 4);
      return f;
    }
    case dt::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

/// Value of input i at the multi-index idx of a rank-R target it broadcasts
/// to (right-aligned; extent-1 dims read index 0).
double input_at(const block_draw& d, int i, const std::int64_t* idx, int R) {
  const view_layout& l = d.in[std::size_t(i)];
  std::int64_t off = l.offset;
  for (int k = 0; k < l.rank; ++k) {
    const int t = R - l.rank + k;
    const std::int64_t j = l.shape[std::size_t(k)] == 1 ? 0 : idx[t];
    off += j * l.strides[std::size_t(k)];
  }
  const buffer& b = d.buffers[std::size_t(l.buffer)];
  return to_double(b.type, b.pristine.data() + std::size_t(off) * dt_size(b.type));
}

int find_role(const block_draw& d, role w, int nth = 0) {
  for (std::size_t i = 0; i < d.roles.size(); ++i)
    if (d.roles[i] == w && nth-- == 0) return int(i);
  return -1;
}

/// conv2d + batch_norm folded (host) vs unfolded (unfused), per output
/// element in row-major order (docs/contractions.md, test_contractions.cpp
/// "BN"): with k = gamma / sqrt(var + eps) and S = sum |x w| over the window,
///   |folded - exact|, |unfolded - exact| <= (K + 8) u |k| S + 16 u (|mean k| + |bias k| + |beta| + |y|)
/// (K = C / groups * kh * kw terms; the +8 covers k's ~3 roundings and the
/// products W * k, the 16 u term the folded bias and the final adds); the
/// difference is bounded by twice that. A residual add and relu/clip keep an
/// absolute error (1-Lipschitz) and add one rounding u |y| (in the 16 u).
/// Returns false when an operand is missing (null data): nothing to bound.
bool conv_bn_bound(const block_draw& d, std::vector<double>& tol, const std::vector<double>& ymag) {
  const int ix = find_role(d, role::x), iw = find_role(d, role::w), ib = find_role(d, role::bias);
  const int ig = find_role(d, role::chan, 0), ibeta = find_role(d, role::chan, 1), im = find_role(d, role::chan, 2),
            iv = find_role(d, role::var);
  const std::int64_t N = d.g[0], C = d.g[1], H = d.g[2], W = d.g[3], Co = d.g[4], kh = d.g[5], kw = d.g[6];
  const auto& p = d.at.conv;
  const bool nhwc = p.layout == fusor::layout::nhwc;
  const view_layout& o = d.out[0];
  const std::int64_t Ho = nhwc ? o.shape[1] : o.shape[2], Wo = nhwc ? o.shape[2] : o.shape[3];
  const std::int64_t cg = C / p.groups, og = Co / p.groups, K = cg * kh * kw;
  tol.assign(std::size_t(o.elements()), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t co = 0; co < Co; ++co) {
      const std::int64_t ch[1] = {co};
      const double g = input_at(d, ig, ch, 1), beta = input_at(d, ibeta, ch, 1), mean = input_at(d, im, ch, 1),
                   var = input_at(d, iv, ch, 1);
      const double bias = ib >= 0 ? input_at(d, ib, ch, 1) : 0.0;
      const double k = g / std::sqrt(var + double(d.at.eps));
      const std::int64_t grp = co / og;
      for (std::int64_t oh = 0; oh < Ho; ++oh)
        for (std::int64_t ow = 0; ow < Wo; ++ow) {
          double S = 0;
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t b = 0; b < kw; ++b) {
                const std::int64_t ih = oh * p.stride[0] - p.padding[0] + a * p.dilation[0];
                const std::int64_t iw2 = ow * p.stride[1] - p.padding[1] + b * p.dilation[1];
                if (ih < 0 || ih >= H || iw2 < 0 || iw2 >= W) continue;
                const std::int64_t cin = grp * cg + c;
                const std::int64_t xi[4] = {n, nhwc ? ih : cin, nhwc ? iw2 : ih, nhwc ? cin : iw2};
                const std::int64_t wi[4] = {co, c, a, b};
                S += std::fabs(input_at(d, ix, xi, 4) * input_at(d, iw, wi, 4));
              }
          const std::int64_t oi = nhwc ? ((n * Ho + oh) * Wo + ow) * Co + co : ((n * Co + co) * Ho + oh) * Wo + ow;
          const double y = ymag[std::size_t(oi)];
          tol[std::size_t(oi)] = 2 * (double(K + 8) * u32 * std::fabs(k) * S +
                                      16 * u32 * (std::fabs(mean * k) + std::fabs(bias * k) + std::fabs(beta) + y));
        }
    }
  return true;
}

/// Attention written by hand, fused (flash kernel, online softmax over key
/// tiles of 32) vs unfused (matmul, mul, [add], softmax, matmul), per output
/// element (test_attention.cpp's file comment, first order): for query row i
/// with scores s_j = scale q.k_j + mask_j, m = max s_j, p_j the softmax weights,
///   eps_j = (D + 2) u |scale| sum_d |q_d k_jd| + u (3 |s_j| + |mask_j| + |s_j - m|) + 4 u
/// bounds the relative error of each unnormalised weight (the dot product,
/// the scale multiply, the mask add, the max subtraction, exp <= 2 ulp,
/// storing p_j); with w_j = p_j (e^eps_j - 1), eta = sum w_j, output dim e errs by
///   (sum_j w_j |v_je| + eta sum_j (p_j + w_j) |v_je|) / (1 - eta)
///   + (2 Sk + 4 tiles + 8) u sum_j p_j |v_je| + 2 u |o_e|
/// in each computation; the difference is bounded by twice that.
bool attention_bound(const block_draw& d, std::vector<double>& tol, const std::vector<double>& ymag) {
  const int iq = find_role(d, role::x), ik = find_role(d, role::w), iv = find_role(d, role::v),
            im = find_role(d, role::mask);
  const std::int64_t B = d.g[0], H = d.g[1], Sq = d.g[3], Sk = d.g[4], D = d.g[5], Dv = d.g[6];
  const double scale = d.at.scale;
  const std::int64_t tiles = (Sk + 31) / 32;
  tol.assign(std::size_t(d.out[0].elements()), 0.0);
  const std::size_t nk = std::size_t(Sk);
  std::vector<double> s(nk), mk(nk), A(nk), pj(nk), wj(nk);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < Sq; ++i) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < Sk; ++j) {
          double dot = 0, absdot = 0;
          for (std::int64_t e = 0; e < D; ++e) {
            const std::int64_t qi[4] = {b, h, i, e}, ki[4] = {b, h, j, e};
            const double t = input_at(d, iq, qi, 4) * input_at(d, ik, ki, 4);
            dot += t;
            absdot += std::fabs(t);
          }
          const std::int64_t mi[4] = {b, h, i, j};
          mk[std::size_t(j)] = im >= 0 ? input_at(d, im, mi, 4) : 0.0;
          s[std::size_t(j)] = scale * dot + mk[std::size_t(j)];
          A[std::size_t(j)] = std::fabs(scale) * absdot;
          m = std::max(m, s[std::size_t(j)]);
        }
        double l = 0, eta = 0;
        for (std::int64_t j = 0; j < Sk; ++j) l += std::isinf(s[std::size_t(j)]) ? 0.0 : std::exp(s[std::size_t(j)] - m);
        for (std::int64_t j = 0; j < Sk; ++j) {
          const double sj = s[std::size_t(j)];
          if (std::isinf(sj) || !std::isfinite(m)) {
            pj[std::size_t(j)] = wj[std::size_t(j)] = 0;
            continue;
          }
          const double eps = double(D + 2) * u32 * A[std::size_t(j)] +
                             u32 * (3 * std::fabs(sj) + std::fabs(mk[std::size_t(j)]) + std::fabs(sj - m)) + 4 * u32;
          pj[std::size_t(j)] = std::exp(sj - m) / l;
          wj[std::size_t(j)] = pj[std::size_t(j)] * std::expm1(eps);
          eta += wj[std::size_t(j)];
        }
        for (std::int64_t e = 0; e < Dv; ++e) {
          double sw = 0, spw = 0, sp = 0;
          for (std::int64_t j = 0; j < Sk; ++j) {
            const std::int64_t vi[4] = {b, h, j, e};
            const double av = std::fabs(input_at(d, iv, vi, 4));
            sw += wj[std::size_t(j)] * av;
            spw += (pj[std::size_t(j)] + wj[std::size_t(j)]) * av;
            sp += pj[std::size_t(j)] * av;
          }
          const std::int64_t oi = ((b * H + h) * Sq + i) * Dv + e;
          const double bound = eta < 0.5 ? (sw + eta * spw) / (1 - eta) + double(2 * Sk + 4 * tiles + 8) * u32 * sp +
                                               2 * u32 * ymag[std::size_t(oi)]
                                         : std::numeric_limits<double>::infinity();
          tol[std::size_t(oi)] = 2 * bound;
        }
      }
  return true;
}

/// Unit roundoff of a 16-bit output type (0 for f32): both results are
/// rounded once more at the store.
double store_unit(dt t) { return t == dt::f16 ? 0x1p-11 : t == dt::bf16 ? 0x1p-8 : 0.0; }

void print_block_draw(const block_draw& d, const std::string& describe) {
  std::printf("  case %d: %s\n", d.case_id, d.info);
  std::printf("  expression: %s\n", describe.c_str());
  std::printf("  geometry: %s (%s)\n", d.geometry.c_str(), d.size_class.c_str());
  for (std::size_t i = 0; i < d.in.size(); ++i)
    std::printf("  input %zu: %s\n", i, layout_text(d, d.in[i], d.spec[i].type).c_str());
  std::printf("  output: %s\n", layout_text(d, d.out[0], d.out_type[0]).c_str());
  std::printf("  scalars: sf =");
  for (float v : g_scalars.f) std::printf(" %.9g", double(v));
  std::printf("\n");
}

}  // namespace

bool judge_block(block_draw& d, run_outcome& f, run_outcome& u, run_outcome* again, const std::string& describe,
                 const options& o) {
  const dt t = d.out_type.empty() ? dt::f32 : d.out_type[0];
  const std::size_t es = dt_size(t);
  if (o.inject && !f.out.empty() && !f.out[0].empty()) {
    // perturb the middle element of the fused result (of both fused runs for
    // BN folding): bitwise: flip its lowest bit; bounded: v -> v (1 + 2^-6) +
    // 2^-6, far beyond the rounding bound (an infinity becomes NaN); a NaN becomes 0
    auto perturb = [&](std::vector<unsigned char>& out) {
      unsigned char* p = out.data() + (out.size() / es / 2) * es;
      if (is_nan(t, p)) std::memset(p, 0, es);
      else if (!d.bounded) p[0] ^= 1;
      else {
        const double v = to_double(t, p);
        const float w = std::isinf(v) ? std::numeric_limits<float>::quiet_NaN() : float(v * (1 + 0x1p-6) + 0x1p-6);
        if (t == dt::f32) std::memcpy(p, &w, 4);
        else {
          const std::uint16_t h = t == dt::f16 ? __half_raw(__float2half_rn(w)).x : __nv_bfloat16_raw(__float2bfloat16_rn(w)).x;
          std::memcpy(p, &h, 2);
        }
      }
    };
    perturb(f.out[0]);
    if (again && !again->out.empty()) perturb(again->out[0]);
  }
  std::string problem;
  std::size_t bad = 0;
  bool have_index = false;
  double bad_tol = 0, ratio = 0;
  bool rounding_difference = false;
  if (!f.error.empty() || !u.error.empty() || (again && !again->error.empty())) {
    problem = "exception: fused: " + (f.error.empty() ? std::string("none") : f.error) +
              "; unfused: " + (u.error.empty() ? std::string("none") : u.error);
    if (again && !again->error.empty()) problem += "; fused (second run): " + again->error;
  } else if (!f.stray.empty() || !u.stray.empty() || (again && !again->stray.empty())) {
    problem = "write outside the output (an input or the output's gaps changed): fused: " +
              (f.stray.empty() ? std::string("none") : f.stray) +
              "; unfused: " + (u.stray.empty() ? std::string("none") : u.stray);
  } else if (again && f.out[0] != again->out[0]) {
    problem = "the fused plan's first and second runs (folded weights prepared, then cached) differ";
  } else {
    const std::size_t n = f.out.empty() ? 0 : f.out[0].size() / es;
    std::vector<double> tol;
    if (d.bounded && n > 0) {
      std::vector<double> ymag(n);
      for (std::size_t k = 0; k < n; ++k) {
        const double a = to_double(t, f.out[0].data() + k * es), b = to_double(t, u.out[0].data() + k * es);
        ymag[k] = std::isfinite(a) && std::isfinite(b) ? std::max(std::fabs(a), std::fabs(b)) : 0.0;
      }
      if (d.fam == family::conv_bn) conv_bn_bound(d, tol, ymag);
      else attention_bound(d, tol, ymag);
      const double u16 = store_unit(t);
      // Both results are rounded to the 16-bit output: |r(a) - r(b)| <= |a - b| + u16 (|a| + |b|), and
      // |a| <= (1 + u16) |r(a)| (ymag holds the stored magnitudes): one f16/bf16 ulp apart is within
      // 2 u16 |y|; f16 subnormals are rounded absolutely (half their spacing 2^-24 each).
      for (std::size_t k = 0; k < n; ++k)
        tol[k] += tol[k] * u16 * 2 + 2 * u16 * (1 + u16) * ymag[k] + (t == dt::f16 ? 0x1p-24 : 0.0);
    }
    for (std::size_t k = 0; k < n; ++k) {
      const unsigned char *a = f.out[0].data() + k * es, *b = u.out[0].data() + k * es;
      if (std::memcmp(a, b, es) == 0 || (is_nan(t, a) && is_nan(t, b))) continue;
      if (d.bounded && !is_nan(t, a) && !is_nan(t, b)) {
        const double x = to_double(t, a), y = to_double(t, b);
        if (std::isfinite(x) && std::isfinite(y)) {
          const double err = std::fabs(x - y);
          if (err <= tol[k]) {
            ratio = std::max(ratio, err / tol[k]);
            rounding_difference = true;
            continue;
          }
          bad_tol = tol[k];
        }
      }
      problem = "output differs" + std::string(d.bounded ? " beyond the bound" : " (bitwise)") + ": fused " +
                value_text(t, a) + ", unfused " + value_text(t, b);
      if (bad_tol > 0) problem += ", |difference| " + std::to_string(std::fabs(to_double(t, a) - to_double(t, b))) +
                                  " > bound " + std::to_string(bad_tol);
      bad = k;
      have_index = true;
      break;
    }
    const std::size_t fk = again ? again->kernels : f.kernels;
    if (problem.empty() && fk > u.kernels)
      problem = "fused plan launched more kernels (" + std::to_string(fk) + (again ? ", second run" : "") +
                ") than unfused (" + std::to_string(u.kernels) + ")";
  }
  const bool ok = problem.empty();
  {
    bstats& st = g_bstats;
    ++st.draws;
    st.empty += d.out.empty() || d.out[0].elements() == 0;
    st.large += d.size_class == "large";
    st.bounded += d.bounded;
    st.bounded_differ += rounding_difference;
    st.in_place += !d.out_alias.empty() && d.out_alias[0] >= 0;
    st.shared_inputs += std::any_of(d.in.begin(), d.in.end(),
                                    [](const view_layout& l) { return l.how.find("+shares") != std::string::npos; });
    st.several_kernels += (again ? again->kernels : f.kernels) > 1;
    bool nan = false;
    for (std::size_t k = 0; !f.out.empty() && k < f.out[0].size() / es && !nan; ++k) nan = is_nan(t, f.out[0].data() + k * es);
    st.nan_outputs += nan;
    if (ratio > st.worst_ratio) st.worst_ratio = ratio, st.worst_case = d.case_id, st.worst_seed = d.seed;
  }
  if (!ok || o.verbose) {
    std::printf("%s: case %d seed 0x%016llx (replay: fuzz_blocks --case %d --seed 0x%016llx)\n",
                ok ? "FUZZ DRAW" : "FUZZ MISMATCH", d.case_id, (unsigned long long)d.seed, d.case_id,
                (unsigned long long)d.seed);
    print_block_draw(d, describe);
    std::printf("  kernels: fused %zu%s, unfused %zu\n", f.kernels,
                again ? (" (second run " + std::to_string(again->kernels) + ")").c_str() : "", u.kernels);
    std::printf("  comparison: %s\n", d.bounded ? "bounded (NaN positions exact)" : "bitwise (NaN == NaN)");
    if (!ok) std::printf("  problem: %s\n", problem.c_str());
    if (have_index) {
      const view_layout& l = d.out[0];
      dims idx{};
      std::size_t rest = bad;
      for (int k = l.rank - 1; k >= 0; --k) {
        idx[std::size_t(k)] = std::int64_t(rest % std::size_t(l.shape[std::size_t(k)]));
        rest /= std::size_t(l.shape[std::size_t(k)]);
      }
      std::printf("  first mismatch: index %s (row-major element %zu)\n", dims_text(idx, l.rank).c_str(), bad);
    }
    std::fflush(stdout);
  }
  return ok;
}

void print_blocks_summary() {
  const auto& st = g_bstats;
  std::printf("fuzz: draws with: empty output %lld, NaN in the output %lld, large %lld, in-place output %lld, "
              "inputs sharing memory %lld, several fused kernels %lld, "
              "bounded comparison %lld (%lld not bitwise equal; worst |difference| / bound %.3g, case %d seed 0x%016llx)\n",
              st.empty, st.nan_outputs, st.large, st.in_place, st.shared_inputs, st.several_kernels, st.bounded, st.bounded_differ, st.worst_ratio,
              st.worst_case,
              (unsigned long long)st.worst_seed);
}

/// The block family for run_cli (50 fixed-seed draws per case). Its
/// regressions: draws that once found a bug in the run-time space of an existing case:
/// run first in CI mode. Add {case, seed, "FZ-n: what it found"} (replay with
/// --case K --seed S).
suite blocks_suite(const registry& cases) {
  suite s;
  s.name = "blocks";
  s.cases = &cases;
  s.default_draws = 50;
  s.ci_base = 0xb10c5f0550000ULL;
  s.regressions = {};
  s.summary = &print_blocks_summary;
  return s;
}

}  // namespace fz
