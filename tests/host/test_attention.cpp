// Attention on the host executor: scaled_dot_product_attention (the
// FlashAttention-2 kernel's host twin), multi_head_attention, and attention
// written by hand, matmul(softmax(q k^T * s [+ mask]), v), which the fused
// planner recognises as one flash kernel while the unfused() executor runs it
// as written (matmul, mul, [add], softmax, matmul: the independent
// reference). Checked against
//   1. the PyTorch golden cases attention_bert, attention_llama_gqa,
//      attention_cross and mha_block (tests/data/torch; their outputs are the
//      float64 result rounded once to float32);
//   2. a float64 reference written here, with a per-element error bound;
//   3. each other: fused vs unfused on random inputs (layouts bhsd / bshd /
//      packed, GQA, causal or not, Sq != Sk, lengths around the key tile (32)
//      and the query block (64), head_dim 32 .. 128), bitwise where the same
//      kernel runs on the same values (SDPA vs recognised hand-written form,
//      bshd/packed vs bhsd, GQA vs K/V repeated per query head);
//   4. kernel counts (run_result and fusor::kernel_count), errors (outputs
//      untouched), NaN/inf semantics, and memory: nothing of Sq * Sk floats is
//      allocated by a fused run (global operator new is replaced in this file
//      to record the largest allocation).
//
// Tolerances (u = 2^-24, the fp32 unit roundoff). The float64 reference
// computes, per query row, the scores s_j, the softmax weights p_j and
// o_d = sum_j p_j v_jd, and bounds the fp32 result's error to first order:
//  - SCORE: s_j is a D-term fp32 dot product (error <= (D + 2) u |scale|
//    sum_d |q_d k_jd|, Higham eq. 3.5, +2 for the scale multiply and mask
//    add), then rounded by the scale multiply, the mask add and the
//    subtraction s_j - m (u (3|s_j| + |mask_j| + |s_j - m|)); exp adds <= 2
//    ulp, rounding p_j to fp32 (unfused) 1 more: eps_j = sum of those + 4u.
//    A relative perturbation e^{eps_j} of each unnormalised weight changes
//    the output by at most (sum_j w_j |v_jd| + eta sum_j (p_j + w_j)|v_jd|) /
//    (1 - eta) with w_j = p_j (e^{eps_j} - 1), eta = sum_j w_j.
//  - ACC: the fp32 sums l = sum p_j and acc = sum p_j v_j (Sk terms each,
//    rescaled by alpha once per 32-key tile in the flash kernel; the unfused
//    softmax sum and second matmul likewise Sk terms) err by <= (Sk + 2 tiles
//    + 2) u relative each, and out = acc / l rounds once: together
//    (2 Sk + 4 tiles + 8) u sum_j p_j |v_jd| + 2u |o_d|.
//  - INPUT ERRORS (mha_block end to end): errors eq, ek of the fp32 q/k
//    projections add |scale| sum_d (eq|k| + |q|ek + eq ek) to eps_j, errors ev
//    of v add sum_j (p_j + w_j) ev_jd / (1 - eta); a projection is a DOT
//    ((K + 2) u sum|x w| + u |b| + u |y| for storing it) plus sum_e |w| err_e
//    of its input.
//  - 16-bit inputs (half, bf16): converted exactly to fp32, so the fp32 bound
//    holds for the reference computed from the rounded inputs; the output is
//    rounded once more: + u16 (|o| + tol) (u16 = 2^-11 half, 2^-8 bf16;
//    rounding to nearest errs by <= u16 times the fp32 value) + half's
//    subnormal spacing 2^-24.
//  - fused vs unfused: both within the bound of the same reference, so their
//    difference is checked against twice the bound.
//  - golden outputs are the exact result rounded to fp32: the bound above plus
//    u |golden|. The float64 reference itself must match each golden output
//    within u |golden| + 1e-12 (direct) or within the same bound (mha_block,
//    whose golden stages round the intermediates to fp32).
// Worst error/tolerance ratios are printed at exit when FUSOR_TEST_REPORT is set.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "support/golden.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------
// Allocation tracking: every global operator new of the program goes through
// here; while `on`, the largest single request is recorded. (fusor's host
// executor allocates temporaries with ::operator new, exec/host_backend.hpp.)
namespace alloc_track {
std::atomic<bool> on{false};
std::atomic<std::size_t> largest{0};
std::atomic<std::size_t> calls{0};

inline void note(std::size_t n) noexcept {
  if (!on.load(std::memory_order_relaxed)) return;
  calls.fetch_add(1, std::memory_order_relaxed);
  std::size_t cur = largest.load(std::memory_order_relaxed);
  while (n > cur && !largest.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
  }
}
inline void* allocate(std::size_t n) {
  note(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
inline void* allocate(std::size_t n, std::align_val_t al) {
  note(n);
  std::size_t a = std::max(std::size_t(al), sizeof(void*));
  const std::size_t size = std::max(a, (n + a - 1) / a * a);  // aligned_alloc wants a multiple of the alignment
  if (void* p = std::aligned_alloc(a, size)) return p;
  throw std::bad_alloc();
}
/// Starts recording (resets the largest request seen).
inline void start() {
  largest = 0;
  calls = 0;
  on = true;
}
inline std::size_t stop() {
  on = false;
  return largest.load();
}
}  // namespace alloc_track

void* operator new(std::size_t n) { return alloc_track::allocate(n); }
void* operator new[](std::size_t n) { return alloc_track::allocate(n); }
void* operator new(std::size_t n, std::align_val_t a) { return alloc_track::allocate(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return alloc_track::allocate(n, a); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return alloc_track::allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return alloc_track::allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return alloc_track::allocate(n, a);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return alloc_track::allocate(n, a);
  } catch (...) {
    return nullptr;
  }
}
// These deletes free what the operator new replacements above got from
// malloc/aligned_alloc; GCC cannot see that pairing once inlined (a false
// -Wmismatched-new-delete under -O1 with sanitizers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using fusor::attention_layout;
using fusor::attention_params;
using fusor::host_view;
using i64 = std::int64_t;
using Catch::Matchers::Contains;
constexpr double u32 = 0x1p-24;
constexpr float sentinel = -12345.0f;
const float qnan = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

// Worst error/tolerance ratio per check, printed at exit with FUSOR_TEST_REPORT=1.
struct error_report {
  std::map<std::string, std::pair<double, double>> worst;  // what -> (ratio, abs error)
  ~error_report() {
    if (!std::getenv("FUSOR_TEST_REPORT")) return;
    for (const auto& [what, r] : worst)
      std::fprintf(stderr, "%-64s max err/tol %.3g  max |err| %.3g\n", what.c_str(), r.first, r.second);
  }
  void note(const std::string& what, double ratio, double err) {
    auto& w = worst[what];
    w.first = std::max(w.first, ratio);
    w.second = std::max(w.second, err);
  }
};
error_report report;

float to_f(float x) { return x; }
float to_f(__half x) { return __half2float(x); }
float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
double to_f(double x) { return x; }
template <class T>
T from_f(float x) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(x);
  else return x;
}

std::vector<float> rnd(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = to_f(v[i]);
  return d;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      UNSCOPED_INFO("first bitwise difference at element " << i << ": " << to_f(a[i]) << " vs " << to_f(b[i]));
      return false;
    }
  return true;
}

// ---------------------------------------------------------------------------
// Layouts and geometry

enum class lay { bhsd, bshd, packed };
const char* name_of(lay l) { return l == lay::bhsd ? "bhsd" : l == lay::bshd ? "bshd" : "packed"; }

struct geom {
  i64 B, Hq, Hkv, Sq, Sk, D, Dv;
};

/// Offset of element (b, h, s, d) of a tensor of H heads, S positions and head
/// dim Dd stored in layout L (packed [B, S, H * Dd] is bshd's memory order).
i64 off(lay L, i64 H, i64 S, i64 Dd, i64 b, i64 h, i64 s, i64 d) {
  return L == lay::bhsd ? ((b * H + h) * S + s) * Dd + d : ((b * S + s) * H + h) * Dd + d;
}
/// Strides of the logical [B, H, S, Dd] view of a tensor stored in layout L.
fusor::shape<4> bhsd_strides(lay L, i64 H, i64 S, i64 Dd) {
  if (L == lay::bhsd) return {H * S * Dd, S * Dd, Dd, 1};
  return {S * H * Dd, Dd, H * Dd, 1};
}
/// The same tensor in another layout.
template <class T>
std::vector<T> relayout(const std::vector<T>& x, lay from, lay to, i64 B, i64 H, i64 S, i64 Dd) {
  std::vector<T> y(x.size());
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < H; ++h)
      for (i64 s = 0; s < S; ++s)
        for (i64 d = 0; d < Dd; ++d) y[off(to, H, S, Dd, b, h, s, d)] = x[off(from, H, S, Dd, b, h, s, d)];
  return y;
}
/// K or V [B, Hkv, S, Dd] (layout L) repeated per query head: head h of the
/// result is head h / (Hq / Hkv) of x (torch.repeat_interleave on dim 1).
template <class T>
std::vector<T> repeat_heads(const std::vector<T>& x, lay L, i64 B, i64 Hkv, i64 Hq, i64 S, i64 Dd) {
  std::vector<T> y(std::size_t(B * Hq * S * Dd));
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < Hq; ++h)
      for (i64 s = 0; s < S; ++s)
        for (i64 d = 0; d < Dd; ++d)
          y[off(L, Hq, S, Dd, b, h, s, d)] = x[off(L, Hkv, S, Dd, b, h / (Hq / Hkv), s, d)];
  return y;
}

// ---------------------------------------------------------------------------
// The float64 reference with its error bound (see the file comment)

struct reference {
  std::vector<double> val, tol;
};

struct ref_problem {
  geom g;
  lay L = lay::bhsd;
  const std::vector<double>* q = nullptr;  // layout L: q [B, Hq, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv]
  const std::vector<double>* k = nullptr;
  const std::vector<double>* v = nullptr;
  const std::vector<float>* mask = nullptr;  // additive, [B, Hq, Sq, Sk] row-major (may hold -inf), or none
  double scale = 1;
  bool causal = false;
  const std::vector<double>* eq = nullptr;  // input error bounds (same layouts), or none
  const std::vector<double>* ek = nullptr;
  const std::vector<double>* ev = nullptr;
};

