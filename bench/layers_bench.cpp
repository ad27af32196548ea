/// @file bench/layers_bench.cpp
/// Host benchmark of the layers issue 21 added, fp32, each case with these
/// variants interleaved in one run:
///   fused    fusor::run(..., fusor::host())
///   unfused  fusor::run(..., fusor::unfused())  one kernel per op
///   onednn   oneDNN (Debian libdnnl-dev 2.6) primitives for the same
///            computation, when CMake found oneDNN (FUSOR_BENCH_HAS_DNNL)
///   loop     a hand-written OpenMP loop computing the whole case in one pass
/// Cases:
///   conv_transpose_relu   relu(conv_transpose2d(x, w, b)), a decoder's 2x
///                         upsampling (DCGAN / U-Net): x [8, 128, 16, 16],
///                         w [128, 64, 4, 4], stride 2, padding 1 ->
///                         [8, 64, 32, 32]; oneDNN: deconvolution with a ReLU
///                         post-op (weights reordered to its preferred format
///                         once, outside the timing)
///   bn_relu_max_pool      max_pool2d(relu(batch_norm(x))), ResNet's stem after
///                         its conv: x [1, 64, 112, 112], 3x3 window, stride 2,
///                         padding 1 -> [1, 64, 56, 56]; oneDNN: batch
///                         normalization (inference, fused ReLU) then pooling
///   bn_relu               relu(batch_norm(x)), x [1, 64, 112, 112]: an
///                         elementwise group whose parameters broadcast per
///                         channel; oneDNN: batch normalization with fused ReLU
///   bn_relu_nhwc          the same over NHWC, batch_norm<-1> (the parameters
///                         vary along the last dim)
///   depthwise_relu6       clip(depthwise_conv2d(x, w, b), 0, 6), MobileNetV2's
///                         stride-2 depthwise layer: x [1, 96, 112, 112], 3x3,
///                         padding 1 -> [1, 96, 56, 56]; oneDNN: grouped
///                         convolution with a clip post-op
/// Roofline: conv_transpose_relu and depthwise_relu6 report GFLOP/s (2 per
/// multiply-add) and the fraction of the host peak measured at startup
/// (bench_common.hpp, measure_peak); bn_relu_max_pool and bn_relu report GB/s
/// (x read once, y written once)
/// and the fraction of a STREAM triad bandwidth measured in the same run.
/// Timing: one warmup per variant, then --repeats interleaved rounds; each
/// variant's minimum. Results are checked first: fused == unfused bit for bit
/// for both cases, and every other variant within a normwise 1e-5 of fused
/// (other summation orders); a failed check exits with status 1.
/// Output: JSON lines (the peak, the bandwidth, one line per variant, one
/// summary per case with the best non-fusor variant and fused's speedup over it).
///
/// Usage: bench_layers [--repeats R] [--quick] [--case NAME]
///   --quick   small shapes, one round: a smoke test (ctest bench.layers_smoke)
///   --case    run only the named case (conv_transpose_relu, bn_relu_max_pool,
///             bn_relu, bn_relu_nhwc, depthwise_relu6)
#include "bench_common.hpp"

#include <fusor/fusor.hpp>

#if FUSOR_BENCH_HAS_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

namespace {

using fusor::index_t;
using fusor_bench::json;

struct variant {
  std::string name;
  std::function<void()> run;
  double best = std::numeric_limits<double>::infinity();
};

/// max |a - b| / max |b| over the elements (0 for equal vectors).
double normwise(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, double(std::fabs(a[i] - b[i])));
    s = std::max(s, double(std::fabs(b[i])));
  }
  return s > 0 ? d / s : d;
}

std::int64_t bitwise_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
  return n;
}

