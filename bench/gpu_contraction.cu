/// @file bench/gpu_contraction.cu
/// CUDA benchmark of fused contractions (kernels/contraction.hpp) against
/// NVIDIA's libraries, 16-bit operands (f16, and bf16 for linear) with fp32
/// accumulation (fusor's tensor-core tile path: WMMA m16n16k16), 16-bit results:
///
///   linear_bias_gelu  y = gelu_tanh(x W^T + b), tokens x in -> out: BERT
///                     (128 x 768 -> 3072, 4096 x 768 -> 3072 (BERT-base,
///                     batch 32 x 128), 4096 x 1024 -> 4096 (BERT-large)), an
///                     LLM MLP (Llama-2-7B up-projection 4096 -> 11008 at 4096
///                     tokens) and decode (1 and 16 tokens, the same weight);
///                     f16, and bf16 for BERT-base, LLM and decode; as
///       fused     fusor::run(..., fusor::cuda(stream))            1 kernel
///       unfused   fusor::run(..., fusor::unfused(cuda(stream)))   linear (its
///                 own bias epilogue), then gelu: 2 kernels, fp32 temporary
///       cublaslt  cublasLtMatmul with CUBLASLT_EPILOGUE_GELU_BIAS (16-bit A/B/D
///                 and bias, CUBLAS_COMPUTE_32F, the first heuristic algorithm,
///                 32 MiB workspace). cuBLASLt's GELU is the tanh form, so fusor
///                 runs gelu_tanh here.
///       cublaslt_then_gelu  cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS, then a
///                 separate GELU kernel (16 B per thread, in place): the
///                 unfused library baseline, 2 kernels.
///   conv_bias_relu    y = relu(conv2d(x, w, b)), 3x3, pad 1, 64 -> 64 channels,
///                     56 x 56 (ResNet conv2_x), batch 1 and 32, as
///       fused_nhwc / fused_nchw  fusor, activations NHWC / NCHW (OIHW weights)
///       unfused_nhwc             conv (+ bias), then relu: 2 kernels
///       cudnn_nhwc               cudnnConvolutionBiasActivationForward (NHWC
///                 x/y, KRSC filter, CUDNN_TENSOR_OP_MATH, fp32 compute, the
///                 first algorithm of cudnnGetConvolutionForwardAlgorithm_v7
///                 that runs); only when CMake found cuDNN
///                 (FUSOR_BENCH_HAS_CUDNN), otherwise a JSON note line.
///
/// FLOPs: 2 M N K (linear), 2 N Ho Wo Cout C kh kw (conv); epilogues are not
/// counted. peak_fraction is against the dense FP16 tensor-core peak with
/// FP32 accumulate of the datasheets: H100 SXM5 and H200 SXM 989.4 TFLOP/s
/// (NVIDIA H100 / H200 Tensor Core GPU datasheets; 1979 is with sparsity),
/// H100 PCIe 756.5, H100 NVL 835.5; on another sm_90 part SMs x boost clock x
/// 4096 FLOP/clock/SM (Hopper: 1024 dense FP16 FMA per SM per clock); null
/// otherwise.
///
/// Timing (as bench_gpu_elementwise): cudaEvents around batches of 4
/// back-to-back runs on one stream, one warmup, --repeats batches, the
/// minimum per run. Checks before timing (fused vs unfused and vs the library,
/// normwise |a - b| <= tol * max|b|, tol 4 ulps of f16 / bf16); a failure
/// exits 1. A cuDNN that cannot run is reported in the check line
/// (cudnn_error), not a failure.
/// Without a CUDA device it prints a "skipped" line and exits 77.
///
/// Every line carries a `case` id (linear_bias_gelu/bf16/llm/4096x4096x11008,
/// conv_bias_relu/f16/32x64x56x56); --only selects cases by substring (for
/// ncu), --budget-s stops starting cases after S seconds (not_run lines).
///
/// Usage: bench_gpu_contraction [--repeats R] [--only LIST] [--budget-s S]
#include "gpu_common.cuh"

