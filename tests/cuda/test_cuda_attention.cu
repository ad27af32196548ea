// CUDA tests of the attention family.
// (helpers and tolerances: test_cuda_common.cuh)
#include "test_cuda_common.cuh"

// ============================================================================
// Attention (kernels/attention.hpp): cuda() against host() on the same inputs
// (host() runs the FlashAttention-2 block's host twin). f32 operands take the
// SIMT block on the device, f16/bf16 operands the tensor-core block.
//
// Tolerances (u = 2^-24; u16 = 2^-11 for half, 2^-8 for bf16). A float64
// evaluation from the stored (rounded) inputs gives, per query row, the
// scores s_j, the weights p_j = exp(s_j - m) / l and o_d = sum_j p_j v_jd,
// and bounds each executor's fp32 error to first order as
// tests/host/test_attention.cpp does:
//   E_d = 2 eps pv_d + (2 Sk + 4 tiles + 8) u pv_d + 2u |o_d|,  pv_d = sum_j p_j |v_jd|,
//   eps = max_j [(D + 2) u scale sum_d |q_d k_jd| + u (3 |s_j| + |mask_j| + |s_j - m|) + 4u]
// (the D-term dot product, Higham eq. 3.5; the scale multiply, mask add and
// subtraction s_j - m; exp, <= 2 ulp in CUDA's libdevice and in glibc: a
// relative error eps of every weight moves o_d by <= eps (pv_d + |o_d|) <=
// 2 eps pv_d; the Sk-term sums l and acc, rescaled once per 32-key tile; the
// division). FMA contraction on the device only removes roundings.
//   f32 (SIMT on both sides): |device - host| <= 2 E_d.
//   16-bit q, k, v: the tensor cores sum q . k and p . v in fp32 in their own
// order, and NVIDIA does not document the accumulator's rounding (truncation
// errs by <= 2u per addition, not u), so the device gets 2 E_d: 3 E_d in
// all. The device rounds P to the 16-bit type before P V (as FlashAttention-2;
// l sums the unrounded weights), which moves o_d by <= u16 pv_d; and each
// side rounds its fp32 output to the 16-bit type (<= u16 |o_d| each, plus
// half's subnormal spacing 2^-24): + u16 pv_d + 2 u16 |o_d| + 2^-24.
// Inputs that themselves differ between the executors (the multi-head
// block's projections, bounds eq, ek, ev per element) add, to first order,
// sum_j p_j (D_j + sum_k p_k D_k) |v_jd| + sum_j p_j ev_jd with D_j = scale
// sum_d (eq_d |k_jd| + |q_d| ek_jd + eq_d ek_jd) (each normalized weight moves
// by a factor exp(+-(D_j + mean D)); times exp(2 max D_j) for the second order).
// A row whose every key is masked is NaN on both sides.