/// Checks, times and prints one case. `outs[i]` is variant i's output;
/// variant 0 is fused, 1 unfused. `work` is FLOPs (per_second_unit "gflop")
/// or bytes ("gb"); `ceiling` the measured peak in the same unit per second.
bool run_case(const char* name, const char* formula, json shape, std::vector<variant>& vs,
              std::vector<std::vector<float>*> outs, double work, const char* unit, double ceiling, int repeats) {
  for (auto& v : vs) v.run();
  const std::int64_t unfused_bits = bitwise_mismatches(*outs[0], *outs[1]);
  bool pass = unfused_bits == 0;
  json others = json::object();
  for (std::size_t i = 2; i < vs.size(); ++i) {
    const double e = normwise(*outs[i], *outs[0]);
    others[vs[i].name] = e;
    pass = pass && e <= 1e-5;
  }
  std::cout << json{{"name", name},
                    {"check", "fused == unfused bitwise; others normwise <= 1e-5 of fused"},
                    {"bitwise_mismatches_unfused", unfused_bits},
                    {"normwise_error", others},
                    {"pass", pass}}
                   .dump()
            << std::endl;
  if (!pass) return false;
  fusor_bench::time_interleaved(vs, repeats, true);
  const double scale = 1e9;  // GFLOP/s or GB/s
  const std::string rate = std::string(unit) + "_per_s";
  double best_peer = std::numeric_limits<double>::infinity();
  std::string best_peer_name;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    std::cout << json{{"name", name},
                      {"variant", vs[i].name},
                      {"backend", "host"},
                      {"shape", shape},
                      {"seconds", vs[i].best},
                      {rate, work / vs[i].best / scale},
                      {"roofline_fraction", work / vs[i].best / ceiling},
                      {"threads", fusor_bench::max_threads()},
                      {"repeats", repeats}}
                     .dump()
              << std::endl;
    if (i >= 2 && vs[i].best < best_peer) {
      best_peer = vs[i].best;
      best_peer_name = vs[i].name;
    }
  }
  std::cout << json{{"name", name},
                    {"summary", true},
                    {"formula", formula},
                    {"shape", shape},
                    {"seconds_fused", vs[0].best},
                    {"seconds_unfused", vs[1].best},
                    {"best_peer", best_peer_name},
                    {"seconds_best_peer", best_peer},
                    {"speedup_vs_unfused", vs[1].best / vs[0].best},
                    {"speedup_vs_best_peer", best_peer / vs[0].best},
                    {"roofline_fraction_fused", work / vs[0].best / ceiling},
                    {"loadavg_1min", fusor_bench::load_average()}}
                   .dump()
            << std::endl;
  return true;
}

#if FUSOR_BENCH_HAS_DNNL
/// The user's weights in the layout a oneDNN primitive chose (`want`):
/// reordered once, outside the timing, as a model keeps its weights.
dnnl::memory weights_in(const dnnl::memory::desc& want, dnnl::memory user_w, const dnnl::engine& eng,
                        dnnl::stream strm) {
  if (want == user_w.get_desc()) return user_w;
  dnnl::memory wts(want, eng);
  dnnl::reorder(user_w, wts).execute(strm, user_w, wts);
  strm.wait();
  return wts;
}
#endif