#include <fusor/fusor.hpp>
#include <nlohmann/json.hpp>

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if FUSOR_BENCH_HAS_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
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
using fusor_bench::random_half;
using fusor_bench::to_float;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}
#if FUSOR_BENCH_HAS_CUDNN
void check_dnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(s));
}
#endif

/// max |a - b| and max |b| over two 16-bit results (b: the reference).
template <class T>
std::pair<double, double> normwise(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = to_float(a[i]), y = to_float(b[i]);
    diff = std::isfinite(x) && std::isfinite(y) ? std::max(diff, std::fabs(x - y)) : std::numeric_limits<double>::infinity();
    scale = std::max(scale, std::fabs(y));
  }
  return {diff, scale};
}

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R] [--only LIST] [--budget-s S]\n"
               "  --repeats R   timed batches of 4 back-to-back runs per variant, after one warmup;\n"
               "                the minimum per run is reported (default 20)\n"
               "%s"
               "case ids: linear_bias_gelu/{f16,bf16}/{bert,llm,decode}/MxKxN, conv_bias_relu/f16/NxCxHxW\n",
               argv0, case_selection::usage);
  std::exit(status);
}

struct context {
  cudaStream_t stream;
  int repeats;
  double peak;
  std::string device;
  case_selection sel;
};

/// One variant's JSON line; returns the TFLOP/s.
double record(const context& cx, const char* name, const std::string& id, const char* variant, const std::string& dtype,
              const json& shape, double flops, double seconds, json kernels) {
  const double tflops = flops / seconds / 1e12;
  std::cout << json{{"name", name},
                    {"case", id},
                    {"variant", variant},
                    {"backend", "cuda"},
                    {"dtype", dtype},
                    {"precision", dtype.substr(0, dtype.find(' '))},
                    {"shape", shape},
                    {"flops", flops},
                    {"seconds", seconds},
                    {"tflop_per_s", tflops},
                    {"peak_fraction", cx.peak > 0 ? json(flops / seconds / cx.peak) : json(nullptr)},
                    {"kernels", kernels},
                    {"device", cx.device},
                    {"repeats", cx.repeats},
                    {"runs_per_timed_batch", batch}}
                   .dump()
            << std::endl;
  return tflops;
}

// ------------------------------------------------------------- linear + GELU
/// The separate epilogue of the "cuBLASLt GEMM, then GELU" baseline:
/// y = gelu_tanh(y) in place, the formula of cuBLASLt's GELU epilogue and of
/// fusor's gelu_tanh, in fp32, rounded once. A fair memory-bound kernel: 8
/// values (16 B) per thread per step, grid-stride.
template <class T>
__global__ void gelu_tanh_inplace(T* y, std::size_t n) {
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x;
  const auto gelu = [](float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))); };
  for (std::size_t v = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; v < n / 8; v += step) {
    uint4 raw = reinterpret_cast<const uint4*>(y)[v];
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = T(gelu(float(e[j])));
    reinterpret_cast<uint4*>(y)[v] = raw;
  }
  // the tail (n % 8 elements), by the first threads
  const std::size_t tail = n / 8 * 8 + std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n) y[tail] = T(gelu(float(y[tail])));
}