namespace {

using i64 = std::int64_t;

struct attn_geom {
  i64 B, Hq, Hkv, Sq, Sk, D, Dv;
};

/// One attention problem in float64: q(b, h, i, d), k(b, hk, j, d),
/// v(b, hk, j, d), mask(b, h, i, j) (null: none), and bounds on the inputs'
/// differences between the executors (null: exact inputs).
struct attn_problem {
  attn_geom g;
  double scale = 0;
  bool causal = false;
  std::function<double(i64, i64, i64, i64)> q, k, v, mask, eq, ek, ev;
};

/// The reference output [B, Hq, Sq, Dv] (bhsd order; NaN: a fully masked
/// row) and the allowed |device - host| per element (see above): c_fp32 = 2
/// (f32) or 3 (tensor cores), u16 = 0 (f32 results, no P rounding) or the
/// 16-bit unit roundoff.
struct attn_reference {
  std::vector<double> val, tol;
};

attn_reference attention_bound(const attn_problem& P, double c_fp32, double u16) {
  const auto& g = P.g;
  const double u = 0x1p-24;
  const i64 tiles = (g.Sk + 31) / 32;
  attn_reference r{std::vector<double>(std::size_t(g.B * g.Hq * g.Sq * g.Dv)), {}};
  r.tol.resize(r.val.size());
  std::vector<double> s(std::size_t(g.Sk)), sabs(std::size_t(g.Sk)), p(std::size_t(g.Sk)), din(std::size_t(g.Sk));
  for (i64 b = 0; b < g.B; ++b)
    for (i64 h = 0; h < g.Hq; ++h) {
      const i64 hk = h / (g.Hq / g.Hkv);
      for (i64 i = 0; i < g.Sq; ++i) {
        double m = -INFINITY, eps = 0;  // eps: max_j eps_j (see above)
        for (i64 j = 0; j < g.Sk; ++j) {
          double dot = 0, dabs = 0, dd = 0;
          for (i64 c = 0; c < g.D; ++c) {
            const double x = P.q(b, h, i, c), y = P.k(b, hk, j, c);
            dot += x * y;
            dabs += std::fabs(x * y);
            if (P.eq) {
              const double ex = P.eq(b, h, i, c), ey = P.ek(b, hk, j, c);
              dd += ex * std::fabs(y) + std::fabs(x) * ey + ex * ey;
            }
          }
          const double mk = P.mask ? P.mask(b, h, i, j) : 0.0;
          double sj = dot * P.scale + mk;
          if (P.causal && j > i) sj = -INFINITY;
          s[std::size_t(j)] = sj;
          sabs[std::size_t(j)] = std::fabs(P.scale) * dabs;
          din[std::size_t(j)] = std::fabs(P.scale) * dd;
          m = std::max(m, sj);
        }
        double l = 0, dmax = 0;
        for (i64 j = 0; j < g.Sk; ++j) {
          const double sj = s[std::size_t(j)];
          p[std::size_t(j)] = sj == -INFINITY ? 0.0 : std::exp(sj - m);
          l += p[std::size_t(j)];
          if (sj != -INFINITY) {
            const double mk = P.mask ? std::fabs(P.mask(b, h, i, j)) : 0.0;
            eps = std::max(eps, (double(g.D) + 2) * u * sabs[std::size_t(j)] + u * (3 * std::fabs(sj) + mk + std::fabs(sj - m)) + 4 * u);
            dmax = std::max(dmax, din[std::size_t(j)]);
          }
        }
        double dmean = 0;
        if (l > 0)
          for (i64 j = 0; j < g.Sk; ++j) dmean += p[std::size_t(j)] / l * din[std::size_t(j)];
        for (i64 c = 0; c < g.Dv; ++c) {
          const std::size_t at = std::size_t(((b * g.Hq + h) * g.Sq + i) * g.Dv + c);
          if (g.Sk > 0 && l == 0) {  // every key masked: 0 / 0
            r.val[at] = std::nan("");
            continue;
          }
          double o = 0, pv = 0, in = 0;
          for (i64 j = 0; j < g.Sk; ++j) {
            const double pj = p[std::size_t(j)] / l, vj = P.v(b, hk, j, c);
            o += pj * vj;
            pv += pj * std::fabs(vj);
            if (P.ev) in += pj * ((din[std::size_t(j)] + dmean) * std::fabs(vj) + P.ev(b, hk, j, c));
          }
          r.val[at] = o;
          r.tol[at] = c_fp32 * (2 * eps * pv + (2 * double(g.Sk) + 4 * double(tiles) + 8) * u * pv + 2 * u * std::fabs(o)) +
                      in * std::exp(2 * dmax) + u16 * pv + 2 * u16 * std::fabs(o) + (u16 > 0 ? 0x1p-24 : 0.0);
        }
      }
    }
  return r;
}

/// |device - host| <= ref.tol elementwise; NaN exactly where ref.val is NaN.
template <class T>
void require_attention_close(const std::vector<T>& device, const std::vector<T>& host, const attn_reference& ref) {
  REQUIRE(device.size() == host.size());
  REQUIRE(ref.val.size() == host.size());
  std::size_t bad = 0, first = 0, nans = 0;
  double worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_float(device[i]), h = as_float(host[i]);
    bool ok;
    if (std::isnan(ref.val[i])) {
      ok = std::isnan(d) && std::isnan(h);
      ++nans;
    } else {
      const double err = std::fabs(d - h);
      ok = std::isfinite(d) && std::isfinite(h) && err <= ref.tol[i];
      if (ref.tol[i] > 0) worst = std::max(worst, err / ref.tol[i]);
    }
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first) +
                                          ", allowed " + std::to_string(ref.tol[first]);
  INFO(what);
  INFO("largest error / allowed = " << worst << "; " << nans << " elements of fully masked rows (NaN)");
  REQUIRE(bad == 0);
}