bool conv_transpose_case(bool quick, int repeats, double peak) {
  const index_t N = quick ? 1 : 8, C = quick ? 8 : 128, K = quick ? 4 : 64, H = quick ? 6 : 16, W = H, R = 4, S = 2,
                P = 1;
  const index_t OH = (H - 1) * S - 2 * P + R, OW = OH;
  const auto x = fusor_bench::random_vector(std::size_t(N * C * H * W), 11);
  const auto w = fusor_bench::random_vector(std::size_t(C * K * R * R), 12, -0.1f, 0.1f);
  const auto b = fusor_bench::random_vector(std::size_t(K), 13);
  const std::size_t out_n = std::size_t(N * K * OH * OW);
  std::vector<float> yf(out_n), yu(out_n), yd(out_n), yl(out_n);
  const auto X = fusor::host_view(x.data(), N, C, H, W);
  const auto Wt = fusor::host_view(w.data(), C, K, R, R);
  const auto B = fusor::host_view(b.data(), K);
  const fusor::conv_transpose2d_params p{.stride = {S, S}, .padding = {P, P, P, P}};
  const auto e = fusor::relu(fusor::conv_transpose2d(X, Wt, B, p));
  std::vector<variant> vs;
  std::vector<std::vector<float>*> outs{&yf, &yu};
  vs.push_back({"fused", [&] { fusor::run(fusor::host_view(yf.data(), N, K, OH, OW), e, fusor::host()); }});
  vs.push_back({"unfused", [&] { fusor::run(fusor::host_view(yu.data(), N, K, OH, OW), e, fusor::unfused()); }});
#if FUSOR_BENCH_HAS_DNNL
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc src_md({N, C, H, W}, dt::f32, tag::nchw), dst_md({N, K, OH, OW}, dt::f32, tag::nchw),
      bias_md({K}, dt::f32, tag::x), user_w_md({K, C, R, R}, dt::f32, tag::iohw),  // ONNX [Cin, Cout, kh, kw]
      any_w_md({K, C, R, R}, dt::f32, tag::any);
  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  const dnnl::deconvolution_forward::desc dd(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                             src_md, any_w_md, bias_md, dst_md, {S, S}, {P, P}, {P, P});
  const dnnl::deconvolution_forward::primitive_desc pd(dd, attr, eng);
  dnnl::memory src(src_md, eng, const_cast<float*>(x.data())), dst(dst_md, eng, yd.data()),
      bias(bias_md, eng, const_cast<float*>(b.data())), user_w(user_w_md, eng, const_cast<float*>(w.data()));
  const dnnl::memory wts = weights_in(pd.weights_desc(), user_w, eng, strm);
  const dnnl::deconvolution_forward deconv(pd);
  vs.push_back({"onednn", [&] {
                  deconv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_BIAS, bias},
                                        {DNNL_ARG_DST, dst}});
                  strm.wait();
                }});
  outs.push_back(&yd);
#endif
  // One pass: each output gathers the inputs whose stride-2 scatter reaches it.
  vs.push_back({"loop", [&] {
#pragma omp parallel for collapse(2)
                  for (index_t n = 0; n < N; ++n)
                    for (index_t k = 0; k < K; ++k)
                      for (index_t oh = 0; oh < OH; ++oh)
                        for (index_t ow = 0; ow < OW; ++ow) {
                          float acc = b[std::size_t(k)];
                          for (index_t c = 0; c < C; ++c)
                            for (index_t r = 0; r < R; ++r) {
                              const index_t th = oh + P - r;
                              if (th < 0 || th % S != 0 || th / S >= H) continue;
                              for (index_t s = 0; s < R; ++s) {
                                const index_t tw = ow + P - s;
                                if (tw < 0 || tw % S != 0 || tw / S >= W) continue;
                                acc += x[std::size_t(((n * C + c) * H + th / S) * W + tw / S)] *
                                       w[std::size_t(((c * K + k) * R + r) * R + s)];
                              }
                            }
                          yl[std::size_t(((n * K + k) * OH + oh) * OW + ow)] = acc > 0.0f ? acc : 0.0f;
                        }
                }});
  outs.push_back(&yl);
  const double flops = 2.0 * double(N * C * H * W) * double(K * R * R);
  return run_case("conv_transpose_relu", "relu(conv_transpose2d(x, w, b, stride 2, padding 1))",
                  json{{"x", {N, C, H, W}}, {"w", {C, K, R, R}}, {"y", {N, K, OH, OW}}}, vs, outs, flops, "gflop",
                  peak, repeats);
}