/// The cuBLASLt matmul of bench_linear: Y = X W^T (+ epilogue) in the
/// column-major view Y^T (N x M, ld N) = Wc^T (Wc = W^T: K x N, ld K) * Xc
/// (X^T: K x M, ld K); `epi` with the bias pointer `bias`.
struct lt_matmul {
  cublasLtHandle_t lt{};
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  cublasLtMatmulPreference_t pref{};
  cublasLtMatmulHeuristicResult_t heur{};
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  lt_matmul(cublasLtHandle_t handle, cudaDataType_t type, cublasLtEpilogue_t epi, const void* bias, index_t M, index_t K,
            index_t N, void* ws, std::size_t ws_bytes)
      : lt(handle), workspace(ws), workspace_bytes(ws_bytes) {
    check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "EPILOGUE");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "BIAS_POINTER");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type), "BIAS_DATA_TYPE");
    check_lt(cublasLtMatrixLayoutCreate(&la, type, std::uint64_t(K), std::uint64_t(N), std::int64_t(K)), "layout A");
    check_lt(cublasLtMatrixLayoutCreate(&lb, type, std::uint64_t(K), std::uint64_t(M), std::int64_t(K)), "layout B");
    check_lt(cublasLtMatrixLayoutCreate(&lc, type, std::uint64_t(N), std::uint64_t(M), std::int64_t(N)), "layout C");
    check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const std::uint64_t wsb = ws_bytes;
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb),
             "MAX_WORKSPACE_BYTES");
    int found = 0;
    check_lt(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found), "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm for this epilogue and dtype");
  }
  ~lt_matmul() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }
  lt_matmul(const lt_matmul&) = delete;
  lt_matmul& operator=(const lt_matmul&) = delete;
  void operator()(const void* w, const void* x, void* y, cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    check_lt(cublasLtMatmul(lt, op, &alpha, w, la, x, lb, &beta, y, lc, y, lc, &heur.algo, workspace, workspace_bytes, stream),
             "cublasLtMatmul");
  }
};