/// scaled_dot_product_attention over bhsd operands of dtype T (K/V with Hkv
/// heads: grouped-query when Hkv < Hq), optionally with an additive f32 mask
/// [B, 1, Sq, Sk] (random bias, -inf on the keys j with (7 j + i) % 5 == 1,
/// and batch 0's query row 2 masked everywhere: NaN), on host() and cuda().
template <class T, bool Masked>
void check_attention(attn_geom g, bool causal, unsigned seed) {
  CAPTURE(g.B, g.Hq, g.Hkv, g.Sq, g.Sk, g.D, g.Dv, causal, Masked);
  const auto q = random_vector<T>(std::size_t(g.B * g.Hq * g.Sq * g.D), seed),
             k = random_vector<T>(std::size_t(g.B * g.Hkv * g.Sk * g.D), seed + 1),
             v = random_vector<T>(std::size_t(g.B * g.Hkv * g.Sk * g.Dv), seed + 2);
  std::vector<float> mask;
  if (Masked) {
    mask = random_vector<float>(std::size_t(g.B * g.Sq * g.Sk), seed + 3, -1.0f, 1.0f);
    for (i64 b = 0; b < g.B; ++b)
      for (i64 i = 0; i < g.Sq; ++i)
        for (i64 j = 0; j < g.Sk; ++j)
          if ((7 * j + i) % 5 == 1 || (b == 0 && i == 2)) mask[std::size_t((b * g.Sq + i) * g.Sk + j)] = -INFINITY;
  }
  fusor::attention_params p{};
  p.causal = causal;
  const auto make = [&](auto view, const T* pq, const T* pk, const T* pv, const float* pm) {
    const auto Q = view(pq, g.B, g.Hq, g.Sq, g.D), K = view(pk, g.B, g.Hkv, g.Sk, g.D), V = view(pv, g.B, g.Hkv, g.Sk, g.Dv);
    if constexpr (Masked) return fusor::scaled_dot_product_attention(Q, K, V, p, view(pm, g.B, 1, g.Sq, g.Sk));
    else return fusor::scaled_dot_product_attention(Q, K, V, p);
  };
  const std::size_t count = std::size_t(g.B * g.Hq * g.Sq * g.Dv);
  std::vector<T> host(count, fusor::from_compute<T>(-777.0f));
  CHECK(fusor::run(host_v(host.data(), g.B, g.Hq, g.Sq, g.Dv), make(host_v, q.data(), k.data(), v.data(), mask.data()),
                   fusor::host())
            .kernels == 1);
  stream_guard stream;
  auto dq = on_device(q), dk = on_device(k), dv = on_device(v);
  auto dm = on_device(Masked ? mask : std::vector<float>(1));
  device_buffer<T> dout(count);
  const auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(dout.ptr, g.B, g.Hq, g.Sq, g.Dv),
                   make(dev_v, static_cast<const T*>(dq->ptr), static_cast<const T*>(dk->ptr),
                        static_cast<const T*>(dv->ptr), static_cast<const float*>(dm->ptr)),
                   ex)
            .kernels == 1);
  CHECK(ex.launches == 1);
  stream.sync();

  attn_problem P{g, 1.0 / std::sqrt(double(g.D)), causal, {}, {}, {}, {}, {}, {}, {}};
  P.q = [&](i64 b, i64 h, i64 i, i64 d) { return double(as_float(q[std::size_t(((b * g.Hq + h) * g.Sq + i) * g.D + d)])); };
  P.k = [&](i64 b, i64 h, i64 j, i64 d) { return double(as_float(k[std::size_t(((b * g.Hkv + h) * g.Sk + j) * g.D + d)])); };
  P.v = [&](i64 b, i64 h, i64 j, i64 d) { return double(as_float(v[std::size_t(((b * g.Hkv + h) * g.Sk + j) * g.Dv + d)])); };
  if (Masked) P.mask = [&](i64 b, i64, i64 i, i64 j) { return double(mask[std::size_t((b * g.Sq + i) * g.Sk + j)]); };
  constexpr bool sixteen = !std::is_same_v<T, float>;
  const auto ref = attention_bound(P, sixteen ? 3.0 : 2.0, sixteen ? rtol_of<T> / 2 : 0.0);
  require_attention_close(dout.download(count), host, ref);
}

