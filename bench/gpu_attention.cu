/// @file bench/gpu_attention.cu
/// CUDA benchmark of fusor's flash attention (kernels/attention.hpp) on f16
/// q, k, v (bhsd, f16 output): the forward pass at head_dim 64 and 128,
/// sequence lengths 512 .. 8192 (Sq = Sk), causal and not, with H = 16 heads
/// and the batch B = 8192 / S (16 x 16 heads of 512 tokens, ..., 1 x 16 of
/// 8192: 2048 blocks of 64 query rows per launch, enough to fill the GPU), as
///   fused    fusor::scaled_dot_product_attention(q, k, v, {.causal}) on
///            fusor::cuda(stream): one flash-attention kernel (tensor cores:
///            S = Q K^T and O += P V by WMMA m16n16k16, fp32 accumulators, P
///            rounded to f16 as FlashAttention-2 does), no [S, S] matrix
///   unfused  the same attention written by hand,
///              matmul(softmax(matmul(q, transpose(k)) * s [+ causal_mask], -1), v),
///            on fusor::unfused(fusor::cuda(stream)): matmul (tensor cores),
///            mul, [add], softmax, matmul, each a kernel; fusor computes
///            contractions of f16 operands in fp32, so the [B, H, S, S]
///            scores and weights are fp32 temporaries (and the second matmul,
///            over fp32 weights, runs on the SIMT path). causal_mask: [S, S]
///            f16, 0 or -inf. Skipped (a JSON line says so) when one fp32
///            score matrix would exceed --unfused-max-gib (default 2 GiB:
///            S = 8192 needs 4 GiB per temporary and several of them live at
///            once), where the unfused path would not fit comfortably / take
///            too long.
///
/// FLOPs: 4 B H Sq Sk D (q k^T and p v, 2 per multiply-add), halved when
/// causal (the useful work, the same nominal count for both variants, so
/// tflop_per_s compares time to solution; softmax and masking not counted).
/// peak_fraction is against the dense FP16 tensor-core peak with FP32
/// accumulate of the datasheets (the constants of bench/gpu_contraction.cu):
/// H100 SXM5 and H200 SXM 989.4 TFLOP/s (1979 is with sparsity), H100 PCIe
/// 756.5, H100 NVL 835.5; on another sm_90 part SMs x boost clock x 4096
/// FLOP/clock/SM; null otherwise.
///
/// Check before timing (a failure exits 1 and skips that case's timings):
/// for sampled query rows (heads (0, 0) and (B-1, H-1); rows 0, 1, 63, 64,
/// 65, S/2, S-2, S-1) the outputs are compared with a float64 evaluation from
/// the f16 inputs, per element |out - ref| <= 2 x (the first-order bound of
/// tests/cuda/test_cuda.cu: 2 E_d for the fp32 arithmetic, + u16 pv_d for the
/// fused kernel's f16 P, + u16 |o_d| + 2^-24 for the f16 output; u16 = 2^-11,
/// pv_d = sum_j p_j |v_jd|), and the kernel counts (fused 1, unfused 4 or 5).
///
/// Timing (as bench_gpu_contraction): cudaEvents around batches of 4
/// back-to-back runs on one stream, one warmup, --repeats batches, the
/// minimum per run. Without a CUDA device it prints a "skipped" line and
/// exits 77.
///
/// Output: JSON lines; per case a check line, one line per variant and a
/// summary (speedup), or for a skipped unfused variant a line with "skipped".
///
/// Usage: bench_gpu_attention [--repeats R] [--quick] [--unfused-max-gib G]
#include "gpu_common.cuh"

#include <fusor/fusor.hpp>
#include <nlohmann/json.hpp>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using fusor::index_t;
using fusor_bench::batch;
using fusor_bench::best_seconds;
using fusor_bench::check;
using fusor_bench::device_buffer;
using fusor_bench::event_pair;
using fusor_bench::fp16_peak;
using fusor_bench::json;
using fusor_bench::random_half;


[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R] [--quick] [--unfused-max-gib G]\n"
               "  --repeats R          timed batches of 4 back-to-back runs per variant, after one warmup;\n"
               "                       the minimum per run is reported (default 10)\n"
               "  --quick              sequence lengths 512 and 1024 only\n"
               "  --unfused-max-gib G  skip the unfused variant when one fp32 [B, H, S, S] score matrix\n"
               "                       exceeds G GiB (default 2)\n",
               argv0);
  std::exit(status);
}

