/// @file bench/attention_bench.cpp
/// Host benchmark of attention, fp32, B = 1, H = 4, head_dim 64, sequence
/// lengths 256 / 512 / 1024 (Sq = Sk), causal and not, each as
///   fused    fusor::scaled_dot_product_attention(q, k, v, {.causal})
///            run on fusor::host(): one flash-attention kernel (the host twin
///            of the FlashAttention-2 block algorithm), no [Sq, Sk] matrix
///   unfused  the same attention written by hand,
///              matmul(softmax(matmul(q, transpose(k)) * s [+ causal_mask]), v),
///            run on fusor::unfused(): matmul, mul, [add], softmax, matmul,
///            each a kernel, the [B, H, Sq, Sk] scores materialized
///            (causal_mask: [Sq, Sk], 0 or -inf)
///
/// FLOPs: 4 B H Sq Sk D (q k^T and p v, 2 per multiply-add), halved when
/// causal (the useful work; the same nominal count is used for both variants,
/// so gflop_per_s compares time to solution).
///
/// Bytes (a model of the fp32 traffic, 4 bytes per element):
///   fused    q and o once, plus K and V once per 64-row query block (the
///            kernel streams them through shared memory per block; causal
///            blocks stop at their last visible key tile)
///   unfused  q, k, v and o once, plus each kernel's reads and writes of the
///            [Sq, Sk] scores per head: matmul writes S, mul reads+writes,
///            (causal) add reads S and the mask and writes, softmax reads+writes,
///            the second matmul reads P
///
/// Timing: every variant runs once as warmup (the correctness check); then
/// --repeats rounds, each timing both variants once (steady_clock); each
/// variant's minimum is reported. Fused and unfused must agree within
/// tol = 2 [expm1(2 delta) + (2 Sk + 4 ceil(Sk / 32) + 10) 2^-24] (delta =
/// scale (D + 2) 2^-24 D + 4 2^-24 (D scale + 1): q, k, v in [-1, 1) so
/// |scores| <= D scale and |o| <= 1; the first-order bound of
/// tests/host/test_attention.cpp for each result, doubled); a disagreement
/// exits with status 1.
///
/// Output: JSON lines: per case one line per variant (seconds, gflop_per_s,
/// bytes_model, gb_per_s) and a summary (speedup).
///
/// Usage: bench_attention [--repeats R] [--quick]
///   --quick   sequence lengths 64 and 128, one repeat: a smoke test
#include "bench_common.hpp"

#include <fusor/fusor.hpp>
#include <nlohmann/json.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
using fusor_bench::random_vector;

struct variant {
  const char* name;
  std::function<std::size_t()> run;  // returns the kernels launched
  double best = std::numeric_limits<double>::infinity();
  std::size_t kernels = 0;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R] [--quick]\n"
               "  --repeats R  timed rounds after the warmup/check run; each variant's minimum is reported "
               "(default 2)\n"
               "  --quick      sequence lengths 64 and 128, one repeat (a smoke test)\n"
               "threads: OMP_NUM_THREADS\n",
               argv0);
  std::exit(status);
}