/// Row (b, h, i) of the reference, written into r (layout L of [B, Hq, Sq, Dv]).
void ref_row(const ref_problem& P, i64 b, i64 h, i64 i, reference& r) {
  const geom& g = P.g;
  const i64 hk = h / (g.Hq / g.Hkv);
  const auto Q = [&](const std::vector<double>& x, i64 d) { return x[off(P.L, g.Hq, g.Sq, g.D, b, h, i, d)]; };
  const auto K = [&](const std::vector<double>& x, i64 j, i64 d) { return x[off(P.L, g.Hkv, g.Sk, g.D, b, hk, j, d)]; };
  const auto V = [&](const std::vector<double>& x, i64 j, i64 d) { return x[off(P.L, g.Hkv, g.Sk, g.Dv, b, hk, j, d)]; };
  const auto O = [&](i64 d) { return std::size_t(off(P.L, g.Hq, g.Sq, g.Dv, b, h, i, d)); };
  if (g.Sk == 0) {  // no keys: softmax over nothing, then an empty sum: 0 (PyTorch too)
    for (i64 d = 0; d < g.Dv; ++d) r.val[O(d)] = 0, r.tol[O(d)] = 0;
    return;
  }
  std::vector<double> s(g.Sk), e(g.Sk), mk(g.Sk, 0.0);
  double m = -INFINITY;
  bool nan = false;
  for (i64 j = 0; j < g.Sk; ++j) {
    if (P.causal && j > i) {
      s[j] = -INFINITY;
      continue;
    }
    double dot = 0, mag = 0, ein = 0;
    for (i64 d = 0; d < g.D; ++d) {
      const double qd = Q(*P.q, d), kd = K(*P.k, j, d);
      dot += qd * kd;
      mag += std::abs(qd * kd);
      if (P.eq) {
        const double a = Q(*P.eq, d), c = K(*P.ek, j, d);
        ein += a * std::abs(kd) + std::abs(qd) * c + a * c;
      }
    }
    double sj = dot * P.scale;
    if (std::abs(sj) > double(std::numeric_limits<float>::max())) sj = sj > 0 ? INFINITY : -INFINITY;  // fp32 overflow
    if (P.mask) sj += mk[j] = (*P.mask)[std::size_t(((b * g.Hq + h) * g.Sq + i) * g.Sk + j)];
    s[j] = sj;
    e[j] = std::abs(P.scale) * ((double(g.D) + 2) * u32 * mag + ein);
    if (std::isnan(sj)) nan = true;
    else m = std::max(m, sj);
  }
  if (nan || std::isinf(m)) {  // NaN score, every score -inf (masked row), or an overflowing +inf score
    for (i64 d = 0; d < g.Dv; ++d) r.val[O(d)] = std::numeric_limits<double>::quiet_NaN(), r.tol[O(d)] = 0;
    return;
  }
  std::vector<double> p(g.Sk), w(g.Sk, 0.0);
  double l = 0;
  for (i64 j = 0; j < g.Sk; ++j) l += p[j] = std::exp(s[j] - m);
  double eta = 0;
  for (i64 j = 0; j < g.Sk; ++j) {
    p[j] /= l;
    if (p[j] == 0) continue;
    const double eps = e[j] + u32 * (3 * std::abs(s[j]) + std::abs(mk[j]) + std::abs(s[j] - m)) + 4 * u32;
    eta += w[j] = p[j] * std::expm1(eps);
  }
  const double tiles = double((g.Sk + 31) / 32);
  for (i64 d = 0; d < g.Dv; ++d) {
    double o = 0, a = 0, aw = 0, pw = 0, evs = 0;
    for (i64 j = 0; j < g.Sk; ++j) {
      if (p[j] == 0) continue;
      const double vj = V(*P.v, j, d);
      o += p[j] * vj;
      a += p[j] * std::abs(vj);
      aw += w[j] * std::abs(vj);
      pw += (p[j] + w[j]) * std::abs(vj);
      if (P.ev) evs += (p[j] + w[j]) * V(*P.ev, j, d);
    }
    r.val[O(d)] = o;
    r.tol[O(d)] = (aw + eta * pw) / (1 - eta) + (2 * double(g.Sk) + 4 * tiles + 8) * u32 * a + 2 * u32 * std::abs(o) +
                  evs / (1 - eta);
  }
}

reference attention_ref(const ref_problem& P) {
  const geom& g = P.g;
  reference r;
  r.val.assign(std::size_t(g.B * g.Hq * g.Sq * g.Dv), 0.0);
  r.tol = r.val;
  for (i64 b = 0; b < g.B; ++b)
    for (i64 h = 0; h < g.Hq; ++h)
      for (i64 i = 0; i < g.Sq; ++i) ref_row(P, b, h, i, r);
  return r;
}

/// 16-bit output rounding on top of the fp32 bound.
template <class T>
reference for_output(reference r) {
  double u16 = 0, sub = 0;
  if constexpr (std::is_same_v<T, __half>) u16 = 0x1p-11, sub = 0x1p-24;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) u16 = 0x1p-8;
  for (std::size_t i = 0; i < r.val.size(); ++i) r.tol[i] += u16 * (std::abs(r.val[i]) + r.tol[i]) + sub;
  return r;
}

/// got vs ref: NaN where ref is NaN, |got - ref| <= tol elsewhere (so a NaN
/// or infinite result where the reference is finite fails). Reports the worst
/// element.
template <class T>
void check_close(const std::string& what, const std::vector<T>& got_t, const reference& ref) {
  INFO(what);
  REQUIRE(got_t.size() == ref.val.size());
  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0, worst_err = 0;
  for (std::size_t i = 0; i < got_t.size(); ++i) {
    const double got = to_f(got_t[i]), want = ref.val[i];
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(got);
    } else {
      const double err = std::abs(got - want);
      ok = err <= ref.tol[i];
      const double ratio = err == 0 ? 0 : (ref.tol[i] > 0 ? err / ref.tol[i] : INFINITY);
      if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
      worst_err = std::max(worst_err, std::isnan(err) ? INFINITY : err);
    }
    if (!ok) {
      if (bad < 3)
        UNSCOPED_INFO("element " << i << ": got " << got << ", reference " << want << ", tol " << ref.tol[i]);
      ++bad;
    }
  }
  INFO("worst element " << worst << ": err/tol = " << worst_ratio);
  CHECK(bad == 0);
  const auto cut = what.find(" [");
  report.note(cut == std::string::npos ? what : what.substr(0, cut), worst_ratio, worst_err);
}

/// A vector as a reference with tolerance tol_of(i).
template <class T>
reference as_reference(const std::vector<T>& v, const std::vector<double>& tol) {
  reference r{to_double(v), tol};
  return r;
}
std::vector<double> scaled(const std::vector<double>& t, double f) {
  std::vector<double> r(t);
  for (auto& x : r) x *= f;
  return r;
}

// ---------------------------------------------------------------------------
// Runners

/// An attention problem: operands in layout L; `mask` additive over
/// [mb, mh, mq, Sk] (mb in {1, B}, mh in {1, Hq}, mq in {1, Sq}), broadcast
/// to [B, Hq, Sq, Sk] as PyTorch does.
struct problem {
  geom g;
  lay L = lay::bhsd;
  bool causal = false;
  std::vector<float> q, k, v;
  std::vector<float> mask;
  i64 mb = 1, mh = 1, mq = 1;
  /// SDPA's scale: float(1 / sqrt(D)) unless set.
  float scale() const { return float(1.0 / std::sqrt(double(g.D))); }
};

/// Random operands (q scaled by 2: a peakier softmax than uniform [-1, 1)).
problem make_problem(geom g, lay L, bool causal, unsigned seed, int mask_kind = 0) {
  problem P{g, L, causal, {}, {}, {}, {}};
  P.q = rnd(std::size_t(g.B * g.Hq * g.Sq * g.D), seed, -2.0f, 2.0f);
  P.k = rnd(std::size_t(g.B * g.Hkv * g.Sk * g.D), seed + 1);
  P.v = rnd(std::size_t(g.B * g.Hkv * g.Sk * g.Dv), seed + 2);
  if (mask_kind == 1) {  // padding [B, 1, 1, Sk]: batch b sees its first max(1, Sk - 5b) keys, plus a bias
    P.mb = g.B;
    P.mask = rnd(std::size_t(g.B * g.Sk), seed + 3);
    for (i64 b = 0; b < g.B; ++b)
      for (i64 j = std::max<i64>(1, g.Sk - 5 * b); j < g.Sk; ++j) P.mask[std::size_t(b * g.Sk + j)] = -inf;
  } else if (mask_kind == 2) {  // [1, 1, Sq, Sk]: a relative-position style bias
    P.mq = g.Sq;
    P.mask.resize(std::size_t(g.Sq * g.Sk));
    for (i64 i = 0; i < g.Sq; ++i)
      for (i64 j = 0; j < g.Sk; ++j) P.mask[std::size_t(i * g.Sk + j)] = -0.1f * float(std::abs(i - j) % 7);
  } else if (mask_kind == 3) {  // [B, Hq, Sq, Sk], a random bias
    P.mb = g.B, P.mh = g.Hq, P.mq = g.Sq;
    P.mask = rnd(std::size_t(g.B * g.Hq * g.Sq * g.Sk), seed + 4, -2.0f, 2.0f);
  }
  return P;
}

/// The mask broadcast to [B, Hq, Sq, Sk] with -inf above the diagonal when
/// causal: what the hand-written form adds to the scores.
std::vector<float> full_mask(const problem& P, bool with_causal = true) {
  const geom& g = P.g;
  std::vector<float> m(std::size_t(g.B * g.Hq * g.Sq * g.Sk), 0.0f);
  for (i64 b = 0; b < g.B; ++b)
    for (i64 h = 0; h < g.Hq; ++h)
      for (i64 i = 0; i < g.Sq; ++i)
        for (i64 j = 0; j < g.Sk; ++j) {
          float x = 0;
          if (!P.mask.empty())
            x = P.mask[std::size_t(
                (((P.mb > 1 ? b : 0) * P.mh + (P.mh > 1 ? h : 0)) * P.mq + (P.mq > 1 ? i : 0)) * g.Sk + j)];
          if (with_causal && P.causal && j > i) x = x - inf;
          m[std::size_t(((b * g.Hq + h) * g.Sq + i) * g.Sk + j)] = x;
        }
  return m;
}

/// The float64 reference of P, with SDPA's default scale rounded to fp32 as
/// fusor uses it, or `scale` (the golden cases: the exact 1 / sqrt(D); the
/// bound covers the fp32 rounding of the scale, see eps_j).
reference reference_of(const problem& P, double scale = std::numeric_limits<double>::quiet_NaN()) {
  const auto q = to_double(P.q), k = to_double(P.k), v = to_double(P.v);
  const auto m = full_mask(P, false);
  ref_problem R{P.g, P.L, &q, &k, &v, P.mask.empty() ? nullptr : &m, std::isnan(scale) ? double(P.scale()) : scale,
                P.causal};
  return attention_ref(R);
}

/// fusor::scaled_dot_product_attention(q, k, v, params, mask) into a fresh
/// output (layout L), on executor ex. Default scale (NaN) unless `scale` given.
template <class T, class Ex = fusor::host_executor>
std::vector<T> run_sdpa(const problem& P, const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
                        std::size_t* kernels = nullptr, Ex ex = {}, float scale = qnan) {
  const geom& g = P.g;
  std::vector<T> out(std::size_t(g.B * g.Hq * g.Sq * g.Dv), from_f<T>(sentinel));
  attention_params p{};
  p.scale = scale;
  p.causal = P.causal;
  auto go = [&](const auto& Q, const auto& K, const auto& V, const auto& O) {
    fusor::run_result r;
    if (P.mask.empty()) {
      const auto e = fusor::scaled_dot_product_attention(Q, K, V, p);
      static_assert(fusor::kernel_count<decltype(e)> == 1);
      r = fusor::run(O, e, ex);
    } else {
      const auto M = host_view(P.mask.data(), P.mb, P.mh, P.mq, g.Sk);
      const auto e = fusor::scaled_dot_product_attention(Q, K, V, p, M);
      static_assert(fusor::kernel_count<decltype(e)> == 1);
      r = fusor::run(O, e, ex);
    }
    if (kernels) *kernels = r.kernels;
  };
  if (P.L == lay::packed) {
    if constexpr (std::is_same_v<T, float>) {
      p.heads = int(g.Hq), p.kv_heads = int(g.Hkv);
      go(host_view(q.data(), g.B, g.Sq, g.Hq * g.D), host_view(k.data(), g.B, g.Sk, g.Hkv * g.D),
         host_view(v.data(), g.B, g.Sk, g.Hkv * g.Dv), host_view(out.data(), g.B, g.Sq, g.Hq * g.Dv));
    } else {
      FAIL("16-bit packed operands are not exercised here");
    }
  } else if (P.L == lay::bshd) {
    p.layout = attention_layout::bshd;
    go(host_view(q.data(), g.B, g.Sq, g.Hq, g.D), host_view(k.data(), g.B, g.Sk, g.Hkv, g.D),
       host_view(v.data(), g.B, g.Sk, g.Hkv, g.Dv), host_view(out.data(), g.B, g.Sq, g.Hq, g.Dv));
  } else {
    go(host_view(q.data(), g.B, g.Hq, g.Sq, g.D), host_view(k.data(), g.B, g.Hkv, g.Sk, g.D),
       host_view(v.data(), g.B, g.Hkv, g.Sk, g.Dv), host_view(out.data(), g.B, g.Hq, g.Sq, g.Dv));
  }
  return out;
}