struct context {
  cudaStream_t stream;
  int repeats;
  double peak;
  std::string device;
  double unfused_max_bytes;
};

/// Sampled rows against a float64 evaluation (see the file comment).
struct row_check {
  double max_abs_diff = 0, worst_ratio = 0;
  std::size_t bad = 0, checked = 0;
};
row_check check_rows(const std::vector<__half>& out, const std::vector<__half>& q, const std::vector<__half>& k,
                     const std::vector<__half>& v, index_t B, index_t H, index_t S, index_t D, bool causal,
                     bool p_rounded) {
  const double u = 0x1p-24, u16 = 0x1p-11, scale = 1.0 / std::sqrt(double(D));
  const index_t tiles = (S + 31) / 32;
  const std::pair<index_t, index_t> heads[] = {{0, 0}, {B - 1, H - 1}};
  const index_t rows[] = {0, 1, 63, 64, 65, S / 2, S - 2, S - 1};
  row_check rc;
  std::vector<double> s(static_cast<std::size_t>(S)), sabs(static_cast<std::size_t>(S));
  const auto at = [&](index_t b, index_t h, index_t i, index_t d) { return std::size_t(((b * H + h) * S + i) * D + d); };
  for (const auto& [b, h] : heads)
    for (const index_t i : rows) {
      const index_t keys = causal ? i + 1 : S;
      double m = -INFINITY;
      for (index_t j = 0; j < keys; ++j) {
        double dot = 0, dabs = 0;
        for (index_t d = 0; d < D; ++d) {
          const double x = __half2float(q[at(b, h, i, d)]) * double(__half2float(k[at(b, h, j, d)]));
          dot += x;
          dabs += std::fabs(x);
        }
        s[std::size_t(j)] = dot * scale;
        sabs[std::size_t(j)] = dabs * scale;
        m = std::max(m, s[std::size_t(j)]);
      }
      double l = 0, eps = 0;
      for (index_t j = 0; j < keys; ++j) {
        l += std::exp(s[std::size_t(j)] - m);
        eps = std::max(eps, double(D + 2) * u * sabs[std::size_t(j)] +
                                u * (3 * std::fabs(s[std::size_t(j)]) + std::fabs(s[std::size_t(j)] - m)) + 4 * u);
      }
      for (index_t d = 0; d < D; ++d) {
        double o = 0, pv = 0;
        for (index_t j = 0; j < keys; ++j) {
          const double p = std::exp(s[std::size_t(j)] - m) / l, x = __half2float(v[at(b, h, j, d)]);
          o += p * x;
          pv += p * std::fabs(x);
        }
        const double e32 = 2 * eps * pv + (2 * double(S) + 4 * double(tiles) + 8) * u * pv + 2 * u * std::fabs(o);
        const double tol = 2 * (2 * e32 + (p_rounded ? u16 * pv : 0.0) + u16 * std::fabs(o) + 0x1p-24);
        const double got = __half2float(out[at(b, h, i, d)]);
        const double err = std::fabs(got - o);
        ++rc.checked;
        if (!(err <= tol)) ++rc.bad;
        if (std::isfinite(err)) {
          rc.max_abs_diff = std::max(rc.max_abs_diff, err);
          rc.worst_ratio = std::max(rc.worst_ratio, err / tol);
        }
      }
    }
  return rc;
}

/// One variant's JSON line.
void record(const context& cx, const std::string& name, const char* variant, const json& shape, double flops,
            double seconds, std::size_t kernels) {
  std::cout << json{{"name", name},
                    {"variant", variant},
                    {"backend", "cuda"},
                    {"dtype", "f16 in, f32 accumulate, f16 out"},
                    {"shape", shape},
                    {"flops", flops},
                    {"seconds", seconds},
                    {"tflop_per_s", flops / seconds / 1e12},
                    {"peak_fraction", cx.peak > 0 ? json(flops / seconds / cx.peak) : json(nullptr)},
                    {"kernels", kernels},
                    {"device", cx.device},
                    {"repeats", cx.repeats},
                    {"runs_per_timed_batch", batch}}
                   .dump()
            << std::endl;
}