const i64 attn_lengths[] = {1, 33, 65, 129};

}  // namespace

TEST_CASE("cuda: scaled_dot_product_attention f32 (SIMT) matches host: lengths 1/33/65/129, head_dim 64/80, "
          "causal, grouped-query",
          "[cuda][attention]") {
  const i64 L = GENERATE(from_range(std::begin(attn_lengths), std::end(attn_lengths)));
  const i64 D = GENERATE(64, 80);
  const bool causal = GENERATE(false, true);
  check_attention<float, false>({2, 4, 2, L, L, D, D}, causal, unsigned(201 + L + D));
}

TEST_CASE("cuda: scaled_dot_product_attention f32 with a -inf mask (a fully masked row is NaN) and Sq != Sk",
          "[cuda][attention][mask]") {
  const bool causal = GENERATE(false, true);
  const attn_geom g = GENERATE(attn_geom{2, 4, 2, 33, 33, 64, 64}, attn_geom{2, 4, 2, 129, 129, 80, 80},
                               attn_geom{1, 2, 1, 65, 129, 64, 80}, attn_geom{1, 2, 2, 130, 33, 80, 64});
  check_attention<float, true>(g, causal, 211);
}

TEST_CASE("cuda: scaled_dot_product_attention f16 on tensor cores matches host: lengths 1/33/65/129, head_dim "
          "64/80, causal, grouped-query",
          "[cuda][attention][f16]") {
  const i64 L = GENERATE(from_range(std::begin(attn_lengths), std::end(attn_lengths)));
  const i64 D = GENERATE(64, 80);
  const bool causal = GENERATE(false, true);
  check_attention<__half, false>({2, 4, 2, L, L, D, D}, causal, unsigned(221 + L + D));
}

TEST_CASE("cuda: scaled_dot_product_attention f16 on tensor cores: -inf mask, Sq != Sk, head dims padded to 16",
          "[cuda][attention][f16][mask]") {
  const bool causal = GENERATE(false, true);
  // head_dim 40 / 24 / 8: not multiples of 16 (zero-padded in shared memory); 128: the largest.
  const attn_geom g = GENERATE(attn_geom{2, 4, 2, 33, 33, 64, 64}, attn_geom{2, 4, 2, 129, 129, 80, 80},
                               attn_geom{1, 2, 1, 70, 130, 40, 24}, attn_geom{1, 2, 2, 130, 33, 8, 128},
                               attn_geom{1, 3, 1, 64, 200, 128, 128});
  check_attention<__half, true>(g, causal, 231);
}

TEST_CASE("cuda: scaled_dot_product_attention bf16 on tensor cores matches host", "[cuda][attention][bf16]") {
  const bool causal = GENERATE(false, true);
  const attn_geom g = GENERATE(attn_geom{2, 4, 2, 33, 33, 64, 64}, attn_geom{2, 4, 1, 129, 129, 80, 80},
                               attn_geom{1, 2, 2, 65, 1, 128, 128});
  check_attention<__nv_bfloat16, false>(g, causal, 241);
}