/// Attention written by hand over bhsd views of P's operands (strided for
/// bshd/packed; K and V repeated per query head for GQA), the causal mask
/// folded into the additive mask:
///   matmul(softmax(matmul(q, transpose(k)) * s [+ mask], -1), v)
/// On host() the planner recognises it (one flash kernel); on unfused() it
/// runs as written. Output in layout L.
template <class T, class Ex>
std::vector<T> run_handwritten(const problem& P, const std::vector<T>& q, const std::vector<T>& k0,
                               const std::vector<T>& v0, const Ex& ex, std::size_t* kernels = nullptr) {
  const geom& g = P.g;
  const auto k = repeat_heads(k0, P.L, g.B, g.Hkv, g.Hq, g.Sk, g.D);
  const auto v = repeat_heads(v0, P.L, g.B, g.Hkv, g.Hq, g.Sk, g.Dv);
  const auto fm = full_mask(P);
  std::vector<T> out(std::size_t(g.B * g.Hq * g.Sq * g.Dv), from_f<T>(sentinel));
  const auto Q = host_view(q.data(), fusor::dextents<4>(g.B, g.Hq, g.Sq, g.D), bhsd_strides(P.L, g.Hq, g.Sq, g.D));
  const auto K = host_view(k.data(), fusor::dextents<4>(g.B, g.Hq, g.Sk, g.D), bhsd_strides(P.L, g.Hq, g.Sk, g.D));
  const auto V = host_view(v.data(), fusor::dextents<4>(g.B, g.Hq, g.Sk, g.Dv), bhsd_strides(P.L, g.Hq, g.Sk, g.Dv));
  const auto O = host_view(out.data(), fusor::dextents<4>(g.B, g.Hq, g.Sq, g.Dv), bhsd_strides(P.L, g.Hq, g.Sq, g.Dv));
  const float s = P.scale();
  fusor::run_result r;
  if (P.mask.empty() && !P.causal) {
    const auto e = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * s, -1), V);
    static_assert(fusor::kernel_count<decltype(e)> == 1 && fusor::unfused_kernel_count<decltype(e)> == 4);
    r = fusor::run(O, e, ex);
  } else {
    const auto M = host_view(fm.data(), g.B, g.Hq, g.Sq, g.Sk);
    const auto e = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * s + M, -1), V);
    static_assert(fusor::kernel_count<decltype(e)> == 1 && fusor::unfused_kernel_count<decltype(e)> == 5);
    r = fusor::run(O, e, ex);
  }
  if (kernels) *kernels = r.kernels;
  return out;
}

std::string describe(const problem& P) {
  const geom& g = P.g;
  return std::string(name_of(P.L)) + (P.causal ? " causal" : "") + " B=" + std::to_string(g.B) +
         " Hq=" + std::to_string(g.Hq) + " Hkv=" + std::to_string(g.Hkv) + " Sq=" + std::to_string(g.Sq) +
         " Sk=" + std::to_string(g.Sk) + " D=" + std::to_string(g.D) + " Dv=" + std::to_string(g.Dv) +
         (P.mask.empty() ? ""
                         : " mask[" + std::to_string(P.mb) + "," + std::to_string(P.mh) + "," + std::to_string(P.mq) +
                               ",Sk]");
}

/// The full comparison for one float problem: SDPA (fused) and the hand-written
/// form (fused: recognised; unfused: as written) against the float64
/// reference, each other, and (bshd/packed) SDPA on the bhsd copy.
void check_problem(const problem& P) {
  const std::string tag = " [" + describe(P) + "]";
  INFO(describe(P));
  const reference ref = reference_of(P);
  std::size_t n_sdpa = 0, n_hand = 0, n_unf = 0;
  const auto sdpa = run_sdpa(P, P.q, P.k, P.v, &n_sdpa);
  CHECK(n_sdpa == 1);
  check_close("sdpa fused vs float64" + tag, sdpa, ref);

  const auto hand = run_handwritten(P, P.q, P.k, P.v, fusor::host(), &n_hand);
  CHECK(n_hand == 1);  // recognised: one flash kernel
  CHECK(same_bits(hand, sdpa));  // the same kernel on the same values, the causal mask folded in exactly

  const auto unf = run_handwritten(P, P.q, P.k, P.v, fusor::unfused(), &n_unf);
  CHECK(n_unf == ((P.mask.empty() && !P.causal) ? 4u : 5u));
  check_close("handwritten unfused vs float64" + tag, unf, ref);
  check_close("sdpa fused vs handwritten unfused (2x bound)" + tag, sdpa, as_reference(unf, scaled(ref.tol, 2)));

  if (P.L != lay::bhsd) {  // the same problem stored bhsd: bitwise the same results
    const geom& g = P.g;
    problem B = P;
    B.L = lay::bhsd;
    B.q = relayout(P.q, P.L, lay::bhsd, g.B, g.Hq, g.Sq, g.D);
    B.k = relayout(P.k, P.L, lay::bhsd, g.B, g.Hkv, g.Sk, g.D);
    B.v = relayout(P.v, P.L, lay::bhsd, g.B, g.Hkv, g.Sk, g.Dv);
    const auto out_b = run_sdpa(B, B.q, B.k, B.v);
    CHECK(same_bits(relayout(out_b, lay::bhsd, P.L, g.B, g.Hq, g.Sq, g.Dv), sdpa));
  }
  if (P.g.Hkv != P.g.Hq) {  // GQA equals plain attention over K/V repeated per query head, bitwise
    const geom& g = P.g;
    problem R = P;
    R.g.Hkv = g.Hq;
    R.k = repeat_heads(P.k, P.L, g.B, g.Hkv, g.Hq, g.Sk, g.D);
    R.v = repeat_heads(P.v, P.L, g.B, g.Hkv, g.Hq, g.Sk, g.Dv);
    CHECK(same_bits(run_sdpa(R, R.q, R.k, R.v), sdpa));
  }
}

/// Golden helpers.
reference golden_bound(const reference& ref, const std::vector<float>& golden) {
  reference r = ref;
  for (std::size_t i = 0; i < r.val.size(); ++i) r.tol[i] += u32 * std::abs(golden[i]);
  return r;
}
/// The float64 reference must reproduce torch's float64-then-rounded output.
void check_reference_matches_golden(const std::string& what, const reference& ref, const std::vector<float>& golden) {
  reference g{to_double(golden), std::vector<double>(golden.size())};
  for (std::size_t i = 0; i < golden.size(); ++i) g.tol[i] = u32 * std::abs(double(golden[i])) + 1e-12;
  std::vector<double> val = ref.val;
  check_close(what, val, g);
}
}  // namespace

// ===========================================================================
// Golden cases (tests/data/torch, written by tools/gen_golden.py)

TEST_CASE("golden attention_bert: padding mask [B,1,1,S] with -inf, bhsd, default scale", "[attention][golden]") {
  using namespace fusor::testing;
  const golden_case c = load_golden("attention_bert");
  const auto& a = c.attr("attention");
  REQUIRE(a.at("layout") == "bhsd");
  REQUIRE(a.at("causal") == false);
  const auto q = c.tensor("q"), k = c.tensor("k"), v = c.tensor("v"), mb = c.tensor("mask_bias");
  const i64 B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  const double scale = a.at("scale").get<double>();
  REQUIRE(scale == 1.0 / std::sqrt(double(D)));
  const auto lens = a.at("key_lengths").get<std::vector<i64>>();
  // The mask [B, 1, 1, S]: mask_bias, -inf on the padded keys.
  std::vector<float> mask4(std::size_t(B * S));
  for (i64 b = 0; b < B; ++b)
    for (i64 j = 0; j < S; ++j)
      mask4[std::size_t(b * S + j)] = mb.data[std::size_t(b * S + j)] + (j >= lens[std::size_t(b)] ? -inf : 0.0f);
  REQUIRE(std::count(mask4.begin(), mask4.end(), -inf) == S - lens[1]);
  const problem P{{B, H, H, S, S, D, D}, lay::bhsd, false, q.data, k.data, v.data, mask4, B, 1, 1};
  const auto golden = c.output("out").data;
  const reference ref = reference_of(P, scale);
  check_reference_matches_golden("golden attention_bert: float64 reference", ref, golden);
  const reference bound = golden_bound(ref, golden);
  const reference gold{to_double(golden), bound.tol};

  // The mask as PyTorch passes it: a [B, 1, 1, S] view broadcast by the kernel.
  std::vector<float> out(q.data.size(), sentinel);
  const auto Q = host_view(q.data.data(), B, H, S, D), K = host_view(k.data.data(), B, H, S, D),
             V = host_view(v.data.data(), B, H, S, D);
  const auto M = host_view(mask4.data(), B, i64(1), i64(1), S);
  const auto e = fusor::scaled_dot_product_attention(Q, K, V, {}, M);
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  CHECK(fusor::run(host_view(out.data(), B, H, S, D), e, fusor::host()).kernels == 1);
  check_close("golden attention_bert: sdpa fused", out, gold);

  // Hand-written with the [B, 1, 1, S] mask: recognised (1 kernel, bitwise the
  // same) and unfused (5 kernels).
  const float s = float(1.0 / std::sqrt(double(D)));
  const auto h = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * s + M, -1), V);
  std::vector<float> hand(out.size(), sentinel), unf(out.size(), sentinel);
  CHECK(fusor::run(host_view(hand.data(), B, H, S, D), h, fusor::host()).kernels == 1);
  CHECK(same_bits(hand, out));
  CHECK(fusor::run(host_view(unf.data(), B, H, S, D), h, fusor::unfused()).kernels == 5);
  check_close("golden attention_bert: handwritten unfused", unf, gold);
}