bool bench_case(const context& cx, index_t B, index_t H, index_t S, index_t D, bool causal) {
  const std::string name = "attention_d" + std::to_string(D) + "_s" + std::to_string(S) + (causal ? "_causal" : "");
  const json shape{{"batch", B}, {"heads", H}, {"seq", S}, {"head_dim", D}, {"causal", causal}, {"layout", "bhsd"}};
  const std::size_t n = std::size_t(B * H * S * D);
  const auto hq = random_half(n, 1, -1.0f, 1.0f), hk = random_half(n, 2, -1.0f, 1.0f), hv = random_half(n, 3, -1.0f, 1.0f);
  device_buffer<__half> q(n), k(n), v(n), o_fused(n), o_unfused(n);
  q.upload(hq);
  k.upload(hk);
  v.upload(hv);
  const auto Q = fusor::device_view(static_cast<const __half*>(q.p), B, H, S, D);
  const auto K = fusor::device_view(static_cast<const __half*>(k.p), B, H, S, D);
  const auto V = fusor::device_view(static_cast<const __half*>(v.p), B, H, S, D);
  const auto Of = fusor::device_view(o_fused.p, B, H, S, D), Ou = fusor::device_view(o_unfused.p, B, H, S, D);
  fusor::attention_params params{};
  params.causal = causal;
  const auto sdpa = fusor::scaled_dot_product_attention(Q, K, V, params);
  static_assert(fusor::kernel_count<decltype(sdpa)> == 1);
  const auto fused_ex = fusor::cuda(cx.stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(cx.stream));
  const double flops = 4.0 * double(B * H) * double(S) * double(S) * double(D) * (causal ? 0.5 : 1.0);
  const double score_bytes = 4.0 * double(B * H) * double(S) * double(S);  // one fp32 [B, H, S, S] temporary
  const bool run_unfused = score_bytes <= cx.unfused_max_bytes;

  // The hand-written form; the causal one adds an [S, S] f16 mask (0 / -inf).
  const float scale = float(1.0 / std::sqrt(double(D)));
  std::unique_ptr<device_buffer<__half>> mask;
  if (causal && run_unfused) {
    std::vector<__half> hm(std::size_t(S * S));
    for (index_t i = 0; i < S; ++i)
      for (index_t j = 0; j < S; ++j) hm[std::size_t(i * S + j)] = __float2half_rn(j > i ? -INFINITY : 0.0f);
    mask = std::make_unique<device_buffer<__half>>(hm.size());
    mask->upload(hm);
  }
  const auto M = fusor::device_view(static_cast<const __half*>(mask ? mask->p : q.p), S, S);
  const auto hand = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * scale, -1), V);
  const auto hand_causal = fusor::matmul(fusor::softmax(fusor::matmul(Q, fusor::transpose(K)) * scale + M, -1), V);
  static_assert(fusor::unfused_kernel_count<decltype(hand)> == 4);
  static_assert(fusor::unfused_kernel_count<decltype(hand_causal)> == 5);
  const auto run_hand = [&] {
    return causal ? fusor::run(Ou, hand_causal, unfused_ex).kernels : fusor::run(Ou, hand, unfused_ex).kernels;
  };

  // --- checks --------------------------------------------------------------
  const std::size_t k_fused = fusor::run(Of, sdpa, fused_ex).kernels;
  std::size_t k_unfused = 0;
  if (run_unfused) k_unfused = run_hand();
  check(cudaStreamSynchronize(cx.stream), "first runs");
  const row_check cf = check_rows(o_fused.download(), hq, hk, hv, B, H, S, D, causal, true);
  bool pass = cf.bad == 0 && k_fused == 1;
  json chk{{"name", name},
           {"check", "sampled_rows_vs_float64"},
           {"shape", shape},
           {"elements_checked", cf.checked},
           {"max_abs_diff_fused", cf.max_abs_diff},
           {"worst_diff_over_tolerance_fused", cf.worst_ratio},
           {"kernels_fused", k_fused}};
  if (run_unfused) {
    const row_check cu = check_rows(o_unfused.download(), hq, hk, hv, B, H, S, D, causal, false);
    pass = pass && cu.bad == 0 && k_unfused == (causal ? 5u : 4u);
    chk["max_abs_diff_unfused"] = cu.max_abs_diff;
    chk["worst_diff_over_tolerance_unfused"] = cu.worst_ratio;
    chk["kernels_unfused"] = k_unfused;
  }
  chk["pass"] = pass;
  std::cout << chk.dump() << std::endl;
  if (!run_unfused) {
    std::cout << json{{"name", name},
                      {"variant", "unfused"},
                      {"backend", "cuda"},
                      {"shape", shape},
                      {"skipped", "one fp32 [B, H, S, S] score matrix would take " + std::to_string(score_bytes / double(1 << 30)) +
                                      " GiB (the unfused path materializes several): over --unfused-max-gib " +
                                      std::to_string(cx.unfused_max_bytes / double(1 << 30))}}
                     .dump()
              << std::endl;
  }
  if (!pass) return false;

  const double tf = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(Of, sdpa, fused_ex); });
  record(cx, name, "fused", shape, flops, tf, k_fused);
  json summary{{"name", name},
               {"summary", true},
               {"backend", "cuda"},
               {"formula", causal ? "softmax(q k^T / sqrt(d) + causal) v" : "softmax(q k^T / sqrt(d)) v"},
               {"shape", shape},
               {"seconds_fused", tf},
               {"tflop_per_s_fused", flops / tf / 1e12},
               {"peak_fraction_fused", cx.peak > 0 ? json(flops / tf / cx.peak) : json(nullptr)}};
  if (run_unfused) {
    const double tu = best_seconds(cx.stream, cx.repeats, [&] { run_hand(); });
    record(cx, name, "unfused", shape, flops, tu, k_unfused);
    summary["seconds_unfused"] = tu;
    summary["tflop_per_s_unfused"] = flops / tu / 1e12;
    summary["speedup_fused_vs_unfused"] = tu / tf;
  } else {
    summary["seconds_unfused"] = nullptr;
    summary["unfused_skipped"] = true;
  }
  summary["score_matrix_bytes_fp32"] = score_bytes;
  summary["device"] = cx.device;
  std::cout << summary.dump() << std::endl;
  return true;
}

}  // namespace