bool pool_case(bool quick, int repeats, double bandwidth) {
  const index_t N = 1, C = quick ? 8 : 64, H = quick ? 14 : 112, W = H, OH = (H + 2 - 3) / 2 + 1, OW = OH;
  const float eps = 1e-5f;
  const auto x = fusor_bench::random_vector(std::size_t(N * C * H * W), 21);
  const auto g = fusor_bench::random_vector(std::size_t(C), 22, 0.5f, 1.5f), be = fusor_bench::random_vector(std::size_t(C), 23),
             mu = fusor_bench::random_vector(std::size_t(C), 24), var = fusor_bench::random_vector(std::size_t(C), 25, 0.5f, 2.0f);
  const std::size_t out_n = std::size_t(N * C * OH * OW);
  std::vector<float> yf(out_n), yu(out_n), yd(out_n), yl(out_n);
  const auto X = fusor::host_view(x.data(), N, C, H, W);
  const auto bn = fusor::batch_norm_params{fusor::host_view(g.data(), C), fusor::host_view(be.data(), C),
                                           fusor::host_view(mu.data(), C), fusor::host_view(var.data(), C)};
  const fusor::pool2d_params p{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}};
  const auto e = fusor::max_pool2d(fusor::relu(fusor::batch_norm(X, bn, eps)), p);
  std::vector<variant> vs;
  std::vector<std::vector<float>*> outs{&yf, &yu};
  vs.push_back({"fused", [&] { fusor::run(fusor::host_view(yf.data(), N, C, OH, OW), e, fusor::host()); }});
  vs.push_back({"unfused", [&] { fusor::run(fusor::host_view(yu.data(), N, C, OH, OW), e, fusor::unfused()); }});
#if FUSOR_BENCH_HAS_DNNL
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc x_md({N, C, H, W}, dt::f32, tag::nchw), y_md({N, C, OH, OW}, dt::f32, tag::nchw),
      c_md({C}, dt::f32, tag::x);
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift | dnnl::normalization_flags::fuse_norm_relu;
  const dnnl::batch_normalization_forward::desc bd(dnnl::prop_kind::forward_inference, x_md, eps, flags);
  const dnnl::batch_normalization_forward::primitive_desc bpd(bd, eng);
  const dnnl::pooling_v2_forward::desc pdsc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, x_md,
                                            y_md, {2, 2}, {3, 3}, {0, 0}, {1, 1}, {1, 1});
  const dnnl::pooling_v2_forward::primitive_desc ppd(pdsc, eng);
  dnnl::memory xm(x_md, eng, const_cast<float*>(x.data())), t(x_md, eng), ym(y_md, eng, yd.data()),
      gm(c_md, eng, const_cast<float*>(g.data())), bm(c_md, eng, const_cast<float*>(be.data())),
      mm(c_md, eng, const_cast<float*>(mu.data())), vm(c_md, eng, const_cast<float*>(var.data()));
  dnnl::memory ws;
  if (ppd.workspace_desc().get_size() > 0) ws = dnnl::memory(ppd.workspace_desc(), eng);
  const dnnl::batch_normalization_forward bnorm(bpd);
  const dnnl::pooling_v2_forward pool(ppd);
  vs.push_back({"onednn", [&] {
                  bnorm.execute(strm, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, t}, {DNNL_ARG_SCALE, gm}, {DNNL_ARG_SHIFT, bm},
                                       {DNNL_ARG_MEAN, mm}, {DNNL_ARG_VARIANCE, vm}});
                  pool.execute(strm, {{DNNL_ARG_SRC, t}, {DNNL_ARG_DST, ym}, {DNNL_ARG_WORKSPACE, ws}});
                  strm.wait();
                }});
  outs.push_back(&yd);
#endif
  // One pass: (x - mean) * inv * gamma + beta with inv = 1 / sqrt(var + eps) hoisted per channel
  // (a multiplication where fusor's batch_norm divides: checked within 1e-5, not bitwise).
  vs.push_back({"loop", [&] {
#pragma omp parallel for collapse(2)
                  for (index_t c = 0; c < C; ++c)
                    for (index_t oh = 0; oh < OH; ++oh) {
                      const float inv = 1.0f / std::sqrt(var[std::size_t(c)] + eps);
                      for (index_t ow = 0; ow < OW; ++ow) {
                        float m = -std::numeric_limits<float>::infinity();
                        for (index_t r = 0; r < 3; ++r)
                          for (index_t s = 0; s < 3; ++s) {
                            const index_t h = oh * 2 - 1 + r, w = ow * 2 - 1 + s;
                            if (h < 0 || h >= H || w < 0 || w >= W) continue;
                            const float v = (x[std::size_t((c * H + h) * W + w)] - mu[std::size_t(c)]) * inv *
                                                g[std::size_t(c)] + be[std::size_t(c)];
                            m = std::max(m, std::max(v, 0.0f));
                          }
                        yl[std::size_t((c * OH + oh) * OW + ow)] = m;
                      }
                    }
                }});
  outs.push_back(&yl);
  const double bytes = 4.0 * double(N * C * H * W + N * C * OH * OW);
  return run_case("bn_relu_max_pool", "max_pool2d(relu(batch_norm(x)), 3x3, stride 2, padding 1)",
                  json{{"x", {N, C, H, W}}, {"y", {N, C, OH, OW}}}, vs, outs, bytes, "gb", bandwidth, repeats);
}