TEST_CASE("golden attention_llama_gqa: 8 query heads over 2 kv heads, causal", "[attention][golden]") {
  using namespace fusor::testing;
  const golden_case c = load_golden("attention_llama_gqa");
  const auto& a = c.attr("attention");
  REQUIRE(a.at("causal") == true);
  const auto q = c.tensor("q"), k = c.tensor("k"), v = c.tensor("v");
  const i64 B = q.shape[0], Hq = q.shape[1], Hkv = k.shape[1], S = q.shape[2], D = q.shape[3];
  REQUIRE(a.at("heads") == Hq);
  REQUIRE(a.at("kv_heads") == Hkv);
  problem P{{B, Hq, Hkv, S, S, D, D}, lay::bhsd, true, q.data, k.data, v.data, {}};
  const auto golden = c.output("out").data;
  const reference ref = reference_of(P, a.at("scale").get<double>());
  check_reference_matches_golden("golden attention_llama_gqa: float64 reference", ref, golden);
  const reference gold{to_double(golden), golden_bound(ref, golden).tol};
  std::size_t n = 0;
  const auto out = run_sdpa(P, P.q, P.k, P.v, &n);
  CHECK(n == 1);
  check_close("golden attention_llama_gqa: sdpa fused", out, gold);
  const auto unf = run_handwritten(P, P.q, P.k, P.v, fusor::unfused(), &n);  // k, v repeat_interleave'd, causal mask
  CHECK(n == 5);
  check_close("golden attention_llama_gqa: handwritten unfused", unf, gold);
  // The same problem packed ([B, S, H * D], heads = 8, kv_heads = 2): bitwise equal.
  problem Pk = P;
  Pk.L = lay::packed;
  Pk.q = relayout(P.q, lay::bhsd, lay::packed, B, Hq, S, D);
  Pk.k = relayout(P.k, lay::bhsd, lay::packed, B, Hkv, S, D);
  Pk.v = relayout(P.v, lay::bhsd, lay::packed, B, Hkv, S, D);
  CHECK(same_bits(relayout(run_sdpa(Pk, Pk.q, Pk.k, Pk.v), lay::packed, lay::bhsd, B, Hq, S, D), out));
}

TEST_CASE("golden attention_cross: bshd, 5 queries over 67 keys, head_dim 80", "[attention][golden]") {
  using namespace fusor::testing;
  const golden_case c = load_golden("attention_cross");
  REQUIRE(c.attr("attention").at("layout") == "bshd");
  const auto q = c.tensor("q"), k = c.tensor("k"), v = c.tensor("v");
  const i64 B = q.shape[0], Sq = q.shape[1], H = q.shape[2], D = q.shape[3], Sk = k.shape[1];
  problem P{{B, H, H, Sq, Sk, D, D}, lay::bshd, false, q.data, k.data, v.data, {}};
  const auto golden = c.output("out").data;
  const reference ref = reference_of(P, c.attr("attention").at("scale").get<double>());
  check_reference_matches_golden("golden attention_cross: float64 reference", ref, golden);
  const reference gold{to_double(golden), golden_bound(ref, golden).tol};
  std::size_t n = 0;
  const auto out = run_sdpa(P, P.q, P.k, P.v, &n);
  CHECK(n == 1);
  check_close("golden attention_cross: sdpa fused", out, gold);
  const auto hand = run_handwritten(P, P.q, P.k, P.v, fusor::host(), &n);  // strided bhsd views of bshd memory
  CHECK(n == 1);
  CHECK(same_bits(hand, out));
  const auto unf = run_handwritten(P, P.q, P.k, P.v, fusor::unfused(), &n);
  CHECK(n == 4);
  check_close("golden attention_cross: handwritten unfused", unf, gold);
}

namespace {
/// y = x W^T + b (x [rows, K], W [N, K]) in float64 with the fp32 error bound
/// of fusor's GEMM: DOT + bias add, + u|y| when the result is stored as fp32,
/// + propagated input errors ex.
reference linear_ref(const std::vector<double>& x, const std::vector<double>* ex, i64 rows, i64 K,
                     const std::vector<float>& W, const std::vector<float>& b, i64 N, bool stored) {
  reference r;
  r.val.assign(std::size_t(rows * N), 0.0);
  r.tol = r.val;
  for (i64 i = 0; i < rows; ++i)
    for (i64 n = 0; n < N; ++n) {
      double y = b[std::size_t(n)], mag = std::abs(double(b[std::size_t(n)])), prop = 0;
      for (i64 kk = 0; kk < K; ++kk) {
        const double xv = x[std::size_t(i * K + kk)], wv = W[std::size_t(n * K + kk)];
        y += xv * wv;
        mag += std::abs(xv * wv);
        if (ex) prop += (*ex)[std::size_t(i * K + kk)] * std::abs(wv);
      }
      r.val[std::size_t(i * N + n)] = y;
      r.tol[std::size_t(i * N + n)] = (double(K) + 2) * u32 * mag + prop + (stored ? u32 * std::abs(y) : 0.0);
    }
  return r;
}
}  // namespace

TEST_CASE("golden mha_block: multi_head_attention + residual in 3 kernels, stage by stage and end to end",
          "[attention][golden]") {
  using namespace fusor::testing;
  const golden_case c = load_golden("mha_block");
  const auto& a = c.attr("attention");
  REQUIRE(a.at("causal") == true);
  REQUIRE(a.at("layout") == "packed");
  const auto x = c.tensor("x");
  const i64 B = x.shape[0], S = x.shape[1], E = x.shape[2], H = a.at("heads").get<i64>(), D = E / H;
  const auto wq = c.tensor("q_proj.weight").data, wk = c.tensor("k_proj.weight").data,
             wv = c.tensor("v_proj.weight").data, wo = c.tensor("out_proj.weight").data;
  const auto bq = c.tensor("q_proj.bias").data, bk = c.tensor("k_proj.bias").data, bv = c.tensor("v_proj.bias").data,
             bo = c.tensor("out_proj.bias").data;
  const auto X = host_view(x.data.data(), B, S, E);
  const auto Wq = host_view(wq.data(), E, E), Wk = host_view(wk.data(), E, E), Wv = host_view(wv.data(), E, E),
             Wo = host_view(wo.data(), E, E);
  const auto Bq = host_view(bq.data(), E), Bk = host_view(bk.data(), E), Bv = host_view(bv.data(), E),
             Bo = host_view(bo.data(), E);
  attention_params p{};
  p.causal = true;
  p.heads = int(H);
  const auto w = fusor::attention_weights{Wq, Wk, Wv, Wo, Bq, Bk, Bv, Bo};
  const auto block = X + fusor::multi_head_attention(X, w, p);
  STATIC_REQUIRE(fusor::kernel_count<decltype(block)> == 3);
  STATIC_REQUIRE(fusor::kernel_count<decltype(block), fusor::host_policy> == 3);

  // End-to-end float64 reference with the propagated bound (file comment).
  const auto xd = to_double(x.data);
  const i64 rows = B * S;
  const reference rq = linear_ref(xd, nullptr, rows, E, wq, bq, E, true);
  const reference rk = linear_ref(xd, nullptr, rows, E, wk, bk, E, true);
  const reference rv = linear_ref(xd, nullptr, rows, E, wv, bv, E, true);
  ref_problem R{{B, H, H, S, S, D, D}, lay::packed, &rq.val, &rk.val, &rv.val, nullptr, a.at("scale").get<double>(),
                true, &rq.tol, &rk.tol, &rv.tol};
  const reference ra = attention_ref(R);
  reference ry = linear_ref(ra.val, &ra.tol, rows, E, wo, bo, E, true);  // + u|y|: the unfused executor stores y
  reference rout = ry;
  for (std::size_t i = 0; i < rout.val.size(); ++i) {
    rout.val[i] += xd[i];
    rout.tol[i] += u32 * std::abs(rout.val[i]);
  }
  // torch's stages (each computed from the previous stored stage) lie within the bounds too.
  check_close("golden mha_block: reference q", c.output("q").data, rq);
  check_close("golden mha_block: reference attn", c.output("attn").data, ra);
  check_close("golden mha_block: reference out", c.output("out").data, rout);

  std::vector<float> out(x.data.size(), sentinel), unf(x.data.size(), sentinel);
  CHECK(fusor::run(host_view(out.data(), B, S, E), block, fusor::host()).kernels == 3);
  check_close("golden mha_block: fused end to end", out, rout);
  CHECK(fusor::run(host_view(unf.data(), B, S, E), block, fusor::unfused()).kernels == 6);
  check_close("golden mha_block: unfused end to end", unf, rout);
  check_close("golden mha_block: fused vs unfused (2x bound)", out, as_reference(unf, scaled(rout.tol, 2)));

  // Stage by stage from torch's stored stages.
  const auto gq = c.output("q").data, gk = c.output("k").data, gv = c.output("v").data, gattn = c.output("attn").data;
  {
    problem P{{B, H, H, S, S, D, D}, lay::packed, true, gq, gk, gv, {}};
    const auto golden = gattn;
    const reference ref = reference_of(P, a.at("scale").get<double>());
    std::size_t n = 0;
    const auto att = run_sdpa(P, P.q, P.k, P.v, &n);
    CHECK(n == 1);
    check_close("golden mha_block: attn stage (sdpa packed)", att, reference{to_double(golden), golden_bound(ref, golden).tol});
  }
  {
    const auto gout = c.output("out").data;
    reference r = linear_ref(to_double(gattn), nullptr, rows, E, wo, bo, E, false);
    for (std::size_t i = 0; i < r.val.size(); ++i) {
      // Compare with torch's stage: the bound plus torch's own roundings of y and out.
      r.tol[i] += 2 * u32 * (std::abs(r.val[i]) + std::abs(double(gout[i])));
      r.val[i] = gout[i];
    }
    std::vector<float> o(x.data.size(), sentinel);
    const auto A = host_view(gattn.data(), B, S, E);
    const auto e = X + fusor::linear(A, Wo, Bo);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    CHECK(fusor::run(host_view(o.data(), B, S, E), e, fusor::host()).kernels == 1);
    check_close("golden mha_block: out stage (linear + residual)", o, r);
  }

  // The block written step by step (separate runs: q, k, v GEMMs, SDPA, out +
  // residual) gives bitwise the same result as the 3-kernel block.
  {
    std::vector<float> tq(x.data.size()), tk(x.data.size()), tv(x.data.size()), ta(x.data.size()), o(x.data.size());
    CHECK(fusor::run(host_view(tq.data(), B, S, E), fusor::linear(X, Wq, Bq), fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(tk.data(), B, S, E), fusor::linear(X, Wk, Bk), fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(tv.data(), B, S, E), fusor::linear(X, Wv, Bv), fusor::host()).kernels == 1);
    const auto cq = host_view(static_cast<const float*>(tq.data()), B, S, E);
    const auto ck = host_view(static_cast<const float*>(tk.data()), B, S, E);
    const auto cv = host_view(static_cast<const float*>(tv.data()), B, S, E);
    CHECK(fusor::run(host_view(ta.data(), B, S, E), fusor::scaled_dot_product_attention(cq, ck, cv, p), fusor::host())
              .kernels == 1);
    const auto ca = host_view(static_cast<const float*>(ta.data()), B, S, E);
    CHECK(fusor::run(host_view(o.data(), B, S, E), X + fusor::linear(ca, Wo, Bo), fusor::host()).kernels == 1);
    CHECK(same_bits(o, out));
  }
}

// ===========================================================================
// Fused vs unfused on random inputs

TEST_CASE("fused vs hand-written unfused: layouts, causal, lengths around the key tile and query block",
          "[attention]") {
  unsigned seed = 100;
  for (lay L : {lay::bhsd, lay::bshd, lay::packed})
    for (bool causal : {false, true})
      for (i64 S : {1, 31, 32, 33, 63, 64, 65}) check_problem(make_problem({2, 2, 2, S, S, 32, 32}, L, causal, seed++));
}