/// y = gelu_tanh(x W^T + b), T = __half or __nv_bfloat16, as fused, unfused,
/// cuBLASLt with its GELU_BIAS epilogue (`cublaslt`) and cuBLASLt with its
/// BIAS epilogue followed by a separate GELU kernel (`cublaslt_then_gelu`:
/// what a library without a GELU epilogue, or a framework's eager mode,
/// runs). `suite` names the shape family (bert, llm, decode) in the case id.
template <class T>
bool bench_linear(const context& cx, cublasLtHandle_t lt, void* workspace, std::size_t workspace_bytes, const char* suite,
                  index_t M, index_t K, index_t N) {
  const std::string id = std::string("linear_bias_gelu/") + dtype_name<T>() + "/" + suite + "/" + std::to_string(M) + "x" +
                         std::to_string(K) + "x" + std::to_string(N);
  if (!cx.sel.selected(id)) return true;
  if (cx.sel.over_budget()) {
    std::cout << cx.sel.not_run("linear_bias_gelu", id).dump() << std::endl;
    return true;
  }
  const json shape{{"tokens", M}, {"in", K}, {"out", N}};
  const std::string dtype = std::string(dtype_name<T>()) + " in, f32 accumulate, " + dtype_name<T>() + " out";
  const auto hx = random_16<T>(std::size_t(M * K), 1, -1.0f, 1.0f);
  const auto hw = random_16<T>(std::size_t(N * K), 2, -0.05f, 0.05f);
  const auto hb = random_16<T>(std::size_t(N), 3, -0.5f, 0.5f);
  device_buffer<T> x(hx.size()), w(hw.size()), b(hb.size()), y_fused(std::size_t(M * N)), y_unfused(y_fused.n),
      y_lt(y_fused.n), y_sep(y_fused.n);
  x.upload(hx);
  w.upload(hw);
  b.upload(hb);
  const auto e = fusor::gelu_tanh(fusor::linear(fusor::device_view(static_cast<const T*>(x.p), M, K),
                                                fusor::device_view(static_cast<const T*>(w.p), N, K),
                                                fusor::device_view(static_cast<const T*>(b.p), N)));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  const auto fused_ex = fusor::cuda(cx.stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(cx.stream));
  const auto out_f = fusor::device_view(y_fused.p, M, N), out_u = fusor::device_view(y_unfused.p, M, N);

  const cudaDataType_t type = std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF;
  const lt_matmul gelu_bias(lt, type, CUBLASLT_EPILOGUE_GELU_BIAS, b.p, M, K, N, workspace, workspace_bytes);
  const lt_matmul bias_only(lt, type, CUBLASLT_EPILOGUE_BIAS, b.p, M, K, N, workspace, workspace_bytes);
  const auto run_lt = [&] { gelu_bias(w.p, x.p, y_lt.p, cx.stream); };
  const std::size_t n_out = std::size_t(M * N);
  const unsigned gelu_blocks = unsigned(std::clamp<std::size_t>((n_out / 8 + 255) / 256, 1, 8192));
  const auto run_sep = [&] {
    bias_only(w.p, x.p, y_sep.p, cx.stream);
    gelu_tanh_inplace<T><<<gelu_blocks, 256, 0, cx.stream>>>(y_sep.p, n_out);
    check(cudaGetLastError(), "gelu_tanh_inplace launch");
  };

  // --- checks --------------------------------------------------------------
  const std::size_t k_fused = fusor::run(out_f, e, fused_ex).kernels;
  const std::size_t k_unfused = fusor::run(out_u, e, unfused_ex).kernels;
  run_lt();
  run_sep();
  check(cudaStreamSynchronize(cx.stream), "first runs");
  const auto f = y_fused.download(), u = y_unfused.download(), l = y_lt.download(), sp = y_sep.download();
  const auto [du, su] = normwise(f, u);
  const auto [dl, sl] = normwise(f, l);
  const auto [ds, ss] = normwise(f, sp);
  // 16-bit results: a few ulps of the largest value (f16: 2^-10 relative
  // each, bf16: 2^-7; the separate GELU rounds the GEMM output once more).
  const double tol = std::is_same_v<T, __half> ? 4.0 / 1024 : 4.0 / 128;
  const bool pass = du <= tol * su && dl <= tol * sl && ds <= tol * ss && k_fused == 1 && k_unfused == 2;
  std::cout << json{{"name", "linear_bias_gelu"},
                    {"case", id},
                    {"check", "fused_vs_unfused_and_cublaslt_normwise"},
                    {"precision", dtype_name<T>()},
                    {"shape", shape},
                    {"max_abs_diff_vs_unfused", du},
                    {"max_abs_diff_vs_cublaslt", dl},
                    {"max_abs_diff_vs_cublaslt_then_gelu", ds},
                    {"max_abs_reference", sl},
                    {"tolerance_normwise", tol},
                    {"kernels_fused", k_fused},
                    {"kernels_unfused", k_unfused},
                    {"pass", pass}}
                   .dump()
            << std::endl;
  if (pass) {
    const double flops = 2.0 * double(M) * double(N) * double(K);
    const double tf = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(out_f, e, fused_ex); });
    const double tu = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(out_u, e, unfused_ex); });
    const double tl = best_seconds(cx.stream, cx.repeats, run_lt);
    const double ts = best_seconds(cx.stream, cx.repeats, run_sep);
    record(cx, "linear_bias_gelu", id, "fused", dtype, shape, flops, tf, k_fused);
    record(cx, "linear_bias_gelu", id, "unfused", dtype, shape, flops, tu, k_unfused);
    record(cx, "linear_bias_gelu", id, "cublaslt", dtype, shape, flops, tl, 1);
    record(cx, "linear_bias_gelu", id, "cublaslt_then_gelu", dtype, shape, flops, ts, 2);
    std::cout << json{{"name", "linear_bias_gelu"},
                      {"case", id},
                      {"summary", true},
                      {"backend", "cuda"},
                      {"precision", dtype_name<T>()},
                      {"formula", "gelu_tanh(x W^T + b)"},
                      {"shape", shape},
                      {"seconds_fused", tf},
                      {"seconds_unfused", tu},
                      {"seconds_cublaslt", tl},
                      {"seconds_cublaslt_then_gelu", ts},
                      {"tflop_per_s_fused", flops / tf / 1e12},
                      {"tflop_per_s_unfused", flops / tu / 1e12},
                      {"tflop_per_s_cublaslt", flops / tl / 1e12},
                      {"tflop_per_s_cublaslt_then_gelu", flops / ts / 1e12},
                      {"peak_fraction_fused", cx.peak > 0 ? json(flops / tf / cx.peak) : json(nullptr)},
                      {"peak_fraction_cublaslt", cx.peak > 0 ? json(flops / tl / cx.peak) : json(nullptr)},
                      {"speedup_fused_vs_unfused", tu / tf},
                      {"fused_vs_cublaslt", tl / tf},
                      {"fused_vs_cublaslt_then_gelu", ts / tf},
                      {"device", cx.device}}
                     .dump()
              << std::endl;
  }
  return pass;
}

