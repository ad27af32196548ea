/// @file bench/gpu_attention.cu
/// CUDA benchmark of fusor's flash attention (kernels/attention.hpp) on f16
/// q, k, v (bhsd, f16 output): the forward pass at head_dim 64 and 128,
/// sequence lengths 512 .. 8192 (Sq = Sk), causal and not, with H = 16 heads
/// and the batch B = 8192 / S (16 x 16 heads of 512 tokens, ..., 1 x 16 of
/// 8192: 2048 blocks of 64 query rows per launch, enough to fill the GPU).
/// That sweep runs after LLM-like cases (so a spent --budget-s drops the
/// sweep's end): a Llama-2-7B prefill (1 x 32 heads of 128, 4096 tokens,
/// causal) in bf16 and f16, and bf16 decode (32 heads, one query row against
/// 4096 keys x 16 sequences or 16384 keys x 4: memory-bound, so the lines
/// also carry bytes (q, k, v, out once) and gb_per_s). Each line has a
/// `case` id; --only selects cases, --budget-s stops starting new ones. As
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
/// 65, Sq/2, Sq-2, Sq-1, those below Sq) the outputs are compared with a float64 evaluation from
/// the 16-bit inputs, per element |out - ref| <= 2 x (the first-order bound of
/// tests/cuda/test_cuda_*.cu: 2 E_d for the fp32 arithmetic, + u16 pv_d for the
/// fused kernel's 16-bit P, + u16 |o_d| + 2^-24 for the 16-bit output;
/// u16 = 2^-11 for f16, 2^-8 for bf16,
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
/// Usage: bench_gpu_attention [--repeats R] [--quick] [--unfused-max-gib G] [--only LIST] [--budget-s S]
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
using fusor_bench::case_selection;
using fusor_bench::dtype_name;
using fusor_bench::random_16;
using fusor_bench::to_float;


[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R] [--quick] [--unfused-max-gib G] [--only LIST] [--budget-s S]\n"
               "  --repeats R          timed batches of 4 back-to-back runs per variant, after one warmup;\n"
               "                       the minimum per run is reported (default 10)\n"
               "  --quick              sequence lengths 512 and 1024 only\n"
               "  --unfused-max-gib G  skip the unfused variant when one fp32 [B, H, S, S] score matrix\n"
               "                       exceeds G GiB (default 2)\n"
               "%s"
               "case ids: attention/{f16,bf16}/{square,llm,decode}/bB_hH_dD_sS[_causal] (or _qSq_kvSk)\n",
               argv0, case_selection::usage);
  std::exit(status);
}

struct context {
  cudaStream_t stream;
  int repeats;
  double peak;
  std::string device;
  double unfused_max_bytes;
  case_selection sel;
};