TEST_CASE("fused vs hand-written unfused: Sq != Sk", "[attention]") {
  unsigned seed = 200;
  const std::pair<i64, i64> lengths[] = {{5, 67}, {67, 5}, {1, 65}, {65, 1}, {33, 100}, {100, 33}, {64, 96}, {2, 129}};
  int n = 0;
  for (const auto& [sq, sk] : lengths)
    for (bool causal : {false, true})
      check_problem(make_problem({2, 2, 2, sq, sk, 32, 32}, n++ % 2 ? lay::bshd : lay::bhsd, causal, seed++));
}

TEST_CASE("fused vs hand-written unfused: head_dim 32, 64, 80, 128 and Dv != D", "[attention]") {
  unsigned seed = 300;
  for (i64 D : {32, 64, 80, 128})
    for (lay L : {lay::bhsd, lay::bshd, lay::packed})
      check_problem(make_problem({1, 2, 2, 40, 33, D, D}, L, L == lay::bshd, seed++));
  check_problem(make_problem({1, 2, 2, 33, 40, 64, 32}, lay::bhsd, false, seed++));
  check_problem(make_problem({1, 2, 2, 33, 40, 16, 128}, lay::bshd, true, seed++));
  check_problem(make_problem({1, 2, 2, 20, 70, 128, 80}, lay::packed, false, seed++));
  check_problem(make_problem({1, 1, 1, 9, 9, 1, 1}, lay::bhsd, false, seed++));  // head_dim 1
}

TEST_CASE("fused vs hand-written unfused: grouped-query attention", "[attention]") {
  unsigned seed = 400;
  const std::pair<i64, i64> heads[] = {{8, 2}, {6, 3}, {4, 1}};
  for (const auto& [hq, hkv] : heads)
    for (lay L : {lay::bhsd, lay::bshd, lay::packed})
      for (bool causal : {false, true}) check_problem(make_problem({2, hq, hkv, 33, 37, 32, 32}, L, causal, seed++));
}

TEST_CASE("fused vs hand-written unfused: additive masks broadcast from [B,1,1,Sk], [1,1,Sq,Sk], [B,H,Sq,Sk]",
          "[attention]") {
  unsigned seed = 500;
  for (int kind : {1, 2, 3})
    for (lay L : {lay::bhsd, lay::bshd, lay::packed})
      for (bool causal : {false, true}) check_problem(make_problem({2, 4, 2, 33, 40, 32, 32}, L, causal, seed++, kind));
}

TEST_CASE("hand-written forms: * s, s *, / s, q * s, negative s, mask first, rank 3, axis 3", "[attention]") {
  const geom g{2, 3, 3, 37, 45, 32, 32};
  const problem P = make_problem(g, lay::bhsd, false, 600, 3);
  const auto Q = host_view(P.q.data(), g.B, g.Hq, g.Sq, g.D), K = host_view(P.k.data(), g.B, g.Hkv, g.Sk, g.D),
             V = host_view(P.v.data(), g.B, g.Hkv, g.Sk, g.Dv);
  const auto M = host_view(P.mask.data(), g.B, g.Hq, g.Sq, g.Sk);
  const auto qd = to_double(P.q), kd = to_double(P.k), vd = to_double(P.v);
  const auto shape = [&](std::vector<float>& o) { return host_view(o.data(), g.B, g.Hq, g.Sq, g.Dv); };
  const std::size_t n = std::size_t(g.B * g.Hq * g.Sq * g.Dv);

  // Runs e fused (1 kernel) and unfused (`unfused_kernels`), both vs the reference with scale s.
  auto check_form = [&](const std::string& what, const auto& e, double s, bool masked, std::size_t unfused_kernels) {
    INFO(what);
    STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(e)>> == 1);
    ref_problem R{g, lay::bhsd, &qd, &kd, &vd, masked ? &P.mask : nullptr, s, false};
    const reference ref = attention_ref(R);
    std::vector<float> f(n, sentinel), u(n, sentinel);
    CHECK(fusor::run(shape(f), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(shape(u), e, fusor::unfused()).kernels == unfused_kernels);
    CHECK(fusor::unfused_kernel_count<std::remove_cvref_t<decltype(e)>> == std::size_t(unfused_kernels));
    check_close("form " + what + ": fused vs float64", f, ref);
    check_close("form " + what + ": unfused vs float64", u, ref);
    return f;
  };
  const float s = 0.125f;
  using fusor::matmul;
  using fusor::softmax;
  using fusor::transpose;
  const auto f_mul = check_form("* s", matmul(softmax(matmul(Q, transpose(K)) * s, -1), V), s, false, 4);
  const auto f_left = check_form("s *", matmul(softmax(s * matmul(Q, transpose(K)), -1), V), s, false, 4);
  CHECK(same_bits(f_left, f_mul));
  const auto f_div = check_form("/ s", matmul(softmax(matmul(Q, transpose(K)) / 8.0f, -1), V), 1.0 / 8.0, false, 4);
  CHECK(same_bits(f_div, f_mul));  // / 8 becomes * (1 / 8), exact here
  check_form("/ 3", matmul(softmax(matmul(Q, transpose(K)) / 3.0f, -1), V), 1.0 / 3.0, false, 4);
  check_form("q * s", matmul(softmax(matmul(Q * s, transpose(K)), -1), V), s, false, 4);
  check_form("negative s", matmul(softmax(matmul(Q, transpose(K)) * -0.3f, -1), V), double(-0.3f), false, 4);
  check_form("no scale", matmul(softmax(matmul(Q, transpose(K)), -1), V), 1.0, false, 3);
  const auto f_mask = check_form("* s + mask", matmul(softmax(matmul(Q, transpose(K)) * s + M, -1), V), s, true, 5);
  const auto f_first = check_form("mask + * s", matmul(softmax(M + matmul(Q, transpose(K)) * s, -1), V), s, true, 5);
  CHECK(same_bits(f_first, f_mask));
  check_form("/ s + mask", matmul(softmax(matmul(Q, transpose(K)) / 8.0f + M, -1), V), 1.0 / 8.0, true, 5);
  check_form("axis 3", matmul(softmax(matmul(Q, transpose(K)) * s, 3), V), s, false, 4);
  {
    // SDPA with the same scale and mask: bitwise equal to the recognised forms.
    attention_params p{};
    p.scale = s;
    std::vector<float> o(n, sentinel);
    CHECK(fusor::run(shape(o), fusor::scaled_dot_product_attention(Q, K, V, p, M), fusor::host()).kernels == 1);
    CHECK(same_bits(o, f_mask));
    // The unfused executor runs SDPA itself as the same single kernel.
    std::vector<float> o2(n, sentinel);
    CHECK(fusor::run(shape(o2), fusor::scaled_dot_product_attention(Q, K, V, p, M), fusor::unfused()).kernels == 1);
    CHECK(same_bits(o2, o));
  }
  {
    // Rank 3 ([B, S, D]): a single head.
    const geom g3{2, 1, 1, 37, 45, 32, 32};
    const problem P3 = make_problem(g3, lay::bhsd, false, 610);
    const auto q3 = host_view(P3.q.data(), g3.B, g3.Sq, g3.D), k3 = host_view(P3.k.data(), g3.B, g3.Sk, g3.D),
               v3 = host_view(P3.v.data(), g3.B, g3.Sk, g3.Dv);
    const auto e = matmul(softmax(matmul(q3, transpose(k3)) * s, -1), v3);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    std::vector<float> f(std::size_t(g3.B * g3.Sq * g3.Dv), sentinel), u(f.size(), sentinel);
    CHECK(fusor::run(host_view(f.data(), g3.B, g3.Sq, g3.Dv), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(u.data(), g3.B, g3.Sq, g3.Dv), e, fusor::unfused()).kernels == 4);
    const auto a = to_double(P3.q), b = to_double(P3.k), c = to_double(P3.v);
    const reference ref = attention_ref(ref_problem{g3, lay::bhsd, &a, &b, &c, nullptr, s, false});
    check_close("form rank 3: fused vs float64", f, ref);
    check_close("form rank 3: unfused vs float64", u, ref);
  }
}

TEST_CASE("a mask of rank 2 [Sq, Sk] broadcasts over batch and heads", "[attention]") {
  const geom g{2, 3, 3, 33, 41, 32, 32};
  problem P = make_problem(g, lay::bhsd, false, 650, 2);  // kind 2: [1, 1, Sq, Sk] data
  const auto Q = host_view(P.q.data(), g.B, g.Hq, g.Sq, g.D), K = host_view(P.k.data(), g.B, g.Hkv, g.Sk, g.D),
             V = host_view(P.v.data(), g.B, g.Hkv, g.Sk, g.Dv);
  std::vector<float> o2(std::size_t(g.B * g.Hq * g.Sq * g.Dv), sentinel), o4(o2.size(), sentinel);
  const auto e2 = fusor::scaled_dot_product_attention(Q, K, V, {}, host_view(P.mask.data(), g.Sq, g.Sk));
  CHECK(fusor::run(host_view(o2.data(), g.B, g.Hq, g.Sq, g.Dv), e2, fusor::host()).kernels == 1);
  const auto e4 = fusor::scaled_dot_product_attention(Q, K, V, {}, host_view(P.mask.data(), i64(1), i64(1), g.Sq, g.Sk));
  CHECK(fusor::run(host_view(o4.data(), g.B, g.Hq, g.Sq, g.Dv), e4, fusor::host()).kernels == 1);
  CHECK(same_bits(o2, o4));
  check_close("rank-2 mask vs float64", o2, reference_of(P));
}

// ===========================================================================
// Lengths 1, NaN and infinity

TEST_CASE("sequence length 1: the output is v exactly", "[attention]") {
  for (lay L : {lay::bhsd, lay::bshd, lay::packed}) {
    INFO(name_of(L));
    // Sq = Sk = 1: one key, weight exactly 1.
    problem P = make_problem({3, 4, 2, 1, 1, 64, 48}, L, false, 700);
    std::size_t n = 0;
    const auto o = run_sdpa(P, P.q, P.k, P.v, &n);
    CHECK(n == 1);
    CHECK(same_bits(o, repeat_heads(P.v, L, 3, 2, 4, 1, 48)));
    // Sk = 1, Sq = 65: every row reads v_0.
    problem P2 = make_problem({1, 2, 2, 65, 1, 32, 32}, L, false, 701);
    const auto o2 = run_sdpa(P2, P2.q, P2.k, P2.v);
    for (i64 h = 0; h < 2; ++h)
      for (i64 i = 0; i < 65; ++i)
        for (i64 d = 0; d < 32; ++d)
          CHECK(o2[std::size_t(off(L, 2, 65, 32, 0, h, i, d))] == P2.v[std::size_t(off(L, 2, 1, 32, 0, h, 0, d))]);
    // Causal decode step Sq = 1 over Sk = 65: top-left aligned (PyTorch's
    // is_causal), so the query sees key 0 only.
    problem P3 = make_problem({1, 2, 2, 1, 65, 32, 32}, L, true, 702);
    const auto o3 = run_sdpa(P3, P3.q, P3.k, P3.v);
    for (i64 h = 0; h < 2; ++h)
      for (i64 d = 0; d < 32; ++d)
        CHECK(o3[std::size_t(off(L, 2, 1, 32, 0, h, 0, d))] == P3.v[std::size_t(off(L, 2, 65, 32, 0, h, 0, d))]);
  }
}