namespace {

/// y = a W^T + b over rows of a [rows, K] (W [N, K], f16), with the bound on
/// |device - host| after both round y to f16: 3 (K + 2) u (sum |a w| + |b|)
/// (the fp32 sums; tensor cores on the device, see above) + sum_k ea_k |w|
/// (the inputs' own bound) + 2 u16 |y| + 2^-24 (the two roundings).
template <class T>
void linear_bound(const std::vector<double>& a, const std::vector<double>* ea, i64 rows, i64 K, const std::vector<T>& w,
                  const std::vector<T>& b, i64 N, std::vector<double>& val, std::vector<double>& tol) {
  // u16: the output's rounding (f16 half an ulp, f32 none beyond u's terms);
  // an empty b is no bias.
  const double u = 0x1p-24, u16 = std::is_same_v<T, float> ? 0.0 : 0x1p-11;
  val.assign(std::size_t(rows * N), 0.0);
  tol.assign(val.size(), 0.0);
  for (i64 r = 0; r < rows; ++r)
    for (i64 n = 0; n < N; ++n) {
      const double bn = b.empty() ? 0.0 : double(as_float(b[std::size_t(n)]));
      double y = bn, sabs = std::fabs(bn), prop = 0;
      for (i64 kk = 0; kk < K; ++kk) {
        const double x = a[std::size_t(r * K + kk)], wv = as_float(w[std::size_t(n * K + kk)]);
        y += x * wv;
        sabs += std::fabs(x * wv);
        if (ea) prop += (*ea)[std::size_t(r * K + kk)] * std::fabs(wv);
      }
      val[std::size_t(r * N + n)] = y;
      tol[std::size_t(r * N + n)] = 3 * double(K + 2) * u * sabs + prop + 2 * u16 * std::fabs(y) + 0x1p-24;
    }
}

/// An attention reference in bhsd order [B, H, S, D] repacked as the packed
/// heads [B, S, H * D] the out-projection reads (values and bounds).
attn_reference packed_heads(const attn_reference& r, i64 B, i64 H, i64 S, i64 D) {
  attn_reference p{std::vector<double>(r.val.size()), std::vector<double>(r.tol.size())};
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < H; ++h)
      for (i64 s = 0; s < S; ++s)
        for (i64 d = 0; d < D; ++d) {
          const std::size_t to = std::size_t((b * S + s) * H * D + h * D + d), from = std::size_t(((b * H + h) * S + s) * D + d);
          p.val[to] = r.val[from];
          p.tol[to] = r.tol[from];
        }
  return p;
}

}  // namespace