/// Bytes of the fused kernel (see the file comment).
double fused_bytes(index_t B, index_t H, index_t S, index_t D, bool causal) {
  double kv_rows = 0;  // K/V rows loaded, summed over query blocks
  for (index_t i0 = 0; i0 < S; i0 += 64) {
    index_t keys = S;
    if (causal) keys = std::min<index_t>(S, (i0 + 64 + 31) / 32 * 32);
    kv_rows += double(keys);
  }
  return 4.0 * double(B * H) * (2.0 * double(S * D) + kv_rows * 2.0 * double(D));
}
/// Bytes of the unfused kernels (see the file comment).
double unfused_bytes(index_t B, index_t H, index_t S, index_t D, bool causal) {
  const double ss = double(S) * double(S);
  const double per_head = 4.0 * double(S * D) + ss /*mm1 write*/ + 2 * ss /*mul*/ + (causal ? 3 * ss : 0.0) /*add*/ +
                          2 * ss /*softmax*/ + ss /*mm2 read*/;
  return 4.0 * double(B * H) * per_head;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 2;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--repeats" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 0);
      if (end == argv[i] || *end != '\0' || v <= 0) usage(argv[0], 2);
      repeats = int(std::min<long>(v, 1000));
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  if (quick) repeats = 1;
  const int threads = max_threads();
  const index_t B = 1, H = 4, D = 64;
  const std::vector<index_t> lengths = quick ? std::vector<index_t>{64, 128} : std::vector<index_t>{256, 512, 1024};
  const float scale = float(1.0 / std::sqrt(double(D)));
  bool ok = true;
  const auto start = std::chrono::steady_clock::now();

  for (const index_t S : lengths) {
    const std::size_t n = std::size_t(B * H * S * D);
    const auto q = random_vector(n, 1), k = random_vector(n, 2), v = random_vector(n, 3);
    std::vector<float> causal_mask(std::size_t(S * S));
    for (index_t i = 0; i < S; ++i)
      for (index_t j = 0; j < S; ++j)
        causal_mask[std::size_t(i * S + j)] = j > i ? -std::numeric_limits<float>::infinity() : 0.0f;
    std::vector<float> o_fused(n), o_unfused(n);
    const auto Q = fusor::host_view(q.data(), B, H, S, D), K = fusor::host_view(k.data(), B, H, S, D),
               V = fusor::host_view(v.data(), B, H, S, D);
    const auto M = fusor::host_view(causal_mask.data(), S, S);
    const auto Of = fusor::host_view(o_fused.data(), B, H, S, D), Ou = fusor::host_view(o_unfused.data(), B, H, S, D);

    for (const bool causal : {false, true}) {
      fusor::attention_params p{};
      p.causal = causal;
      const auto sdpa = fusor::scaled_dot_product_attention(Q, K, V, p);
      static_assert(fusor::kernel_count<decltype(sdpa)> == 1);
      const auto hand = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * scale, -1), V);
      const auto hand_causal =
          fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * scale + M, -1), V);
      static_assert(fusor::unfused_kernel_count<decltype(hand)> == 4);
      static_assert(fusor::unfused_kernel_count<decltype(hand_causal)> == 5);
      const auto fused_ex = fusor::host();
      const auto unfused_ex = fusor::unfused();
      std::vector<variant> vs{
          {"fused", [&] { return fusor::run(Of, sdpa, fused_ex).kernels; }},
          {"unfused",
           [&] { return causal ? fusor::run(Ou, hand_causal, unfused_ex).kernels : fusor::run(Ou, hand, unfused_ex).kernels; }},
      };
      const std::string name = std::string("attention_s") + std::to_string(S) + (causal ? "_causal" : "");

      // Warmup + check.
      for (auto& var : vs) var.kernels = var.run();
      const double u = 0x1p-24;
      const double delta = double(scale) * double(D + 2) * u * double(D) + 4 * u * (double(D) * scale + 1);
      const double tol = 2 * (std::expm1(2 * delta) + (2.0 * double(S) + 4.0 * double((S + 31) / 32) + 10) * u);
      double max_diff = 0;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double d = std::abs(double(o_fused[i]) - double(o_unfused[i]));
        if (!(d <= tol)) ++bad;
        if (!(d <= max_diff)) max_diff = d;
      }
      const bool pass = bad == 0 && vs[0].kernels == 1 && vs[1].kernels == (causal ? 5u : 4u);
      ok = ok && pass;
      std::cout << json{{"name", name},       {"check", "fused_vs_unfused"}, {"elements", n},
                        {"max_abs_diff", max_diff}, {"tolerance", tol},     {"failures", bad},
                        {"kernels_fused", vs[0].kernels}, {"kernels_unfused", vs[1].kernels}, {"pass", pass}}
                       .dump()
                << std::endl;
      if (!pass) continue;

      const json load_before = load_average();
      fusor_bench::time_interleaved(vs, repeats, /*warmup=*/false);  // the check run was the warmup
      const json load_after = load_average();
      const double flops = 4.0 * double(B * H) * double(S) * double(S) * double(D) * (causal ? 0.5 : 1.0);
      const double bytes[2] = {fused_bytes(B, H, S, D, causal), unfused_bytes(B, H, S, D, causal)};
      for (int i = 0; i < 2; ++i) {
        std::cout << json{{"name", name},
                          {"variant", vs[std::size_t(i)].name},
                          {"backend", "host"},
                          {"batch", B},
                          {"heads", H},
                          {"seq", S},
                          {"head_dim", D},
                          {"causal", causal},
                          {"kernels", vs[std::size_t(i)].kernels},
                          {"flops", flops},
                          {"bytes_model", bytes[i]},
                          {"seconds", vs[std::size_t(i)].best},
                          {"gflop_per_s", flops / vs[std::size_t(i)].best / 1e9},
                          {"gb_per_s", bytes[i] / vs[std::size_t(i)].best / 1e9},
                          {"threads", threads},
                          {"repeats", repeats}}
                         .dump()
                  << std::endl;
      }
      std::cout << json{{"name", name},
                        {"summary", true},
                        {"backend", "host"},
                        {"seconds_fused", vs[0].best},
                        {"seconds_unfused", vs[1].best},
                        {"gflop_per_s_fused", flops / vs[0].best / 1e9},
                        {"gflop_per_s_unfused", flops / vs[1].best / 1e9},
                        {"speedup_fused_vs_unfused", vs[1].best / vs[0].best},
                        {"score_matrix_bytes", 4.0 * double(B * H) * double(S) * double(S)},
                        {"threads", threads},
                        {"loadavg_1min_before", load_before},
                        {"loadavg_1min_after", load_after}}
                       .dump()
                << std::endl;
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << json{{"name", "attention"}, {"total_seconds", total}, {"pass", ok}}.dump() << std::endl;
  if (!ok) {
    std::cerr << "bench_attention: fused and unfused results disagree\n";
    return 1;
  }
  return 0;
}