int main(int argc, char** argv) try {
  int repeats = 10;
  bool quick = false;
  double unfused_max_gib = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--repeats" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 0);
      if (end == argv[i] || *end != '\0' || v <= 0) usage(argv[0], 2);
      repeats = int(std::min<long>(v, 100000));
    } else if (arg == "--unfused-max-gib" && i + 1 < argc) {
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(v >= 0)) usage(argv[0], 2);
      unfused_max_gib = v;
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  if (fusor_bench::skip_without_device("attention")) return fusor_bench::exit_skipped;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const auto [peak, peak_source] = fp16_peak(device, prop);
  std::cout << json{{"name", "fp16_tensor_core_peak"},
                    {"backend", "cuda"},
                    {"device", prop.name},
                    {"sm_count", prop.multiProcessorCount},
                    {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                    {"peak_tflop_per_s", peak > 0 ? json(peak / 1e12) : json(nullptr)},
                    {"peak_source", peak_source}}
                   .dump()
            << std::endl;

  // The unfused executor allocates its temporaries with cudaMallocAsync: keep
  // the pool's memory between runs, so the timings do not include cudaMalloc.
  fusor_bench::keep_pool_memory(device);  // the unfused executor's cudaMallocAsync temporaries
  cudaStream_t stream{};
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const context cx{stream, repeats, peak, prop.name, unfused_max_gib * double(1 << 30)};

  const index_t H = 16, tokens = 8192;  // B = tokens / S: 16 x 16 heads at S = 512, 1 x 16 at 8192
  std::vector<index_t> lengths{512, 1024, 2048, 4096, 8192};
  if (quick) lengths = {512, 1024};
  bool ok = true;
  for (const index_t D : {index_t(64), index_t(128)})
    for (const index_t S : lengths)
      for (const bool causal : {false, true}) ok = bench_case(cx, std::max<index_t>(1, tokens / S), H, S, D, causal) && ok;
  cudaStreamDestroy(stream);
  if (!ok) {
    std::cerr << "bench_gpu_attention: results out of tolerance, some timings not reported\n";
    return 1;
  }
  return 0;
} catch (const std::exception& ex) {
  std::cerr << "bench_gpu_attention: " << ex.what() << "\n";
  return 1;
}