/// Sampled rows against a float64 evaluation (see the file comment); Sq
/// query rows, Sk keys.
struct row_check {
  double max_abs_diff = 0, worst_ratio = 0;
  std::size_t bad = 0, checked = 0;
};
template <class T>
row_check check_rows(const std::vector<T>& out, const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
                     index_t B, index_t H, index_t Sq, index_t Sk, index_t D, bool causal, bool p_rounded) {
  const double u = 0x1p-24, scale = 1.0 / std::sqrt(double(D));
  // the 16-bit unit roundoff: f16 2^-11, bf16 2^-8
  const double u16 = std::is_same_v<T, __half> ? 0x1p-11 : 0x1p-8;
  const index_t tiles = (Sk + 31) / 32;
  const std::pair<index_t, index_t> heads[] = {{0, 0}, {B - 1, H - 1}};
  std::vector<index_t> rows;
  for (const index_t i : {index_t(0), index_t(1), index_t(63), index_t(64), index_t(65), Sq / 2, Sq - 2, Sq - 1})
    if (i >= 0 && i < Sq && std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
  row_check rc;
  std::vector<double> s(static_cast<std::size_t>(Sk)), sabs(static_cast<std::size_t>(Sk));
  const auto qat = [&](index_t b, index_t h, index_t i, index_t d) { return std::size_t(((b * H + h) * Sq + i) * D + d); };
  const auto kat = [&](index_t b, index_t h, index_t j, index_t d) { return std::size_t(((b * H + h) * Sk + j) * D + d); };
  for (const auto& [b, h] : heads)
    for (const index_t i : rows) {
      const index_t keys = causal ? i + 1 : Sk;
      double m = -INFINITY;
      for (index_t j = 0; j < keys; ++j) {
        double dot = 0, dabs = 0;
        for (index_t d = 0; d < D; ++d) {
          const double x = double(to_float(q[qat(b, h, i, d)])) * double(to_float(k[kat(b, h, j, d)]));
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
          const double p = std::exp(s[std::size_t(j)] - m) / l, x = to_float(v[kat(b, h, j, d)]);
          o += p * x;
          pv += p * std::fabs(x);
        }
        const double e32 = 2 * eps * pv + (2 * double(Sk) + 4 * double(tiles) + 8) * u * pv + 2 * u * std::fabs(o);
        const double tol = 2 * (2 * e32 + (p_rounded ? u16 * pv : 0.0) + u16 * std::fabs(o) + 0x1p-24);
        const double got = to_float(out[qat(b, h, i, d)]);
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

/// One variant's JSON line. `bytes`: q, k, v read and the output written
/// once (the attention's compulsory traffic), for the memory-bound decode cases.
void record(const context& cx, const std::string& name, const std::string& id, const char* variant, const char* precision,
            const json& shape, double flops, double bytes, double seconds, std::size_t kernels) {
  std::cout << json{{"name", name},
                    {"case", id},
                    {"variant", variant},
                    {"backend", "cuda"},
                    {"dtype", std::string(precision) + " in, f32 accumulate, " + precision + " out"},
                    {"precision", precision},
                    {"shape", shape},
                    {"flops", flops},
                    {"bytes", bytes},
                    {"seconds", seconds},
                    {"tflop_per_s", flops / seconds / 1e12},
                    {"gb_per_s", bytes / seconds / 1e9},
                    {"peak_fraction", cx.peak > 0 ? json(flops / seconds / cx.peak) : json(nullptr)},
                    {"kernels", kernels},
                    {"device", cx.device},
                    {"repeats", cx.repeats},
                    {"runs_per_timed_batch", batch}}
                   .dump()
            << std::endl;
}

/// One attention case: B batches, H heads, Sq query rows, Sk keys, head
/// dim D, 16-bit T (__half or __nv_bfloat16). `suite`: square (the original
/// sweep), llm (a Llama-like prefill) or decode (Sq = 1 against a KV cache).
template <class T>
bool bench_case(const context& cx, const char* suite, index_t B, index_t H, index_t Sq, index_t Sk, index_t D, bool causal) {
  const std::string tail = "d" + std::to_string(D) + (Sq == Sk ? "_s" + std::to_string(Sq) : "_q" + std::to_string(Sq) + "_kv" + std::to_string(Sk)) +
                           (causal ? "_causal" : "");
  const std::string name = std::string(suite) == "square" ? "attention_" + tail : std::string("attention_") + suite + "_" + tail;
  const std::string id = std::string("attention/") + dtype_name<T>() + "/" + suite + "/b" + std::to_string(B) + "_h" +
                         std::to_string(H) + "_" + tail;
  if (!cx.sel.selected(id)) return true;
  if (cx.sel.over_budget()) {
    std::cout << cx.sel.not_run(name, id).dump() << std::endl;
    return true;
  }
  const json shape{{"batch", B},   {"heads", H},       {"seq", Sq == Sk ? Sq : Sk}, {"seq_q", Sq},
                   {"seq_k", Sk},  {"head_dim", D},    {"causal", causal},          {"layout", "bhsd"}};
  const char* precision = dtype_name<T>();
  const std::size_t nq = std::size_t(B * H * Sq * D), nk = std::size_t(B * H * Sk * D);
  const auto hq = random_16<T>(nq, 1, -1.0f, 1.0f), hk = random_16<T>(nk, 2, -1.0f, 1.0f), hv = random_16<T>(nk, 3, -1.0f, 1.0f);
  device_buffer<T> q(nq), k(nk), v(nk), o_fused(nq), o_unfused(nq);
  q.upload(hq);
  k.upload(hk);
  v.upload(hv);
  const auto Q = fusor::device_view(static_cast<const T*>(q.p), B, H, Sq, D);
  const auto K = fusor::device_view(static_cast<const T*>(k.p), B, H, Sk, D);
  const auto V = fusor::device_view(static_cast<const T*>(v.p), B, H, Sk, D);
  const auto Of = fusor::device_view(o_fused.p, B, H, Sq, D), Ou = fusor::device_view(o_unfused.p, B, H, Sq, D);
  fusor::attention_params params{};
  params.causal = causal;
  const auto sdpa = fusor::scaled_dot_product_attention(Q, K, V, params);
  static_assert(fusor::kernel_count<decltype(sdpa)> == 1);
  const auto fused_ex = fusor::cuda(cx.stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(cx.stream));
  const double flops = 4.0 * double(B * H) * double(Sq) * double(Sk) * double(D) * (causal ? 0.5 : 1.0);
  const double bytes = double(sizeof(T)) * double(2 * nq + 2 * nk);
  const double score_bytes = 4.0 * double(B * H) * double(Sq) * double(Sk);  // one fp32 [B, H, Sq, Sk] temporary
  const bool run_unfused = score_bytes <= cx.unfused_max_bytes;

  // The hand-written form; the causal one adds an [S, S] 16-bit mask (0 / -inf).
  const float scale = float(1.0 / std::sqrt(double(D)));
  std::unique_ptr<device_buffer<T>> mask;
  if (causal && run_unfused) {
    std::vector<T> hm(std::size_t(Sq * Sk));
    for (index_t i = 0; i < Sq; ++i)
      for (index_t j = 0; j < Sk; ++j) hm[std::size_t(i * Sk + j)] = fusor_bench::from_float<T>(j > i ? -INFINITY : 0.0f);
    mask = std::make_unique<device_buffer<T>>(hm.size());
    mask->upload(hm);
  }
  const auto M = fusor::device_view(static_cast<const T*>(mask ? mask->p : q.p), Sq, Sk);
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
  const row_check cf = check_rows(o_fused.download(), hq, hk, hv, B, H, Sq, Sk, D, causal, true);
  bool pass = cf.bad == 0 && k_fused == 1;
  json chk{{"name", name},
           {"case", id},
           {"check", "sampled_rows_vs_float64"},
           {"precision", precision},
           {"shape", shape},
           {"elements_checked", cf.checked},
           {"max_abs_diff_fused", cf.max_abs_diff},
           {"worst_diff_over_tolerance_fused", cf.worst_ratio},
           {"kernels_fused", k_fused}};
  if (run_unfused) {
    const row_check cu = check_rows(o_unfused.download(), hq, hk, hv, B, H, Sq, Sk, D, causal, false);
    pass = pass && cu.bad == 0 && k_unfused == (causal ? 5u : 4u);
    chk["max_abs_diff_unfused"] = cu.max_abs_diff;
    chk["worst_diff_over_tolerance_unfused"] = cu.worst_ratio;
    chk["kernels_unfused"] = k_unfused;
  }
  chk["pass"] = pass;
  std::cout << chk.dump() << std::endl;
  if (!run_unfused) {
    std::cout << json{{"name", name},
                      {"case", id},
                      {"variant", "unfused"},
                      {"backend", "cuda"},
                      {"shape", shape},
                      {"skipped", "one fp32 [B, H, Sq, Sk] score matrix would take " + std::to_string(score_bytes / double(1 << 30)) +
                                      " GiB (the unfused path materializes several): over --unfused-max-gib " +
                                      std::to_string(cx.unfused_max_bytes / double(1 << 30))}}
                     .dump()
              << std::endl;
  }
  if (!pass) return false;

  const double tf = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(Of, sdpa, fused_ex); });
  record(cx, name, id, "fused", precision, shape, flops, bytes, tf, k_fused);
  json summary{{"name", name},
               {"case", id},
               {"summary", true},
               {"backend", "cuda"},
               {"precision", precision},
               {"formula", causal ? "softmax(q k^T / sqrt(d) + causal) v" : "softmax(q k^T / sqrt(d)) v"},
               {"shape", shape},
               {"seconds_fused", tf},
               {"tflop_per_s_fused", flops / tf / 1e12},
               {"gb_per_s_fused", bytes / tf / 1e9},
               {"peak_fraction_fused", cx.peak > 0 ? json(flops / tf / cx.peak) : json(nullptr)}};
  if (run_unfused) {
    const double tu = best_seconds(cx.stream, cx.repeats, [&] { run_hand(); });
    record(cx, name, id, "unfused", precision, shape, flops, bytes, tu, k_unfused);
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
  (void)fusor_bench::elapsed_s();  // starts the --budget-s clock
  int repeats = 10;
  bool quick = false;
  case_selection sel;
  double unfused_max_gib = 2.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (sel.parse(argc, argv, i)) continue;
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
  const context cx{stream, repeats, peak, prop.name, unfused_max_gib * double(1 << 30), sel};

  const index_t H = 16, tokens = 8192;  // B = tokens / S: 16 x 16 heads at S = 512, 1 x 16 at 8192
  std::vector<index_t> lengths{512, 1024, 2048, 4096, 8192};
  if (quick) lengths = {512, 1024};
  bool ok = true;
  // LLM-like: a Llama-2-7B layer's prefill (32 heads of 128, 4096 tokens,
  // causal) in bf16 and f16; decode: one query row per sequence against a KV
  // cache of 4096 keys (16 sequences) and 16384 keys (4 sequences): 512 MiB
  // of K and of V each, memory-bound (gb_per_s counts q, k, v and the output
  // once), and inputs the host draws in a few seconds. --quick: the first.
  ok = bench_case<__nv_bfloat16>(cx, "decode", 16, 32, 1, 4096, 128, false) && ok;
  if (!quick) {
    ok = bench_case<__nv_bfloat16>(cx, "decode", 4, 32, 1, 16384, 128, false) && ok;
    ok = bench_case<__nv_bfloat16>(cx, "llm", 1, 32, 4096, 4096, 128, true) && ok;
    ok = bench_case<__half>(cx, "llm", 1, 32, 4096, 4096, 128, true) && ok;
  }
  // (after the LLM cases, so that a spent --budget-s drops the sweep's end)
  for (const index_t D : {index_t(64), index_t(128)})
    for (const index_t S : lengths)
      for (const bool causal : {false, true})
        ok = bench_case<__half>(cx, "square", std::max<index_t>(1, tokens / S), H, S, S, D, causal) && ok;
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