template <bool nhwc>
bool bn_relu_case(bool quick, int repeats, double bandwidth) {
  const index_t N = 1, C = quick ? 8 : 64, H = quick ? 14 : 112, W = H;
  const float eps = 1e-5f;
  const auto x = fusor_bench::random_vector(std::size_t(N * C * H * W), 31);
  const auto g = fusor_bench::random_vector(std::size_t(C), 32, 0.5f, 1.5f), be = fusor_bench::random_vector(std::size_t(C), 33),
             mu = fusor_bench::random_vector(std::size_t(C), 34), var = fusor_bench::random_vector(std::size_t(C), 35, 0.5f, 2.0f);
  const std::size_t n = std::size_t(N * C * H * W);
  std::vector<float> yf(n), yu(n), yd(n), yl(n);
  // NCHW, or NHWC with the channel axis last (the parameters vary along the
  // last dim)
  const auto view = [&](auto* p) {
    if constexpr (nhwc) return fusor::host_view(p, N, H, W, C);
    else return fusor::host_view(p, N, C, H, W);
  };
  const auto X = view(x.data());
  const auto bn = fusor::batch_norm_params{fusor::host_view(g.data(), C), fusor::host_view(be.data(), C),
                                           fusor::host_view(mu.data(), C), fusor::host_view(var.data(), C)};
  const auto e = fusor::relu(fusor::batch_norm<nhwc ? -1 : 1>(X, bn, eps));
  std::vector<variant> vs;
  std::vector<std::vector<float>*> outs{&yf, &yu};
  const auto Y = [&](std::vector<float>& y) { return view(y.data()); };
  vs.push_back({"fused", [&] { fusor::run(Y(yf), e, fusor::host()); }});
  vs.push_back({"unfused", [&] { fusor::run(Y(yu), e, fusor::unfused()); }});
#if FUSOR_BENCH_HAS_DNNL
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc x_md({N, C, H, W}, dt::f32, nhwc ? tag::nhwc : tag::nchw), c_md({C}, dt::f32, tag::x);
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift | dnnl::normalization_flags::fuse_norm_relu;
  const dnnl::batch_normalization_forward::desc bd(dnnl::prop_kind::forward_inference, x_md, eps, flags);
  const dnnl::batch_normalization_forward::primitive_desc bpd(bd, eng);
  dnnl::memory xm(x_md, eng, const_cast<float*>(x.data())), ym(x_md, eng, yd.data()),
      gm(c_md, eng, const_cast<float*>(g.data())), bm(c_md, eng, const_cast<float*>(be.data())),
      mm(c_md, eng, const_cast<float*>(mu.data())), vm(c_md, eng, const_cast<float*>(var.data()));
  const dnnl::batch_normalization_forward bnorm(bpd);
  vs.push_back({"onednn", [&] {
                  bnorm.execute(strm, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_SCALE, gm}, {DNNL_ARG_SHIFT, bm},
                                       {DNNL_ARG_MEAN, mm}, {DNNL_ARG_VARIANCE, vm}});
                  strm.wait();
                }});
  outs.push_back(&yd);