TEST_CASE("no keys (Sk = 0): the output is 0, fused as unfused (and PyTorch)", "[attention]") {
  // Regression: the flash kernel used to end such rows as 0 / 0 = NaN while
  // matmul(softmax(q k^T), v) over an empty key axis is 0.
  unsigned seed = 750;
  for (lay L : {lay::bhsd, lay::bshd, lay::packed})
    for (bool causal : {false, true}) {
      const problem P = make_problem({2, 4, 2, 5, 0, 32, 16}, L, causal, seed++);
      check_problem(P);
      const auto o = run_sdpa(P, P.q, P.k, P.v);
      CHECK(std::all_of(o.begin(), o.end(), [](float x) { return x == 0.0f; }));
    }
}

TEST_CASE("fully masked rows give NaN, fused and unfused; rows masked only in early tiles are exact",
          "[attention][nan]") {
  const geom g{1, 2, 2, 40, 70, 32, 32};
  problem P = make_problem(g, lay::bhsd, false, 800, 2);  // [1, 1, Sq, Sk] mask
  for (i64 j = 0; j < g.Sk; ++j) P.mask[std::size_t(3 * g.Sk + j)] = -inf;         // row 3: every key masked
  for (i64 j = 0; j < 40; ++j) P.mask[std::size_t(5 * g.Sk + j)] = -inf;           // row 5: first 40 keys (tiles 0-1) masked
  for (i64 j = 0; j < g.Sk; ++j) P.mask[std::size_t(7 * g.Sk + j)] = j == 69 ? 0.0f : -inf;  // row 7: only the last key
  const reference ref = reference_of(P);
  for (i64 h = 0; h < g.Hq; ++h) {
    CHECK(std::isnan(ref.val[std::size_t(off(lay::bhsd, g.Hq, g.Sq, g.Dv, 0, h, 3, 0))]));
    CHECK(!std::isnan(ref.val[std::size_t(off(lay::bhsd, g.Hq, g.Sq, g.Dv, 0, h, 5, 0))]));
  }
  check_problem(P);  // fused, recognised and unfused all give NaN exactly in row 3, match elsewhere
  const auto o = run_sdpa(P, P.q, P.k, P.v);
  for (i64 h = 0; h < g.Hq; ++h)
    for (i64 d = 0; d < g.Dv; ++d) {
      CHECK(std::isnan(o[std::size_t(off(lay::bhsd, g.Hq, g.Sq, g.Dv, 0, h, 3, d))]));
      CHECK(o[std::size_t(off(lay::bhsd, g.Hq, g.Sq, g.Dv, 0, h, 7, d))] ==
            P.v[std::size_t(off(lay::bhsd, g.Hkv, g.Sk, g.Dv, 0, h, 69, d))]);  // weight exactly 1
    }
  // Causal with key 0 masked for batch 1: query 0 sees only key 0, so its row is NaN.
  problem C = make_problem({2, 2, 2, 33, 33, 32, 32}, lay::bshd, true, 801, 1);
  C.mask[std::size_t(1 * 33 + 0)] = -inf;  // [B, 1, 1, Sk]
  const reference rc = reference_of(C);
  CHECK(std::isnan(rc.val[std::size_t(off(lay::bshd, 2, 33, 32, 1, 0, 0, 0))]));
  CHECK(!std::isnan(rc.val[std::size_t(off(lay::bshd, 2, 33, 32, 1, 0, 1, 0))]));
  check_problem(C);
}

TEST_CASE("a row whose scaled scores overflow to +inf gives NaN, fused and unfused", "[attention][nan]") {
  const geom g{1, 2, 2, 37, 45, 64, 64};
  problem P = make_problem(g, lay::bhsd, false, 900);
  for (auto& x : P.k) x = 0.5f + 0.5f * std::abs(x);  // positive keys
  for (auto& x : P.q) x = 0;                          // other rows: uniform weights, exact
  for (i64 h = 0; h < g.Hq; ++h)
    for (i64 d = 0; d < g.D; ++d) P.q[std::size_t(off(lay::bhsd, g.Hq, g.Sq, g.D, 0, h, 11, d))] = 1e30f;
  // q . k ~ 5e31 is finite in fp32; times 1e10 it is +inf.
  const float s = 1e10f;
  const auto Q = host_view(P.q.data(), g.B, g.Hq, g.Sq, g.D), K = host_view(P.k.data(), g.B, g.Hkv, g.Sk, g.D),
             V = host_view(P.v.data(), g.B, g.Hkv, g.Sk, g.Dv);
  const auto e = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * s, -1), V);
  attention_params p{};
  p.scale = s;
  const auto e_sdpa = fusor::scaled_dot_product_attention(Q, K, V, p);
  const std::size_t n = std::size_t(g.B * g.Hq * g.Sq * g.Dv);
  std::vector<float> f(n, sentinel), hand(n, sentinel), u(n, sentinel);
  CHECK(fusor::run(host_view(f.data(), g.B, g.Hq, g.Sq, g.Dv), e_sdpa, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(hand.data(), g.B, g.Hq, g.Sq, g.Dv), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(u.data(), g.B, g.Hq, g.Sq, g.Dv), e, fusor::unfused()).kernels == 4);
  const auto qd = to_double(P.q), kd = to_double(P.k), vd = to_double(P.v);
  const reference ref = attention_ref(ref_problem{g, lay::bhsd, &qd, &kd, &vd, nullptr, s, false});
  CHECK(std::isnan(ref.val[std::size_t(off(lay::bhsd, g.Hq, g.Sq, g.Dv, 0, 1, 11, 5))]));
  check_close("overflow: sdpa fused", f, ref);  // NaN exactly in row 11 of each head
  check_close("overflow: recognised", hand, ref);
  check_close("overflow: unfused", u, ref);
}

TEST_CASE("NaN in q propagates to its row only, fused and unfused", "[attention][nan]") {
  for (lay L : {lay::bhsd, lay::packed}) {
    problem P = make_problem({2, 2, 2, 40, 50, 32, 32}, L, L == lay::packed, 950);
    P.q[std::size_t(off(L, 2, 40, 32, 1, 0, 17, 5))] = qnan;
    const reference ref = reference_of(P);
    CHECK(std::isnan(ref.val[std::size_t(off(L, 2, 40, 32, 1, 0, 17, 0))]));
    CHECK(!std::isnan(ref.val[std::size_t(off(L, 2, 40, 32, 1, 0, 16, 0))]));
    CHECK(!std::isnan(ref.val[std::size_t(off(L, 2, 40, 32, 1, 1, 17, 0))]));
    check_problem(P);
  }
}

// ===========================================================================
// 16-bit inputs

TEMPLATE_TEST_CASE("half and bf16 inputs against a float64 reference", "[attention][16bit]", __half, __nv_bfloat16) {
  using T = TestType;
  const char* tname = std::is_same_v<T, __half> ? "half" : "bf16";
  unsigned seed = 1000;
  const problem cases[] = {
      make_problem({2, 4, 4, 37, 37, 64, 64}, lay::bhsd, false, seed++, 1),
      make_problem({1, 8, 2, 29, 29, 32, 32}, lay::bhsd, true, seed++),
      make_problem({2, 3, 3, 5, 67, 80, 80}, lay::bshd, false, seed++),
      make_problem({1, 2, 1, 65, 65, 128, 128}, lay::bshd, true, seed++, 3),
  };
  for (const problem& P0 : cases) {
    INFO(describe(P0));
    const auto cv = [](const std::vector<float>& x) {
      std::vector<T> y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = from_f<T>(x[i]);
      return y;
    };
    const auto q = cv(P0.q), k = cv(P0.k), v = cv(P0.v);
    // The reference reads the rounded inputs.
    problem P = P0;
    P.q = std::vector<float>(q.size()), P.k = std::vector<float>(k.size()), P.v = std::vector<float>(v.size());
    for (std::size_t i = 0; i < q.size(); ++i) P.q[i] = to_f(q[i]);
    for (std::size_t i = 0; i < k.size(); ++i) P.k[i] = to_f(k[i]);
    for (std::size_t i = 0; i < v.size(); ++i) P.v[i] = to_f(v[i]);
    const reference ref = for_output<T>(reference_of(P));
    std::size_t n = 0;
    const auto o = run_sdpa(P, q, k, v, &n);
    CHECK(n == 1);
    check_close(std::string(tname) + " sdpa fused vs float64", o, ref);
    // The recognised hand-written form: the same kernel, bitwise.
    const auto hand = run_handwritten(P, q, k, v, fusor::host(), &n);
    CHECK(n == 1);
    CHECK(same_bits(hand, o));
    // Unfused: fp32 temporaries, so the same bound holds.
    const auto unf = run_handwritten(P, q, k, v, fusor::unfused(), &n);
    check_close(std::string(tname) + " handwritten unfused vs float64", unf, ref);
  }
}

// ===========================================================================
// Kernel counts of the block, cross attention

TEST_CASE("multi_head_attention kernel counts: self attention 3, cross attention 5 (run time)", "[attention]") {
  const i64 B = 2, Sq = 11, Sk = 13, E = 64, H = 4;
  const auto x = rnd(std::size_t(B * Sq * E), 1100), y = rnd(std::size_t(B * Sk * E), 1101);
  const auto W = rnd(std::size_t(E * E), 1102, -0.125f, 0.125f), bias = rnd(std::size_t(E), 1103, -0.125f, 0.125f);
  const auto X = host_view(x.data(), B, Sq, E), Y = host_view(y.data(), B, Sk, E);
  const auto Wv = host_view(W.data(), E, E);
  const auto b = host_view(bias.data(), E);
  attention_params p{};
  p.heads = int(H);
  std::vector<float> out(std::size_t(B * Sq * E), sentinel), ref(out.size(), sentinel);

  // Self attention without biases: 3 kernels fused, 5 unfused.
  const auto w0 = fusor::attention_weights{Wv, Wv, Wv, Wv, nullptr, nullptr, nullptr, nullptr};
  const auto self = fusor::multi_head_attention(X, w0, p);
  STATIC_REQUIRE(fusor::kernel_count<decltype(self)> == 3);
  CHECK(fusor::run(host_view(out.data(), B, Sq, E), self, fusor::host()).kernels == 3);
  CHECK(fusor::run(host_view(ref.data(), B, Sq, E), self, fusor::unfused()).kernels == 5);
  // The multi-output GEMM computes each projection like a single GEMM (same
  // tiles, k ascending), and the attention kernel is the same: bitwise equal.
  CHECK(same_bits(out, ref));

  // Cross attention: q from X, k and v from Y (another tensor of the same view
  // type). The plan keeps the multi-output GEMM (kernel_count 3), but at run
  // time the inputs differ, so the three projections run as three GEMMs.
  const auto cross = fusor::linear(
      fusor::scaled_dot_product_attention(fusor::linear(X, Wv, b), fusor::linear(Y, Wv, b), fusor::linear(Y, Wv, b), p),
      Wv, b);
  STATIC_REQUIRE(fusor::kernel_count<decltype(cross)> == 3);
  std::fill(out.begin(), out.end(), sentinel);
  CHECK(fusor::run(host_view(out.data(), B, Sq, E), cross, fusor::host()).kernels == 5);
  // Step by step: the same values.
  std::vector<float> tq(out.size()), tk(std::size_t(B * Sk * E)), tv(tk.size()), ta(out.size());
  fusor::run(host_view(tq.data(), B, Sq, E), fusor::linear(X, Wv, b), fusor::host());
  fusor::run(host_view(tk.data(), B, Sk, E), fusor::linear(Y, Wv, b), fusor::host());
  fusor::run(host_view(tv.data(), B, Sk, E), fusor::linear(Y, Wv, b), fusor::host());
  fusor::run(host_view(ta.data(), B, Sq, E),
             fusor::scaled_dot_product_attention(host_view(static_cast<const float*>(tq.data()), B, Sq, E),
                                                 host_view(static_cast<const float*>(tk.data()), B, Sk, E),
                                                 host_view(static_cast<const float*>(tv.data()), B, Sk, E), p),
             fusor::host());
  fusor::run(host_view(ref.data(), B, Sq, E), fusor::linear(host_view(static_cast<const float*>(ta.data()), B, Sq, E), Wv, b),
             fusor::host());
  CHECK(same_bits(out, ref));

  // With identity tags the planner knows the inputs differ: 5 kernels planned.
  struct Dec;
  struct Enc;
  const auto Xt = X.with_id<Dec>();
  const auto Yt = Y.with_id<Enc>();
  const auto cross_t = fusor::linear(
      fusor::scaled_dot_product_attention(fusor::linear(Xt, Wv, b), fusor::linear(Yt, Wv, b), fusor::linear(Yt, Wv, b), p),
      Wv, b);
  // (This test uses one weight for every projection, so K and V are the
  // same linear of the same tensor: at run time that repeat is one value,
  // computed once, recognize/shared_by_value.hpp: 4 kernels launched.)
  STATIC_REQUIRE(fusor::kernel_count<decltype(cross_t)> == 5);
  std::vector<float> out_t(out.size(), sentinel);
  CHECK(fusor::run(host_view(out_t.data(), B, Sq, E), cross_t, fusor::host()).kernels == 4);
  CHECK(same_bits(out_t, ref));
}

