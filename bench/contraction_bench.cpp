/// @file bench/contraction_bench.cpp
/// Host benchmark of fused contractions (kernels/contraction.hpp), fp32, in
/// one run, each case as
///   fused    fusor::run(..., fusor::host())     one kernel (BN folding: the
///            folded weights are prepared on the first run and cached, so the
///            timed runs are one kernel)
///   unfused  fusor::run(..., fusor::unfused())  one kernel per op (the same
///            tile GEMM for the contraction), temporaries allocated per run
/// Cases (the shapes of the models named; batch 1 for the CNNs):
///   bert_mlp        gelu(linear(x, W1, b1)): BERT-base intermediate layer,
///                   128 tokens, 768 -> 3072
///   ln_linear       linear(layer_norm(x, g, b), W, bias): 128 tokens, 768 -> 768
///   resnet_conv_bn_relu  relu(batch_norm(conv2d(x, w, pad 1))): ResNet-18/34
///                   conv2_x 3x3, 64 -> 64 channels, 56 x 56
///   mobilenet_dw_pw conv2d(relu6(batch_norm(depthwise 3x3(x))), w_pw): a
///                   MobileNetV2 block's dw 3x3 on 96 channels at 56 x 56
///                   (stride 1), BN, ReLU6, then the pointwise 96 -> 24
///   linear_bias_gelu_m{1,16,512,2048}  gelu(linear(x, W, b)), K = 1024,
///                   N = 4096, against peers in the same interleaved run
///                   (bench_linear_gelu): OpenBLAS sgemm alone (the engine's
///                   ceiling), OpenBLAS + a separate bias+gelu pass, Eigen's
///                   product + that pass, a hand-written OpenMP loop, and
///                   fusor's device twin (at <= 2 GFLOP); the summary gives
///                   the best peer, fused's speedup over it and
///                   fraction_of_engine_gemm (sgemm alone / fused time)
///
/// FLOPs: 2 per multiply-add of the contraction(s) only (2 M N K; convs:
/// 2 N Ho Wo Cout (C/groups) kh kw); the elementwise ops are not counted.
///
/// Peak: the "host peak" is MEASURED at startup (not a datasheet number): an
/// OpenMP microkernel on every thread, 16 independent 4-wide multiply-add
/// chains per thread (v = v * m + a, compiled like this file: -O3, the
/// benchmarks' instruction set, -march=native unless FUSOR_BENCH_NATIVE=OFF,
/// no FMA contraction), i.e. the fp32 multiply+add throughput this binary's
/// code reaches without FMA on this machine (best of 3 trials of about
/// 0.1-0.5 s: load from other processes only lowers a trial).
/// peak_fraction = GFLOP/s / that peak. (OpenBLAS's FMA kernels can exceed
/// it: the ratio that matters is fraction_of_engine_gemm.)
///
/// Timing: every variant runs once as warmup; then --repeats rounds, each
/// timing every variant of the case once (std::chrono::steady_clock); each
/// variant's minimum is reported. Results are checked before timing (fused vs
/// unfused within a normwise tolerance: batch-norm folding changes rounding;
/// the other cases are usually equal bit for bit, reported as
/// bitwise_mismatches); a disagreement exits with status 1.
///
/// Output: JSON lines: the peak, one line per variant, one summary line per
/// case with seconds_fused, seconds_unfused, gflop_per_s_fused/unfused,
/// peak_fraction_fused/unfused and the speedup.
///
/// Usage: bench_contraction [--repeats R] [--quick]
///   --quick   small shapes (16 tokens, 14 x 14 images): a smoke test
#include "bench_common.hpp"

#include <fusor/fusor.hpp>
#include <nlohmann/json.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if FUSOR_WITH_OPENBLAS
#include <cblas.h>
#endif
#if FUSOR_BENCH_HAS_EIGEN
#include <Eigen/Core>
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using fusor::index_t;
using fusor_bench::json;
using fusor_bench::load_average;
using fusor_bench::max_threads;
using fusor_bench::measure_peak;
using fusor_bench::random_vector;
using fusor_bench::time_interleaved;

struct variant {
  std::string name;
  std::function<std::size_t()> run;  // returns kernels launched
  double best = std::numeric_limits<double>::infinity();
  std::size_t kernels = 0;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R] [--quick]\n"
               "  --repeats R  timed rounds after one warmup run of each variant (default 10)\n"
               "  --quick      small shapes (a smoke test)\n"
               "threads: OMP_NUM_THREADS\n",
               argv0);
  std::exit(status);
}