// ------------------------------------------------------------- conv + ReLU
bool bench_conv(const context& cx, [[maybe_unused]] void* workspace, [[maybe_unused]] std::size_t workspace_bytes,
                index_t n, index_t c, index_t hw, index_t k) {
  const std::string id = "conv_bias_relu/f16/" + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(hw) + "x" +
                         std::to_string(hw);
  if (!cx.sel.selected(id)) return true;
  if (cx.sel.over_budget()) {
    std::cout << cx.sel.not_run("conv_bias_relu", id).dump() << std::endl;
    return true;
  }
  const std::string dtype = "f16 in, f32 accumulate, f16 out";
  const json shape{{"n", n}, {"c", c}, {"h", hw}, {"w", hw}, {"cout", k}, {"kernel", 3}, {"padding", 1}};
  const index_t ho = hw, wo = hw;
  // NCHW input and OIHW weights; the NHWC input and KRSC (cuDNN) weights are
  // the same tensors transposed.
  const auto x_nchw = random_half(std::size_t(n * c * hw * hw), 11, -1.0f, 1.0f);
  const auto w_oihw = random_half(std::size_t(k * c * 9), 12, -0.1f, 0.1f);
  const auto bias = random_half(std::size_t(k), 13, -0.5f, 0.5f);
  std::vector<__half> x_nhwc(x_nchw.size()), w_ohwi(w_oihw.size());
  for (index_t a = 0; a < n; ++a)
    for (index_t ch = 0; ch < c; ++ch)
      for (index_t i = 0; i < hw * hw; ++i)
        x_nhwc[std::size_t((a * hw * hw + i) * c + ch)] = x_nchw[std::size_t((a * c + ch) * hw * hw + i)];
  for (index_t o = 0; o < k; ++o)
    for (index_t ch = 0; ch < c; ++ch)
      for (index_t rs = 0; rs < 9; ++rs) w_ohwi[std::size_t((o * 9 + rs) * c + ch)] = w_oihw[std::size_t((o * c + ch) * 9 + rs)];
  const std::size_t out = std::size_t(n * k * ho * wo);
  device_buffer<__half> dx_nchw(x_nchw.size()), dx_nhwc(x_nhwc.size()), dw(w_oihw.size()), dw_ohwi(w_ohwi.size()),
      db(bias.size()), y_nhwc(out), y_nchw(out), y_unfused(out), y_dnn(out);
  dx_nchw.upload(x_nchw);
  dx_nhwc.upload(x_nhwc);
  dw.upload(w_oihw);
  dw_ohwi.upload(w_ohwi);
  db.upload(bias);
  const auto wv = fusor::device_view(static_cast<const __half*>(dw.p), k, c, 3, 3);
  const auto bv = fusor::device_view(static_cast<const __half*>(db.p), k);
  const auto e_nhwc = fusor::relu(fusor::conv2d(fusor::device_view(static_cast<const __half*>(dx_nhwc.p), n, hw, hw, c), wv, bv,
                                                {.padding = {1, 1, 1, 1}, .layout = fusor::layout::nhwc}));
  const auto e_nchw = fusor::relu(fusor::conv2d(fusor::device_view(static_cast<const __half*>(dx_nchw.p), n, c, hw, hw), wv, bv,
                                                {.padding = {1, 1, 1, 1}}));
  const auto fused_ex = fusor::cuda(cx.stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(cx.stream));
  const auto o_nhwc = fusor::device_view(y_nhwc.p, n, ho, wo, k), o_nchw = fusor::device_view(y_nchw.p, n, k, ho, wo),
             o_unf = fusor::device_view(y_unfused.p, n, ho, wo, k);

  const std::size_t k_fused = fusor::run(o_nhwc, e_nhwc, fused_ex).kernels;
  fusor::run(o_nchw, e_nchw, fused_ex);
  const std::size_t k_unfused = fusor::run(o_unf, e_nhwc, unfused_ex).kernels;
  check(cudaStreamSynchronize(cx.stream), "first runs");
  const auto f = y_nhwc.download(), u = y_unfused.download(), fc = y_nchw.download();
  std::vector<__half> fc_nhwc(out);
  for (index_t a = 0; a < n; ++a)
    for (index_t o = 0; o < k; ++o)
      for (index_t i = 0; i < ho * wo; ++i) fc_nhwc[std::size_t((a * ho * wo + i) * k + o)] = fc[std::size_t((a * k + o) * ho * wo + i)];
  constexpr double tol = 4.0 / 1024;
  const auto [du, su] = normwise(f, u);
  const auto [dc, sc] = normwise(fc_nhwc, f);
  bool pass = du <= tol * su && dc <= tol * sc && k_fused == 1 && k_unfused == 2;
  json chk{{"name", "conv_bias_relu"},
           {"case", id},
           {"check", "fused_vs_unfused_nchw_cudnn_normwise"},
           {"precision", "f16"},
           {"shape", shape},
           {"max_abs_diff_vs_unfused", du},
           {"max_abs_diff_nchw_vs_nhwc", dc},
           {"max_abs_reference", su},
           {"tolerance_normwise", tol},
           {"kernels_fused", k_fused},
           {"kernels_unfused", k_unfused}};

#if FUSOR_BENCH_HAS_CUDNN
  // cuDNN is the peer, not the subject: if it cannot run here (a library
  // older than the headers, no algorithm), the check line says why and fusor's
  // own variants are still timed.
  cudnnHandle_t h{};
  cudnnTensorDescriptor_t xd{}, yd{}, bd{};
  cudnnFilterDescriptor_t fd{};
  cudnnConvolutionDescriptor_t cd{};
  cudnnActivationDescriptor_t ad{};
  const float alpha1 = 1.0f, alpha2 = 0.0f;
  const auto run_dnn_with = [&](cudnnConvolutionFwdAlgo_t algo) {
    return cudnnConvolutionBiasActivationForward(h, &alpha1, xd, dx_nhwc.p, fd, dw_ohwi.p, cd, algo, workspace,
                                                 workspace_bytes, &alpha2, yd, y_dnn.p, bd, db.p, ad, yd, y_dnn.p);
  };
  cudnnConvolutionFwdAlgo_t algo{};
  bool have_dnn = false;
  try {
  check_dnn(cudnnCreate(&h), "cudnnCreate");
  check_dnn(cudnnSetStream(h, cx.stream), "cudnnSetStream");
  check_dnn(cudnnCreateTensorDescriptor(&xd), "x desc");
  check_dnn(cudnnCreateTensorDescriptor(&yd), "y desc");
  check_dnn(cudnnCreateTensorDescriptor(&bd), "bias desc");
  check_dnn(cudnnCreateFilterDescriptor(&fd), "filter desc");
  check_dnn(cudnnCreateConvolutionDescriptor(&cd), "conv desc");
  check_dnn(cudnnCreateActivationDescriptor(&ad), "activation desc");
  check_dnn(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, int(n), int(c), int(hw), int(hw)), "x desc");
  check_dnn(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, int(n), int(k), int(ho), int(wo)), "y desc");
  check_dnn(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, int(k), 1, 1), "bias desc");
  check_dnn(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, int(k), int(c), 3, 3), "filter desc");
  check_dnn(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "conv desc");
  check_dnn(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH), "math type");
  check_dnn(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), "activation");
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  check_dnn(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, fd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
            "cudnnGetConvolutionForwardAlgorithm_v7");
  int chosen = -1;
  for (int i = 0; i < returned && chosen < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= workspace_bytes &&
        run_dnn_with(perf[i].algo) == CUDNN_STATUS_SUCCESS)
      chosen = i;
  if (chosen < 0) throw std::runtime_error("cuDNN: no forward algorithm runs cudnnConvolutionBiasActivationForward");
  algo = perf[chosen].algo;
  check(cudaStreamSynchronize(cx.stream), "cudnn first run");
  const auto d = y_dnn.download();
  const auto [dd, sd] = normwise(f, d);
  pass = pass && dd <= tol * sd;
  chk["max_abs_diff_vs_cudnn"] = dd;
  chk["cudnn_algo"] = int(algo);
  have_dnn = true;
  } catch (const std::exception& ex) {
    (void)cudaGetLastError();
    chk["cudnn_error"] = ex.what();
  }
  const auto run_dnn = [&] { check_dnn(run_dnn_with(algo), "cudnnConvolutionBiasActivationForward"); };