TEST_CASE("Q/K/V after rms_norm / layer_norm: one multi-output GEMM, the norm computed once per row; "
          "norms that differ at run time: three GEMMs",
          "[attention]") {
  // Llama's and pre-LN BERT's attention input is a normalization of x: the
  // three projections share it as the GEMM's prologue (issue 18, item 2).
  const i64 B = 2, S = 11, E = 64, H = 4;
  const auto x = rnd(std::size_t(B * S * E), 1200), y = rnd(std::size_t(B * S * E), 1201);
  const auto wq = rnd(std::size_t(E * E), 1202, -0.125f, 0.125f), wk = rnd(std::size_t(E * E), 1203, -0.125f, 0.125f);
  const auto wv = rnd(std::size_t(E * E), 1204, -0.125f, 0.125f), wo = rnd(std::size_t(E * E), 1205, -0.125f, 0.125f);
  const auto g = rnd(std::size_t(E), 1206, 0.5f, 1.5f), beta = rnd(std::size_t(E), 1207, -0.5f, 0.5f);
  const auto X = host_view(x.data(), B, S, E), Y = host_view(y.data(), B, S, E);
  const auto Wq = host_view(wq.data(), E, E), Wk = host_view(wk.data(), E, E), Wv = host_view(wv.data(), E, E),
             Wo = host_view(wo.data(), E, E);
  const auto G = host_view(g.data(), E), Beta = host_view(beta.data(), E);
  attention_params p{};
  p.heads = int(H);
  const auto w = fusor::attention_weights{Wq, Wk, Wv, Wo, nullptr, nullptr, nullptr, nullptr};
  std::vector<float> out(std::size_t(B * S * E), sentinel), ref(out.size(), sentinel);
  const auto O = host_view(out.data(), B, S, E), R = host_view(ref.data(), B, S, E);

  SECTION("rms_norm: 3 kernels fused, 9 unfused, bitwise equal") {
    const auto e = X + fusor::multi_head_attention(fusor::rms_norm(X, G, 1e-6f), w, p);
    CHECK(fusor::run(O, e, fusor::host()).kernels == 3);
    CHECK(fusor::run(R, e, fusor::unfused()).kernels == 9);
    // Each projection is one engine call per column block of its own part,
    // with A (the normalized rows) packed once: what the GEMM computes alone.
    CHECK(same_bits(out, ref));
  }
  SECTION("layer_norm: 3 kernels fused, bitwise equal to unfused") {
    const auto e = X + fusor::multi_head_attention(fusor::layer_norm(X, G, Beta), w, p);
    CHECK(fusor::run(O, e, fusor::host()).kernels == 3);
    CHECK(fusor::run(R, e, fusor::unfused()).kernels == 9);
    CHECK(same_bits(out, ref));
  }
  SECTION("one type, different values at run time (eps, input tensor): three GEMMs, same values as unfused") {
    // k's norm uses another eps: the three inputs are one type but not one value.
    const auto e_eps = fusor::linear(
        fusor::scaled_dot_product_attention(fusor::linear(fusor::rms_norm(X, G, 1e-6f), Wq),
                                            fusor::linear(fusor::rms_norm(X, G, 1e-5f), Wk),
                                            fusor::linear(fusor::rms_norm(X, G, 1e-6f), Wv), p),
        Wo);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e_eps)> == 3);  // (the plan: one GEMM when they are one value)
    CHECK(fusor::run(O, e_eps, fusor::host()).kernels == 5);
    CHECK(fusor::run(R, e_eps, fusor::unfused()).kernels == 8);
    CHECK(same_bits(out, ref));
    // v's norm reads another tensor.
    const auto e_in = fusor::linear(
        fusor::scaled_dot_product_attention(fusor::linear(fusor::rms_norm(X, G, 1e-6f), Wq),
                                            fusor::linear(fusor::rms_norm(X, G, 1e-6f), Wk),
                                            fusor::linear(fusor::rms_norm(Y, G, 1e-6f), Wv), p),
        Wo);
    std::fill(out.begin(), out.end(), sentinel);
    std::fill(ref.begin(), ref.end(), sentinel);
    CHECK(fusor::run(O, e_in, fusor::host()).kernels == 5);
    CHECK(fusor::run(R, e_in, fusor::unfused()).kernels == 8);
    CHECK(same_bits(out, ref));
  }
}

TEST_CASE("a Llama decoder layer as one expression: 6 kernels, bitwise the unfused values", "[attention][llama]") {
  // rms_norm -> Q/K/V (GQA, one multi-output GEMM with the norm as its
  // prologue) -> causal flash attention -> out-projection + residual ->
  // rms_norm -> SwiGLU MLP (W1 with silu, W3 with the product, W2 + residual).
  // h is read three times (the MLP's norm twice and the residual): a tag
  // makes it one value (untagged, the by-value check of
  // recognize/shared_by_value.hpp is all-or-nothing, and the MLP's two
  // linears over one norm are one type with different weights, so it keeps
  // the written form: 10 kernels, docs/status.md).
  const i64 B = 1, S = 17, E = 64, H = 4, Hkv = 2, D = E / H, F = 176;
  const auto x = rnd(std::size_t(B * S * E), 1300), g1 = rnd(std::size_t(E), 1301, 0.5f, 1.5f),
             g2 = rnd(std::size_t(E), 1302, 0.5f, 1.5f);
  const auto wq = rnd(std::size_t(E * E), 1303, -0.125f, 0.125f), wk = rnd(std::size_t(Hkv * D * E), 1304, -0.125f, 0.125f),
             wv = rnd(std::size_t(Hkv * D * E), 1305, -0.125f, 0.125f), wo = rnd(std::size_t(E * E), 1306, -0.125f, 0.125f);
  const auto w1 = rnd(std::size_t(F * E), 1307, -0.125f, 0.125f), w3 = rnd(std::size_t(F * E), 1308, -0.125f, 0.125f),
             w2 = rnd(std::size_t(E * F), 1309, -0.125f, 0.125f);
  const auto X = host_view(x.data(), B, S, E);
  const auto w = fusor::attention_weights{host_view(wq.data(), E, E), host_view(wk.data(), Hkv * D, E),
                                          host_view(wv.data(), Hkv * D, E), host_view(wo.data(), E, E),
                                          nullptr, nullptr, nullptr, nullptr};
  attention_params p{};
  p.heads = int(H);
  p.kv_heads = int(Hkv);
  p.causal = true;
  struct Hidden;
  const auto h = fusor::tag<Hidden>(X + fusor::multi_head_attention(fusor::rms_norm(X, host_view(g1.data(), E), 1e-6f), w, p));
  const auto n2 = fusor::rms_norm(h, host_view(g2.data(), E), 1e-6f);
  const auto layer =
      h + fusor::linear(fusor::silu(fusor::linear(n2, host_view(w1.data(), F, E))) * fusor::linear(n2, host_view(w3.data(), F, E)),
                        host_view(w2.data(), E, F));
  STATIC_REQUIRE(fusor::kernel_count<decltype(layer)> == 6);
  std::vector<float> out(std::size_t(B * S * E), sentinel), ref(out.size(), sentinel);
  CHECK(fusor::run(host_view(out.data(), B, S, E), layer, fusor::host()).kernels == 6);
  fusor::run(host_view(ref.data(), B, S, E), layer, fusor::unfused());
  CHECK(same_bits(out, ref));
}

// ===========================================================================
// Errors: outputs untouched

namespace {
bool untouched(const std::vector<float>& o) {
  return std::all_of(o.begin(), o.end(), [](float x) { return x == sentinel; });
}
}  // namespace