/// Runs one case: checks fused against unfused, times both, prints JSON.
/// Returns false when the check fails.
template <class Run>
bool bench_case(const char* name, const char* formula, json shape, double flops, std::vector<float>& y_fused,
                std::vector<float>& y_unfused, Run&& run, int repeats, double peak, int threads, double tol) {
  const auto fused_ex = fusor::host();
  const auto unfused_ex = fusor::unfused();
  const std::size_t k_first = run(y_fused, fused_ex);  // includes the prepared (folded) weights, if any
  const std::size_t k_unfused = run(y_unfused, unfused_ex);
  double scale = 0, max_abs = 0;
  std::int64_t bitwise = 0;
  for (std::size_t i = 0; i < y_fused.size(); ++i) {
    scale = std::max(scale, double(std::fabs(y_unfused[i])));
    max_abs = std::max(max_abs, double(std::fabs(y_fused[i] - y_unfused[i])));
    bitwise += std::bit_cast<std::uint32_t>(y_fused[i]) != std::bit_cast<std::uint32_t>(y_unfused[i]);
  }
  const bool finite = std::all_of(y_fused.begin(), y_fused.end(), [](float v) { return std::isfinite(v); });
  const bool pass = finite && max_abs <= tol * (scale + 1e-30);
  std::cout << json{{"name", name},
                    {"check", "fused_vs_unfused_normwise"},
                    {"elements", y_fused.size()},
                    {"max_abs_diff", max_abs},
                    {"max_abs_unfused", scale},
                    {"tolerance_normwise", tol},
                    {"bitwise_mismatches", bitwise},
                    {"kernels_fused_first_run", k_first},
                    {"kernels_unfused", k_unfused},
                    {"pass", pass}}
                   .dump()
            << std::endl;
  if (!pass) return false;

  std::vector<variant> vs{{"fused", [&] { return run(y_fused, fused_ex); }},
                          {"unfused", [&] { return run(y_unfused, unfused_ex); }}};
  const json load_before = load_average();
  time_interleaved(vs, repeats);
  const json load_after = load_average();
  for (const auto& v : vs) {
    std::cout << json{{"name", name},
                      {"variant", v.name},
                      {"backend", "host"},
                      {"shape", shape},
                      {"flops", flops},
                      {"seconds", v.best},
                      {"gflop_per_s", flops / v.best / 1e9},
                      {"peak_fraction", flops / v.best / peak},
                      {"kernels", v.kernels},
                      {"threads", threads},
                      {"repeats", repeats}}
                     .dump()
              << std::endl;
  }
  const double tf = vs[0].best, tu = vs[1].best;
  std::cout << json{{"name", name},
                    {"summary", true},
                    {"backend", "host"},
                    {"formula", formula},
                    {"shape", shape},
                    {"flops", flops},
                    {"seconds_fused", tf},
                    {"seconds_unfused", tu},
                    {"gflop_per_s_fused", flops / tf / 1e9},
                    {"gflop_per_s_unfused", flops / tu / 1e9},
                    {"peak_gflop_per_s", peak / 1e9},
                    {"peak_fraction_fused", flops / tf / peak},
                    {"peak_fraction_unfused", flops / tu / peak},
                    {"speedup_fused_vs_unfused", tu / tf},
                    {"kernels_fused", vs[0].kernels},
                    {"kernels_unfused", vs[1].kernels},
                    {"threads", threads},
                    {"loadavg_1min_before", load_before},
                    {"loadavg_1min_after", load_after}}
                   .dump()
            << std::endl;
  return true;
}

/// gelu(x) as fusor's op::gelu computes it: 0.5 x (1 + erf(x / sqrt 2)).
inline float gelu_ref(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

/// linear + bias + gelu at M tokens, K -> N (issue 17's engine case), every
/// variant in one interleaved run: fusor fused (host GEMM engine), fusor
/// unfused, fusor's device twin (small shapes only: it is the slow
/// verification path), OpenBLAS sgemm alone (the engine's plain GEMM: the
/// ceiling a fused epilogue should come close to), OpenBLAS sgemm + a
/// separate OpenMP bias+gelu pass, Eigen's product + the same pass (built with
/// this file's flags), and a hand-written OpenMP loop (a dot product per
/// output: at M = 1 the GEMV loop). Each peer is checked against fused.
bool bench_linear_gelu(index_t M, index_t K, index_t N, int repeats, int threads) {
  const auto x = random_vector(std::size_t(M * K), 41), w = random_vector(std::size_t(N * K), 42, -0.05f, 0.05f),
             b = random_vector(std::size_t(N), 43);
  std::vector<float> y(std::size_t(M * N)), yr(y.size());
  const auto e = fusor::gelu(fusor::linear(fusor::host_view(x.data(), M, K), fusor::host_view(w.data(), N, K),
                                           fusor::host_view(b.data(), N)));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  const auto out = [](std::vector<float>& v, index_t m, index_t n) { return fusor::host_view(v.data(), m, n); };
  const auto fused_ex = fusor::host();
  auto twin_ex = fusor::host();
  twin_ex.gemm_engine = fusor::host_gemm_engine::device_twin;
  const auto unfused_ex = fusor::unfused();
  const auto epilogue = [&](std::vector<float>& v) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) v[std::size_t(i * N + j)] = gelu_ref(v[std::size_t(i * N + j)] + b[std::size_t(j)]);
  };
  std::vector<variant> vs;
  vs.push_back({"fused", [&] { return fusor::run(out(y, M, N), e, fused_ex).kernels; }});
  vs.push_back({"unfused", [&] { return fusor::run(out(yr, M, N), e, unfused_ex).kernels; }});
  const double flops = 2.0 * double(M) * double(K) * double(N);
  if (flops <= 2e9) vs.push_back({"fused_device_twin", [&] { return fusor::run(out(yr, M, N), e, twin_ex).kernels; }});