#else
  std::cout << json{{"name", "conv_bias_relu"}, {"case", id}, {"variant", "cudnn_nhwc"}, {"backend", "cuda"},
                    {"note", "not built with cuDNN (CMake found no cudnn.h / libcudnn): no cuDNN comparison"}}
                   .dump()
            << std::endl;
#endif
  chk["pass"] = pass;
  std::cout << chk.dump() << std::endl;

  if (pass) {
    const double flops = 2.0 * double(n) * double(ho) * double(wo) * double(k) * double(c) * 9.0;
    const double tf = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(o_nhwc, e_nhwc, fused_ex); });
    const double tfc = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(o_nchw, e_nchw, fused_ex); });
    const double tu = best_seconds(cx.stream, cx.repeats, [&] { fusor::run(o_unf, e_nhwc, unfused_ex); });
    record(cx, "conv_bias_relu", id, "fused_nhwc", dtype, shape, flops, tf, k_fused);
    record(cx, "conv_bias_relu", id, "fused_nchw", dtype, shape, flops, tfc, k_fused);
    record(cx, "conv_bias_relu", id, "unfused_nhwc", dtype, shape, flops, tu, k_unfused);
    json summary{{"name", "conv_bias_relu"},
                 {"case", id},
                 {"summary", true},
                 {"backend", "cuda"},
                 {"formula", "relu(conv2d(x, w, b, pad 1))"},
                 {"shape", shape},
                 {"seconds_fused", tf},
                 {"seconds_fused_nchw", tfc},
                 {"seconds_unfused", tu},
                 {"tflop_per_s_fused", flops / tf / 1e12},
                 {"tflop_per_s_fused_nchw", flops / tfc / 1e12},
                 {"tflop_per_s_unfused", flops / tu / 1e12},
                 {"peak_fraction_fused", cx.peak > 0 ? json(flops / std::min(tf, tfc) / cx.peak) : json(nullptr)},
                 {"speedup_fused_vs_unfused", tu / tf}};