TEST_CASE("attention errors: head_dim > 128 is unsupported, inconsistent shapes are shape errors", "[attention][errors]") {
  const auto buf = rnd(1 << 16, 1200);
  const float* d = buf.data();
  std::vector<float> out(1 << 16, sentinel);
  float* o = out.data();

  SECTION("head_dim 129") {
    const auto q = host_view(d, 1, 2, 5, 129);
    const auto e = fusor::scaled_dot_product_attention(q, q, q);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 2, 5, 129), e, fusor::host()), fusor::unsupported_error);
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 2, 5, 129), e, fusor::host()), Contains("head_dim 129"));
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 2, 5, 129), e, fusor::unfused()), Contains("head_dim 129"));
    CHECK(untouched(out));
    // head_dim of v alone: 129.
    const auto v = host_view(d, 1, 2, 5, 129);
    const auto k = host_view(d, 1, 2, 5, 64);
    const auto ev = fusor::scaled_dot_product_attention(k, k, v);
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 2, 5, 129), ev, fusor::host()), Contains("head_dim 129"));
    CHECK(untouched(out));
    // Written by hand: recognised by the fused planner, so host() rejects it
    // as well, while unfused() runs it as written.
    const auto h = fusor::matmul(fusor::softmax(fusor::matmul(q, fusor::transpose(q)) * 0.1f, -1), q);
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 2, 5, 129), h, fusor::host()), fusor::unsupported_error);
    CHECK(untouched(out));
    CHECK(fusor::run(host_view(o, 1, 2, 5, 129), h, fusor::unfused()).kernels == 4);
    std::fill(out.begin(), out.end(), sentinel);
    // head_dim 128 is the largest supported.
    const auto q128 = host_view(d, 1, 2, 5, 128);
    CHECK(fusor::run(host_view(o, 1, 2, 5, 128), fusor::scaled_dot_product_attention(q128, q128, q128), fusor::host())
              .kernels == 1);
  }
  SECTION("multi_head_attention with head_dim 129: unsupported, output untouched") {
    const i64 E = 129;
    const auto x = host_view(d, 1, 3, E);
    const auto W = host_view(d, E, E);
    attention_params p{};
    p.heads = 1;
    const auto e = x + fusor::multi_head_attention(x, fusor::attention_weights{W, W, W, W, nullptr, nullptr, nullptr, nullptr}, p);
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 3, E), e, fusor::host()), Contains("head_dim 129"));
    CHECK(untouched(out));
  }
  SECTION("inconsistent heads and shapes") {
    attention_params p{};
    p.heads = 3;  // 64 is not 3 * head_dim
    const auto q3 = host_view(d, 2, 5, 64);
    CHECK_THROWS_AS(fusor::run(host_view(o, 2, 5, 64), fusor::scaled_dot_product_attention(q3, q3, q3, p), fusor::host()),
                    fusor::shape_error);
    CHECK_THROWS_WITH(fusor::run(host_view(o, 2, 5, 64), fusor::scaled_dot_product_attention(q3, q3, q3, p), fusor::host()),
                      Contains("heads * head_dim") && Contains("[2, 5, 64]"));
    p.heads = 0;  // packed operands without heads
    CHECK_THROWS_WITH(fusor::run(host_view(o, 2, 5, 64), fusor::scaled_dot_product_attention(q3, q3, q3, p), fusor::host()),
                      Contains("params.heads"));
    p.heads = 6, p.kv_heads = 4;  // 6 query heads over 4 kv heads: not grouped-query
    const auto q6 = host_view(d, 2, 5, 6 * 8), k4 = host_view(d, 2, 5, 4 * 8);
    CHECK_THROWS_WITH(fusor::run(host_view(o, 2, 5, 48), fusor::scaled_dot_product_attention(q6, k4, k4, p), fusor::host()),
                      Contains("multiple"));
    const auto qa = host_view(d, 1, 6, 5, 8), ka = host_view(d, 1, 4, 5, 8);  // bhsd 6 over 4
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 6, 5, 8), fusor::scaled_dot_product_attention(qa, ka, ka), fusor::host()),
                    fusor::shape_error);
    const auto kb = host_view(d, 1, 6, 5, 16);  // q and k head_dim differ
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 6, 5, 8), fusor::scaled_dot_product_attention(qa, kb, qa), fusor::host()),
                      Contains("head_dim differ"));
    const auto vl = host_view(d, 1, 6, 7, 8);  // k and v lengths differ
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 6, 5, 8), fusor::scaled_dot_product_attention(qa, qa, vl), fusor::host()),
                      Contains("k and v"));
    const auto qb = host_view(d, 2, 6, 5, 8);  // batch differs
    CHECK_THROWS_WITH(fusor::run(host_view(o, 2, 6, 5, 8), fusor::scaled_dot_product_attention(qb, qa, qa), fusor::host()),
                      Contains("batch"));
    const auto m = host_view(d, 1, 1, 5, 6);  // mask [1, 1, 5, 6] vs [1, 6, 5, 5]
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 6, 5, 8), fusor::scaled_dot_product_attention(qa, qa, qa, {}, m), fusor::host()),
                      Contains("mask"));
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 6, 5, 9), fusor::scaled_dot_product_attention(qa, qa, qa), fusor::host()),
                    fusor::shape_error);  // output of the wrong shape
    // multi_head_attention: E = 64 over 3 heads.
    const auto x = host_view(d, 1, 5, 64);
    const auto W = host_view(d, 64, 64);
    attention_params p3{};
    p3.heads = 3;
    const auto e = x + fusor::multi_head_attention(x, fusor::attention_weights{W, W, W, W, nullptr, nullptr, nullptr, nullptr}, p3);
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 5, 64), e, fusor::host()), fusor::shape_error);
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 5, 64), e, fusor::unfused()), fusor::shape_error);
    CHECK(untouched(out));
  }
  SECTION("the output must not overlap q, k or v") {
    std::vector<float> qbuf = rnd(2 * 3 * 7 * 16, 1201);
    const auto before = qbuf;
    const auto q = host_view(static_cast<const float*>(qbuf.data()), 2, 3, 7, 16);
    CHECK_THROWS_AS(fusor::run(host_view(qbuf.data(), 2, 3, 7, 16), fusor::scaled_dot_product_attention(q, q, q), fusor::host()),
                    fusor::argument_error);
    CHECK(qbuf == before);
  }
  SECTION("softmax over another axis is not attention: host() refuses, unfused() runs it") {
    const auto q = host_view(d, 1, 2, 5, 8);
    const auto h = fusor::matmul(fusor::softmax(fusor::matmul(q, fusor::transpose(q)) * 0.5f, 2), q);
    CHECK_THROWS_AS(fusor::run(host_view(o, 1, 2, 5, 8), h, fusor::host()), fusor::unsupported_error);
    CHECK_THROWS_WITH(fusor::run(host_view(o, 1, 2, 5, 8), h, fusor::host()), Contains("axis 2"));
    CHECK(untouched(out));
    CHECK(fusor::run(host_view(o, 1, 2, 5, 8), h, fusor::unfused()).kernels == 4);
  }
}

// ===========================================================================
// Memory: the score matrix is never allocated

TEST_CASE("flash attention allocates nothing of Sq * Sk floats (Sq = Sk = 4096)", "[attention][memory]") {
  // Positive control: the hand-written form run unfused materialises the
  // [B, H, Sq, Sk] scores, and the counter sees it.
  {
    const i64 S = 512, D = 32;
    const auto q = rnd(std::size_t(S * D), 1300);
    const auto Q = host_view(q.data(), 1, 1, S, D);
    std::vector<float> o(q.size());
    const auto h = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(Q)) * 0.2f, -1), Q);
    alloc_track::start();
    fusor::run(host_view(o.data(), 1, 1, S, D), h, fusor::unfused());
    const std::size_t largest = alloc_track::stop();
    INFO("largest allocation " << largest);
    CHECK(largest >= std::size_t(S * S) * sizeof(float));
  }
  const i64 S = 4096, D = 32;
  const geom g{1, 1, 1, S, S, D, D};
  const problem P = make_problem(g, lay::bhsd, false, 1301);
  const auto Q = host_view(P.q.data(), 1, 1, S, D), K = host_view(P.k.data(), 1, 1, S, D),
             V = host_view(P.v.data(), 1, 1, S, D);
  std::vector<float> o(std::size_t(S * D), sentinel);
  const auto e = fusor::scaled_dot_product_attention(Q, K, V);
  const auto t0 = std::chrono::steady_clock::now();
  alloc_track::start();
  const auto r = fusor::run(host_view(o.data(), 1, 1, S, D), e, fusor::host());
  const std::size_t largest = alloc_track::stop();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("largest allocation during run(): " << largest << " bytes, " << alloc_track::calls.load() << " allocations, "
                                           << secs << " s");
  CHECK(r.kernels == 1);
  CHECK(largest < std::size_t(S * S) * sizeof(float));
  CHECK(largest < std::size_t(1) << 20);  // in fact: bookkeeping only
  if (std::getenv("FUSOR_TEST_REPORT"))
    std::fprintf(stderr, "attention S=%lld D=%lld: %.3f s, largest allocation %zu bytes (%zu calls)\n", (long long)S,
                 (long long)D, secs, largest, alloc_track::calls.load());
  // A few rows against the float64 reference.
  const auto qd = to_double(P.q), kd = to_double(P.k), vd = to_double(P.v);
  const ref_problem R{g, lay::bhsd, &qd, &kd, &vd, nullptr, double(P.scale()), false};
  reference ref{std::vector<double>(o.size(), 0.0), std::vector<double>(o.size(), 0.0)};
  std::vector<float> got_rows;
  reference rows;
  for (i64 i : {i64(0), i64(1), i64(63), i64(64), S / 2, S - 1}) {
    ref_row(R, 0, 0, i, ref);
    for (i64 d = 0; d < D; ++d) {
      got_rows.push_back(o[std::size_t(i * D + d)]);
      rows.val.push_back(ref.val[std::size_t(i * D + d)]);
      rows.tol.push_back(ref.tol[std::size_t(i * D + d)]);
    }
  }
  check_close("S=4096 rows vs float64", got_rows, rows);
}

TEST_CASE("the flash algorithm at several key-tile sizes (1, 5, 8, 16, 32) agrees with a float64 reference",
          "[attention][tiles]") {
  const i64 B = 1, H = 2, Sq = 37, Sk = 45, D = 24;
  std::mt19937 rng(77);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(std::size_t(B * H * Sq * D)), k(std::size_t(B * H * Sk * D)), v(k.size()),
      mask(std::size_t(Sq * Sk), 0.0f);
  for (auto* t : {&q, &k, &v})
    for (auto& x : *t) x = nd(rng);
  // Row 3 sees no key before 20: with small tiles its first tiles are fully
  // masked, which must not poison the row (the online softmax's -inf guard).
  for (i64 j = 0; j < 20; ++j) mask[std::size_t(3 * Sk + j)] = -std::numeric_limits<float>::infinity();
  const auto Q = host_view(q.data(), B, H, Sq, D);
  const auto K = host_view(k.data(), B, H, Sk, D);
  const auto V = host_view(v.data(), B, H, Sk, D);
  const auto M = host_view(mask.data(), Sq, Sk);
  const double scale = 1.0 / std::sqrt(double(D));
  // float64 reference
  std::vector<double> ref(q.size());
  for (i64 h = 0; h < H; ++h)
    for (i64 i = 0; i < Sq; ++i) {
      std::vector<double> s(static_cast<std::size_t>(Sk));
      double m = -std::numeric_limits<double>::infinity();
      for (i64 j = 0; j < Sk; ++j) {
        double a = 0;
        for (i64 d = 0; d < D; ++d) a += double(q[std::size_t((h * Sq + i) * D + d)]) * k[std::size_t((h * Sk + j) * D + d)];
        s[std::size_t(j)] = a * scale + mask[std::size_t(i * Sk + j)];
        m = std::max(m, s[std::size_t(j)]);
      }
      double l = 0;
      for (auto& x : s) l += (x = std::exp(x - m));
      for (i64 d = 0; d < D; ++d) {
        double o = 0;
        for (i64 j = 0; j < Sk; ++j) o += s[std::size_t(j)] * v[std::size_t((h * Sk + j) * D + d)];
        ref[std::size_t((h * Sq + i) * D + d)] = o / l;
      }
    }
  std::vector<std::vector<float>> outs;
  for (int tile : {1, 5, 8, 16, 32}) {
    auto ex = fusor::host();
    ex.attention_key_tile = tile;
    std::vector<float> o(q.size(), sentinel);
    CHECK(fusor::run(host_view(o.data(), B, H, Sq, D), fusor::scaled_dot_product_attention(Q, K, V, {}, M), ex).kernels ==
          1);
    double worst = 0;
    for (std::size_t i = 0; i < o.size(); ++i) worst = std::max(worst, std::abs(double(o[i]) - ref[i]));
    // |o| <= max|v| ~ 4; fp32 dot products of 24 terms and 45-term softmax
    // sums (with one rescale per tile) stay within a few hundred ulps of 4.
    INFO("key tile " << tile << ": max abs error " << worst);
    CHECK(worst <= 2e-5);
    outs.push_back(o);
  }
  // Different tiles change only the summation order.
  for (std::size_t t = 1; t < outs.size(); ++t)
    for (std::size_t i = 0; i < outs[0].size(); ++i) CHECK(std::abs(outs[t][i] - outs[0][i]) <= 4e-5);
}