#if FUSOR_WITH_OPENBLAS
  vs.push_back({"openblas_sgemm_only", [&] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, x.data(), int(K),
                              w.data(), int(K), 0.0f, yr.data(), int(N));
                  return std::size_t(1);
                }});
  vs.push_back({"openblas_sgemm_then_epilogue", [&] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, x.data(), int(K),
                              w.data(), int(K), 0.0f, yr.data(), int(N));
                  epilogue(yr);
                  return std::size_t(2);
                }});
#endif
#if FUSOR_BENCH_HAS_EIGEN
  vs.push_back({"eigen_product_then_epilogue", [&] {
                  using rm = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
                  Eigen::Map<const rm> xm(x.data(), M, K), wm(w.data(), N, K);
                  Eigen::Map<rm> ym(yr.data(), M, N);
                  ym.noalias() = xm * wm.transpose();
                  epilogue(yr);
                  return std::size_t(2);
                }});
#endif
  vs.push_back({"omp_loop", [&] {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) collapse(2)
#endif
                  for (index_t i = 0; i < M; ++i)
                    for (index_t j = 0; j < N; ++j) {
                      const float* xr = x.data() + i * K;
                      const float* wr = w.data() + j * K;
                      float acc = 0;
                      for (index_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
                      yr[std::size_t(i * N + j)] = gelu_ref(acc + b[std::size_t(j)]);
                    }
                  return std::size_t(1);
                }});
  // Check every variant against fused (normwise: the engines sum K terms in
  // different orders; 1e-4 is ~10 ulp of the largest output at K = 4096).
  vs[0].run();
  bool pass = true;
  json checks = json::object();
  for (std::size_t v = 1; v < vs.size(); ++v) {
    std::fill(yr.begin(), yr.end(), std::numeric_limits<float>::quiet_NaN());
    vs[v].run();
    if (vs[v].name == "openblas_sgemm_only") continue;
    double scale = 0, diff = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      scale = std::max(scale, double(std::fabs(y[i])));
      diff = std::max(diff, double(std::fabs(y[i] - yr[i])));
    }
    const bool ok = diff <= 1e-4 * (scale + 1e-30);  // (NaN diff fails)
    checks[vs[v].name] = {{"max_abs_diff", diff}, {"pass", ok}};
    pass = pass && ok;
  }
  const std::string name = "linear_bias_gelu_m" + std::to_string(M);
  const json shape{{"m", M}, {"k", K}, {"n", N}};
  std::cout << json{{"name", name}, {"check", "every_variant_vs_fused_normwise"}, {"tolerance_normwise", 1e-4},
                    {"variants", checks}, {"pass", pass}}
                   .dump()
            << std::endl;
  if (!pass) return false;
  time_interleaved(vs, repeats);
  double best_peer = std::numeric_limits<double>::infinity(), engine_only = 0;
  std::string best_peer_name;
  for (const auto& v : vs) {
    std::cout << json{{"name", name}, {"variant", v.name}, {"backend", "host"}, {"shape", shape}, {"flops", flops},
                      {"seconds", v.best}, {"gflop_per_s", flops / v.best / 1e9}, {"threads", threads},
                      {"repeats", repeats}}
                     .dump()
              << std::endl;
    if (v.name == "openblas_sgemm_only") {
      engine_only = v.best;
    } else if (v.name != "fused" && v.name != "unfused" && v.name != "fused_device_twin" && v.best < best_peer) {
      best_peer = v.best;
      best_peer_name = v.name;
    }
  }
  json summary{{"name", name},
               {"summary", true},
               {"backend", "host"},
               {"formula", "gelu(linear(x, W, b))"},
               {"shape", shape},
               {"flops", flops},
               {"host_gemm_engine", fusor::exec::host_gemm_engine_name(fused_ex)},
               {"seconds_fused", vs[0].best},
               {"seconds_unfused", vs[1].best},
               {"gflop_per_s_fused", flops / vs[0].best / 1e9},
               {"speedup_fused_vs_unfused", vs[1].best / vs[0].best},
               {"best_peer", best_peer_name},
               {"speedup_fused_vs_best_peer", best_peer / vs[0].best},
               {"threads", threads}};
  if (engine_only > 0) summary["fraction_of_engine_gemm"] = engine_only / vs[0].best;
  std::cout << summary.dump() << std::endl;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 10;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--repeats" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 0);
      if (*end != '\0' || v <= 0) usage(argv[0], 2);
      repeats = int(std::min<long>(v, 100000));
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  const int threads = max_threads();
  double peak_seconds = 0;
  const double peak = measure_peak(peak_seconds);
  std::cout << json{{"name", "host_peak"},
                    {"backend", "host"},
                    {"peak_gflop_per_s", peak / 1e9},
                    {"method",
                     "measured: OpenMP microkernel, 16 independent 4-wide fp32 multiply+add chains per thread "
                     "(v = v * m + a), -O3, baseline x86-64 ISA (SSE2), no FMA; best of 3 trials"},
                    {"seconds", peak_seconds},
                    {"threads", threads},
                    {"loadavg_1min", load_average()}}
                   .dump()
            << std::endl;

  bool ok = true;
  const index_t tokens = quick ? 16 : 128, hidden = 768, ffn = quick ? 768 : 3072;
  const index_t img = quick ? 14 : 56;

  // --- BERT MLP: gelu(linear(x, W1, b1)) -------------------------------------
  {
    const auto x = random_vector(std::size_t(tokens * hidden), 1), w = random_vector(std::size_t(ffn * hidden), 2, -0.05f, 0.05f),
               b = random_vector(std::size_t(ffn), 3);
    std::vector<float> yf(std::size_t(tokens * ffn)), yu(yf.size());
    const auto e = fusor::gelu(fusor::linear(fusor::host_view(x.data(), tokens, hidden),
                                             fusor::host_view(w.data(), ffn, hidden), fusor::host_view(b.data(), ffn)));
    static_assert(fusor::kernel_count<decltype(e)> == 1);
    const auto run = [&](std::vector<float>& y, const auto& ex) {
      return fusor::run(fusor::host_view(y.data(), tokens, ffn), e, ex).kernels;
    };
    ok = bench_case("bert_mlp", "gelu(linear(x, W1, b1))", json{{"tokens", tokens}, {"in", hidden}, {"out", ffn}},
                    2.0 * double(tokens) * double(hidden) * double(ffn), yf, yu, run, repeats, peak, threads, 1e-5) &&
         ok;
  }

  // --- LayerNorm -> Linear ------------------------------------------------------
  {
    const auto x = random_vector(std::size_t(tokens * hidden), 11, -2.0f, 3.0f), g = random_vector(std::size_t(hidden), 12),
               be = random_vector(std::size_t(hidden), 13), w = random_vector(std::size_t(hidden * hidden), 14, -0.05f, 0.05f),
               b = random_vector(std::size_t(hidden), 15);
    std::vector<float> yf(std::size_t(tokens * hidden)), yu(yf.size());
    const auto e = fusor::linear(fusor::layer_norm(fusor::host_view(x.data(), tokens, hidden), fusor::host_view(g.data(), hidden),
                                                   fusor::host_view(be.data(), hidden)),
                                 fusor::host_view(w.data(), hidden, hidden), fusor::host_view(b.data(), hidden));
    static_assert(fusor::kernel_count<decltype(e)> == 1);
    const auto run = [&](std::vector<float>& y, const auto& ex) {
      return fusor::run(fusor::host_view(y.data(), tokens, hidden), e, ex).kernels;
    };
    ok = bench_case("ln_linear", "linear(layer_norm(x, g, b), W, bias)",
                    json{{"tokens", tokens}, {"in", hidden}, {"out", hidden}},
                    2.0 * double(tokens) * double(hidden) * double(hidden), yf, yu, run, repeats, peak, threads, 1e-5) &&
         ok;
  }

  // --- ResNet conv3x3 + BN + ReLU ---------------------------------------------
  {
    const index_t c = 64, k = 64;
    const auto x = random_vector(std::size_t(c * img * img), 21), w = random_vector(std::size_t(k * c * 9), 22, -0.06f, 0.06f),
               gamma = random_vector(std::size_t(k), 23, 0.5f, 1.5f), beta = random_vector(std::size_t(k), 24),
               mean = random_vector(std::size_t(k), 25, -0.1f, 0.1f), var = random_vector(std::size_t(k), 26, 0.5f, 2.0f);
    std::vector<float> yf(std::size_t(k * img * img)), yu(yf.size());
    const auto pv = [&](const std::vector<float>& p) { return fusor::host_view(p.data(), k); };
    const auto e = fusor::relu(fusor::batch_norm(
        fusor::conv2d(fusor::host_view(x.data(), 1, c, img, img), fusor::host_view(w.data(), k, c, 3, 3), nullptr,
                      {.padding = {1, 1, 1, 1}}),
        fusor::batch_norm_params{pv(gamma), pv(beta), pv(mean), pv(var)}));
    static_assert(fusor::kernel_count<decltype(e)> == 1);
    // One executor per variant object (bench_case makes them): the folded
    // weights are prepared on its first (warmup/check) run and cached.
    const auto run = [&](std::vector<float>& y, const auto& ex) {
      return fusor::run(fusor::host_view(y.data(), 1, k, img, img), e, ex).kernels;
    };
    // Folding changes rounding: normwise tolerance of a few ulp per term.
    ok = bench_case("resnet_conv_bn_relu", "relu(batch_norm(conv2d(x, w, pad 1)))",
                    json{{"n", 1}, {"c", c}, {"h", img}, {"w", img}, {"cout", k}, {"kernel", 3}},
                    2.0 * double(img * img) * double(k) * double(c * 9), yf, yu, run, repeats, peak, threads, 1e-4) &&
         ok;
  }

  // --- MobileNetV2 depthwise -> BN -> ReLU6 -> pointwise ---------------------
  {
    const index_t c = 96, k = 24;
    const auto x = random_vector(std::size_t(c * img * img), 31), wd = random_vector(std::size_t(c * 9), 32, -0.3f, 0.3f),
               gamma = random_vector(std::size_t(c), 33, 0.5f, 1.5f), beta = random_vector(std::size_t(c), 34),
               mean = random_vector(std::size_t(c), 35, -0.1f, 0.1f), var = random_vector(std::size_t(c), 36, 0.5f, 2.0f),
               wp = random_vector(std::size_t(k * c), 37, -0.1f, 0.1f);
    std::vector<float> yf(std::size_t(k * img * img)), yu(yf.size());
    const auto pv = [&](const std::vector<float>& p) { return fusor::host_view(p.data(), c); };
    const auto dw = fusor::depthwise_conv2d(fusor::host_view(x.data(), 1, c, img, img), fusor::host_view(wd.data(), c, 1, 3, 3),
                                            nullptr, {.padding = {1, 1, 1, 1}});
    const auto e = fusor::conv2d(fusor::clip(fusor::batch_norm(dw, fusor::batch_norm_params{pv(gamma), pv(beta), pv(mean), pv(var)}),
                                             0.0f, 6.0f),
                                 fusor::host_view(wp.data(), k, c, 1, 1));
    static_assert(fusor::kernel_count<decltype(e)> == 1);
    const auto run = [&](std::vector<float>& y, const auto& ex) {
      return fusor::run(fusor::host_view(y.data(), 1, k, img, img), e, ex).kernels;
    };
    const double flops = 2.0 * double(img * img) * double(c) * 9 + 2.0 * double(img * img) * double(k) * double(c);
    ok = bench_case("mobilenet_dw_pw", "conv2d(clip(batch_norm(depthwise_conv2d(x, wd, pad 1)), 0, 6), w_pw)",
                    json{{"n", 1}, {"c", c}, {"h", img}, {"w", img}, {"cout", k}, {"dw_kernel", 3}}, flops, yf, yu, run,
                    repeats, peak, threads, 1e-4) &&
         ok;
  }

  // --- linear + bias + gelu against the engine and the peers ------------------
  // (issue 17: M = 1, 16, 512, 2048; K 1024, N 4096. --quick: M = 1 and 16 at K = N = 256)
  for (const index_t m : quick ? std::vector<index_t>{1, 16} : std::vector<index_t>{1, 16, 512, 2048})
    ok = bench_linear_gelu(m, quick ? 256 : 1024, quick ? 256 : 4096, repeats, threads) && ok;

  if (!ok) {
    std::cerr << "bench_contraction: fused and unfused results disagree\n";
    return 1;
  }
  return 0;
}