#if FUSOR_BENCH_HAS_CUDNN
    if (have_dnn) {
      const double td = best_seconds(cx.stream, cx.repeats, run_dnn);
      record(cx, "conv_bias_relu", id, "cudnn_nhwc", dtype, shape, flops, td, 1);
      summary["seconds_cudnn"] = td;
      summary["tflop_per_s_cudnn"] = flops / td / 1e12;
      summary["peak_fraction_cudnn"] = cx.peak > 0 ? json(flops / td / cx.peak) : json(nullptr);
      summary["fused_vs_cudnn"] = td / tf;
    } else {
      summary["seconds_cudnn"] = nullptr;
    }
#else
    summary["seconds_cudnn"] = nullptr;
#endif
    summary["device"] = cx.device;
    std::cout << summary.dump() << std::endl;
  }
#if FUSOR_BENCH_HAS_CUDNN
  cudnnDestroyActivationDescriptor(ad);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(fd);
  cudnnDestroyTensorDescriptor(bd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroy(h);
#endif
  return pass;
}

}  // namespace

int main(int argc, char** argv) try {
  (void)fusor_bench::elapsed_s();  // starts the --budget-s clock
  int repeats = 20;
  case_selection sel;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (sel.parse(argc, argv, i)) continue;
    if (arg == "--repeats" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 0);
      if (*end != '\0' || v <= 0) usage(argv[0], 2);
      repeats = int(std::min<long>(v, 100000));
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  if (fusor_bench::skip_without_device("contraction")) return fusor_bench::exit_skipped;
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

  fusor_bench::keep_pool_memory(device);  // the unfused executor's cudaMallocAsync temporaries
  cudaStream_t stream{};
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::size_t workspace_bytes = std::size_t(32) << 20;
  device_buffer<unsigned char> workspace(workspace_bytes);
  cublasLtHandle_t lt{};
  check_lt(cublasLtCreate(&lt), "cublasLtCreate");
  const context cx{stream, repeats, peak, prop.name, sel};

  // Shapes: BERT (tokens x 768 -> 3072 and BERT-large 1024 -> 4096), an LLM
  // MLP up-projection (Llama-2-7B: 4096 -> 11008) at a prefill of 4096
  // tokens, and the same weight at decode batch sizes 1 and 16 (GEMV-like:
  // memory-bound on the weight). f16 first, then bf16 (LLM weights' usual
  // dtype); smallest first within each so a spent --budget-s drops the big ones.
  bool ok = true;
  ok = bench_linear<__half>(cx, lt, workspace.p, workspace_bytes, "bert", 128, 768, 3072) && ok;
  ok = bench_linear<__half>(cx, lt, workspace.p, workspace_bytes, "bert", 4096, 768, 3072) && ok;
  ok = bench_linear<__half>(cx, lt, workspace.p, workspace_bytes, "bert", 4096, 1024, 4096) && ok;
  ok = bench_linear<__nv_bfloat16>(cx, lt, workspace.p, workspace_bytes, "bert", 4096, 768, 3072) && ok;
  ok = bench_linear<__nv_bfloat16>(cx, lt, workspace.p, workspace_bytes, "decode", 1, 4096, 11008) && ok;
  ok = bench_linear<__nv_bfloat16>(cx, lt, workspace.p, workspace_bytes, "decode", 16, 4096, 11008) && ok;
  ok = bench_linear<__nv_bfloat16>(cx, lt, workspace.p, workspace_bytes, "llm", 4096, 4096, 11008) && ok;
  ok = bench_linear<__half>(cx, lt, workspace.p, workspace_bytes, "llm", 4096, 4096, 11008) && ok;
  ok = bench_conv(cx, workspace.p, workspace_bytes, 1, 64, 56, 64) && ok;
  ok = bench_conv(cx, workspace.p, workspace_bytes, 32, 64, 56, 64) && ok;
  cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  if (!ok) {
    std::cerr << "bench_gpu_contraction: results disagree, some timings not reported\n";
    return 1;
  }
  return 0;
} catch (const std::exception& ex) {
  std::cerr << "bench_gpu_contraction: " << ex.what() << "\n";
  return 1;
}