#endif
  // One pass, the per-channel scale and shift hoisted (a multiplication where
  // fusor's batch_norm divides: checked within 1e-5, not bitwise).
  vs.push_back({"loop", [&] {
                  if constexpr (nhwc) {
                    // per-channel scale and shift in two arrays, then one pass
                    std::vector<float> k(static_cast<std::size_t>(C)), sh(static_cast<std::size_t>(C));
                    for (index_t c = 0; c < C; ++c) {
                      k[std::size_t(c)] = g[std::size_t(c)] / std::sqrt(var[std::size_t(c)] + eps);
                      sh[std::size_t(c)] = be[std::size_t(c)] - mu[std::size_t(c)] * k[std::size_t(c)];
                    }
#pragma omp parallel for
                    for (index_t p = 0; p < N * H * W; ++p) {
                      const float* const src = x.data() + p * C;
                      float* const dst = yl.data() + p * C;
                      for (index_t c = 0; c < C; ++c)
                        dst[c] = std::max(src[c] * k[std::size_t(c)] + sh[std::size_t(c)], 0.0f);
                    }
                    return;
                  }
#pragma omp parallel for
                  for (index_t c = 0; c < N * C; ++c) {
                    const index_t ch = c % C;
                    const float k = g[std::size_t(ch)] / std::sqrt(var[std::size_t(ch)] + eps),
                                sh = be[std::size_t(ch)] - mu[std::size_t(ch)] * k;
                    const float* const src = x.data() + c * H * W;
                    float* const dst = yl.data() + c * H * W;
                    for (index_t i = 0; i < H * W; ++i) dst[i] = std::max(src[i] * k + sh, 0.0f);
                  }
                }});
  outs.push_back(&yl);
  const double bytes = 8.0 * double(n);
  return run_case(nhwc ? "bn_relu_nhwc" : "bn_relu",
                  nhwc ? "relu(batch_norm<-1>(x)) over NHWC (per-channel parameters along the last dim)"
                       : "relu(batch_norm(x)) (inference; per-channel parameters broadcast over H, W)",
                  json{{"x", {N, C, H, W}}}, vs, outs, bytes, "gb", bandwidth, repeats);
}

bool depthwise_case(bool quick, int repeats, double peak) {
  const index_t N = 1, C = quick ? 8 : 96, H = quick ? 14 : 112, W = H, R = 3, S = 2, P = 1;
  const index_t OH = (H + 2 * P - R) / S + 1, OW = OH;
  const auto x = fusor_bench::random_vector(std::size_t(N * C * H * W), 41);
  const auto w = fusor_bench::random_vector(std::size_t(C * R * R), 42, -0.5f, 0.5f);
  const auto b = fusor_bench::random_vector(std::size_t(C), 43);
  const std::size_t out_n = std::size_t(N * C * OH * OW);
  std::vector<float> yf(out_n), yu(out_n), yd(out_n), yl(out_n);
  const auto X = fusor::host_view(x.data(), N, C, H, W);
  const fusor::conv2d_params p{.stride = {S, S}, .padding = {P, P, P, P}};
  const auto e = fusor::clip(fusor::depthwise_conv2d(X, fusor::host_view(w.data(), C, 1, R, R), fusor::host_view(b.data(), C), p),
                             0.0f, 6.0f);
  std::vector<variant> vs;
  std::vector<std::vector<float>*> outs{&yf, &yu};
  vs.push_back({"fused", [&] { fusor::run(fusor::host_view(yf.data(), N, C, OH, OW), e, fusor::host()); }});
  vs.push_back({"unfused", [&] { fusor::run(fusor::host_view(yu.data(), N, C, OH, OW), e, fusor::unfused()); }});
#if FUSOR_BENCH_HAS_DNNL
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::desc src_md({N, C, H, W}, dt::f32, tag::nchw), dst_md({N, C, OH, OW}, dt::f32, tag::nchw),
      bias_md({C}, dt::f32, tag::x), user_w_md({C, 1, 1, R, R}, dt::f32, tag::goihw),
      any_w_md({C, 1, 1, R, R}, dt::f32, tag::any);
  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  const dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           src_md, any_w_md, bias_md, dst_md, {S, S}, {P, P}, {P, P});
  const dnnl::convolution_forward::primitive_desc pd(cd, attr, eng);
  dnnl::memory src(src_md, eng, const_cast<float*>(x.data())), dst(dst_md, eng, yd.data()),
      bias(bias_md, eng, const_cast<float*>(b.data())), user_w(user_w_md, eng, const_cast<float*>(w.data()));
  const dnnl::memory wts = weights_in(pd.weights_desc(), user_w, eng, strm);
  const dnnl::convolution_forward conv(pd);
  vs.push_back({"onednn", [&] {
                  conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
                  strm.wait();
                }});
  outs.push_back(&yd);