TEST_CASE("cuda: multi_head_attention + residual, f16: 3 kernels (Q/K/V GEMM, packed flash attention, "
          "out-projection) match host",
          "[cuda][attention][mha][f16]") {
  const i64 B = 2, E = 128, H = 2, D = E / H;
  const i64 S = GENERATE(1, 65);
  const bool causal = GENERATE(false, true);
  CAPTURE(S, causal);
  const auto x = random_vector<__half>(std::size_t(B * S * E), 251, -1.0f, 1.0f);
  const auto wq = random_vector<__half>(std::size_t(E * E), 252, -0.1f, 0.1f),
             wk = random_vector<__half>(std::size_t(E * E), 253, -0.1f, 0.1f),
             wv = random_vector<__half>(std::size_t(E * E), 254, -0.1f, 0.1f),
             wo = random_vector<__half>(std::size_t(E * E), 255, -0.1f, 0.1f);
  const auto bq = random_vector<__half>(std::size_t(E), 256, -0.5f, 0.5f), bk = random_vector<__half>(std::size_t(E), 257, -0.5f, 0.5f),
             bv = random_vector<__half>(std::size_t(E), 258, -0.5f, 0.5f), bo = random_vector<__half>(std::size_t(E), 259, -0.5f, 0.5f);
  fusor::attention_params p{};
  p.causal = causal;
  p.heads = int(H);
  const auto make = [&](auto view, const auto&... ptr) {
    const __half* px[] = {ptr...};  // x, wq, wk, wv, wo, bq, bk, bv, bo
    const auto X = view(px[0], B, S, E);
    const auto w = fusor::attention_weights{view(px[1], E, E), view(px[2], E, E), view(px[3], E, E), view(px[4], E, E),
                                            view(px[5], E),    view(px[6], E),    view(px[7], E),    view(px[8], E)};
    return X + fusor::multi_head_attention(X, w, p);
  };
  const std::size_t count = std::size_t(B * S * E);
  std::vector<__half> host(count);
  const auto he = make(host_v, x.data(), wq.data(), wk.data(), wv.data(), wo.data(), bq.data(), bk.data(), bv.data(), bo.data());
  STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(he)>> == 3);
  CHECK(fusor::run(host_v(host.data(), B, S, E), he, fusor::host()).kernels == 3);
  stream_guard stream;
  auto dx = on_device(x), dwq = on_device(wq), dwk = on_device(wk), dwv = on_device(wv), dwo = on_device(wo),
       dbq = on_device(bq), dbk = on_device(bk), dbv = on_device(bv), dbo = on_device(bo);
  const auto c = [](const auto& buf) { return static_cast<const __half*>(buf->ptr); };
  device_buffer<__half> dy(count);
  const auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(dy.ptr, B, S, E),
                   make(dev_v, c(dx), c(dwq), c(dwk), c(dwv), c(dwo), c(dbq), c(dbk), c(dbv), c(dbo)), ex)
            .kernels == 3);
  stream.sync();

  // The bound, propagated stage by stage (file comment of this section):
  // projections (f16), attention over them (tensor cores, inputs within the
  // projections' bounds), out-projection (rounded to f16), + x (rounded again).
  std::vector<double> xd(count);
  for (std::size_t i = 0; i < count; ++i) xd[i] = as_float(x[i]);
  std::vector<double> q, qt, k, kt, v, vt;
  linear_bound(xd, nullptr, B * S, E, wq, bq, E, q, qt);
  linear_bound(xd, nullptr, B * S, E, wk, bk, E, k, kt);
  linear_bound(xd, nullptr, B * S, E, wv, bv, E, v, vt);
  // Packed [B, S, H * D]: element (b, h, s, d) at (b S + s) E + h D + d.
  const auto at = [&](const std::vector<double>& t) {
    return [&t, S, E, D](i64 b, i64 h, i64 s, i64 d) { return t[std::size_t((b * S + s) * E + h * D + d)]; };
  };
  attn_problem P{{B, H, H, S, S, D, D}, 1.0 / std::sqrt(double(D)), causal, at(q), at(k), at(v), {}, at(qt), at(kt), at(vt)};
  const auto ra = attention_bound(P, 3.0, 0x1p-11);
  const attn_reference a = packed_heads(ra, B, H, S, D);
  attn_reference ry;
  linear_bound(a.val, &a.tol, B * S, E, wo, bo, E, ry.val, ry.tol);
  for (std::size_t i = 0; i < count; ++i) {
    ry.val[i] += xd[i];
    ry.tol[i] += 2 * 0x1p-11 * std::fabs(ry.val[i]) + 0x1p-24;
  }
  require_attention_close(dy.download(count), host, ry);
}


TEST_CASE("cuda: multi_head_attention over rms_norm(x, g) + residual, f32: 3 kernels (Q/K/V GEMM with the norm as "
          "its prologue, flash attention, out-projection) match host",
          "[cuda][attention][mha][rms_norm]") {
  // Llama's attention input (issue 18, item 2). Bound: the normalized rows
  // in float64 with the f32 roundings of both executors' norms (a sum of E
  // squares, rsqrt, scale, gamma: (2 E + 16) u |n| allowed), propagated through the projections
  // (linear_bound), the attention (attention_bound, f32 SIMT) and the
  // out-projection, plus the residual's rounding.
  const i64 B = 2, E = 64, H = 2, D = E / H;
  const i64 S = GENERATE(1, 65);
  const bool causal = GENERATE(false, true);
  CAPTURE(S, causal);
  const auto x = random_vector<float>(std::size_t(B * S * E), 271, -2.0f, 2.0f), g = random_vector<float>(std::size_t(E), 272, 0.5f, 1.5f);
  const auto wq = random_vector<float>(std::size_t(E * E), 273, -0.2f, 0.2f), wk = random_vector<float>(std::size_t(E * E), 274, -0.2f, 0.2f),
             wv = random_vector<float>(std::size_t(E * E), 275, -0.2f, 0.2f), wo = random_vector<float>(std::size_t(E * E), 276, -0.2f, 0.2f);
  fusor::attention_params p{};
  p.causal = causal;
  p.heads = int(H);
  const auto make = [&](auto view, const float* px, const float* pg, const float* pq, const float* pk, const float* pv,
                        const float* po) {
    const auto X = view(px, B, S, E);
    const auto w = fusor::attention_weights{view(pq, E, E), view(pk, E, E), view(pv, E, E), view(po, E, E),
                                            nullptr,        nullptr,        nullptr,        nullptr};
    return X + fusor::multi_head_attention(fusor::rms_norm(X, view(pg, E), 1e-6f), w, p);
  };
  const std::size_t count = std::size_t(B * S * E);
  std::vector<float> host(count);
  const auto he = make(host_v, x.data(), g.data(), wq.data(), wk.data(), wv.data(), wo.data());
  STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(he)>> == 3);
  CHECK(fusor::run(host_v(host.data(), B, S, E), he, fusor::host()).kernels == 3);
  stream_guard stream;
  auto dx = on_device(x), dg = on_device(g), dwq = on_device(wq), dwk = on_device(wk), dwv = on_device(wv), dwo = on_device(wo);
  const auto c = [](const auto& buf) { return static_cast<const float*>(buf->ptr); };
  device_buffer<float> dy(count);
  CHECK(fusor::run(dev_v(dy.ptr, B, S, E), make(dev_v, c(dx), c(dg), c(dwq), c(dwk), c(dwv), c(dwo)), fusor::cuda(stream.s))
            .kernels == 3);
  stream.sync();

  const double u = 0x1p-24;
  std::vector<double> xn(count), xnt(count), xd(count);
  for (i64 r = 0; r < B * S; ++r) {
    double ms = 0;
    for (i64 k = 0; k < E; ++k) ms += double(x[std::size_t(r * E + k)]) * x[std::size_t(r * E + k)];
    const double inv = 1.0 / std::sqrt(ms / double(E) + 1e-6);
    for (i64 k = 0; k < E; ++k) {
      const std::size_t i = std::size_t(r * E + k);
      xd[i] = x[i];
      xn[i] = x[i] * inv * g[std::size_t(k)];
      xnt[i] = (2 * double(E) + 16) * u * std::fabs(xn[i]);  // both executors' roundings of the norm
    }
  }
  const std::vector<float> none;
  std::vector<double> q, qt, k, kt, v, vt;
  linear_bound(xn, &xnt, B * S, E, wq, none, E, q, qt);
  linear_bound(xn, &xnt, B * S, E, wk, none, E, k, kt);
  linear_bound(xn, &xnt, B * S, E, wv, none, E, v, vt);
  const auto at = [&](const std::vector<double>& t) {
    return [&t, S, E, D](i64 b, i64 h, i64 s, i64 d) { return t[std::size_t((b * S + s) * E + h * D + d)]; };
  };
  attn_problem P{{B, H, H, S, S, D, D}, 1.0 / std::sqrt(double(D)), causal, at(q), at(k), at(v), {}, at(qt), at(kt), at(vt)};
  const auto ra = attention_bound(P, 2.0, 0.0);
  const attn_reference a = packed_heads(ra, B, H, S, D);
  attn_reference ry;
  linear_bound(a.val, &a.tol, B * S, E, wo, none, E, ry.val, ry.tol);
  for (std::size_t i = 0; i < count; ++i) {
    ry.val[i] += xd[i];
    ry.tol[i] += 2 * u * std::fabs(ry.val[i]);
  }
  require_attention_close(dy.download(count), host, ry);
}