#endif
  vs.push_back({"loop", [&] {
#pragma omp parallel for collapse(2)
                  for (index_t c = 0; c < N * C; ++c)
                    for (index_t oh = 0; oh < OH; ++oh)
                      for (index_t ow = 0; ow < OW; ++ow) {
                        float acc = b[std::size_t(c % C)];
                        for (index_t r = 0; r < R; ++r) {
                          const index_t h = oh * S - P + r;
                          if (h < 0 || h >= H) continue;
                          for (index_t s = 0; s < R; ++s) {
                            const index_t wi = ow * S - P + s;
                            if (wi < 0 || wi >= W) continue;
                            acc += x[std::size_t((c * H + h) * W + wi)] * w[std::size_t(((c % C) * R + r) * R + s)];
                          }
                        }
                        yl[std::size_t((c * OH + oh) * OW + ow)] = std::min(std::max(acc, 0.0f), 6.0f);
                      }
                }});
  outs.push_back(&yl);
  const double flops = 2.0 * double(N * C * OH * OW) * double(R * R);
  return run_case("depthwise_relu6", "clip(depthwise_conv2d(x, w, b, 3x3, stride 2, padding 1), 0, 6) (MobileNetV2)",
                  json{{"x", {N, C, H, W}}, {"w", {C, 1, R, R}}, {"y", {N, C, OH, OW}}}, vs, outs, flops, "gflop", peak,
                  repeats);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 10;
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--case" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--repeats" && i + 1 < argc) {
      const long long v = fusor_bench::parse_positive(argv[++i]);
      if (v <= 0) return std::fprintf(stderr, "bench_layers: --repeats takes a positive integer\n"), 2;
      repeats = int(std::min<long long>(v, 100000));
    } else {
      std::fprintf(stderr, "usage: %s [--repeats R] [--quick] [--case NAME]\n", argv[0]);
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  if (quick) repeats = 1;
  double peak_seconds = 0;
  const double peak = fusor_bench::measure_peak(peak_seconds);
  const double bandwidth = fusor_bench::measure_triad_bandwidth(quick ? std::int64_t(1) << 20 : std::int64_t(1) << 25);
  std::cout << json{{"name", "host_ceilings"},
                    {"peak_gflop_per_s", peak / 1e9},
                    {"triad_gb_per_s", bandwidth / 1e9},
                    {"onednn", bool(FUSOR_BENCH_HAS_DNNL)},
                    {"threads", fusor_bench::max_threads()},
                    {"loadavg_1min", fusor_bench::load_average()}}
                   .dump()
            << std::endl;
  const auto want = [&](const char* name) { return only.empty() || only == name; };
  bool ok = true, any = false;
  if (want("conv_transpose_relu")) any = true, ok = conv_transpose_case(quick, repeats, peak) && ok;
  if (want("bn_relu_max_pool")) any = true, ok = pool_case(quick, repeats, bandwidth) && ok;
  if (want("bn_relu")) any = true, ok = bn_relu_case<false>(quick, repeats, bandwidth) && ok;
  if (want("bn_relu_nhwc")) any = true, ok = bn_relu_case<true>(quick, repeats, bandwidth) && ok;
  if (want("depthwise_relu6")) any = true, ok = depthwise_case(quick, repeats, peak) && ok;
  if (!any) return std::fprintf(stderr, "bench_layers: no case named '%s'\n", only.c_str()), 2;
  return ok ? 0 : 1;
}
