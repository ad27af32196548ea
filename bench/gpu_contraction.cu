/// @file bench/gpu_contraction.cu
/// CUDA benchmark of fused contractions (kernels/contraction.hpp) against
/// NVIDIA's libraries, fp16 operands with fp32 accumulation (fusor's
/// tensor-core tile path: WMMA m16n16k16), fp16 results:
///
///   linear_bias_gelu  y = gelu_tanh(x W^T + b) at BERT shapes
///                     (tokens x hidden -> ffn: 128 x 768 -> 3072, 4096 x 768 ->
///                     3072 (BERT-base, batch 32 x 128), 4096 x 1024 -> 4096
///                     (BERT-large)), as
///       fused     fusor::run(..., fusor::cuda(stream))            1 kernel
///       unfused   fusor::run(..., fusor::unfused(cuda(stream)))   linear (its
///                 own bias epilogue), then gelu: 2 kernels, fp32 temporary
///       cublaslt  cublasLtMatmul with CUBLASLT_EPILOGUE_GELU_BIAS (fp16 A/B/D
///                 and bias, CUBLAS_COMPUTE_32F, the first heuristic algorithm,
///                 32 MiB workspace). cuBLASLt's GELU is the tanh form, so fusor
///                 runs gelu_tanh here.
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
/// normwise |a - b| <= tol * max|b| for fp16 results); a failure exits 1.
/// Without a CUDA device it prints a "skipped" line and exits 77.
///
/// Usage: bench_gpu_contraction [--repeats R]
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
using fusor_bench::random_half;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}
#if FUSOR_BENCH_HAS_CUDNN
void check_dnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(s));
}
#endif

/// max |a - b| and max |b| over two fp16 results (b: the reference).
std::pair<double, double> normwise(const std::vector<__half>& a, const std::vector<__half>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = __half2float(a[i]), y = __half2float(b[i]);
    diff = std::isfinite(x) && std::isfinite(y) ? std::max(diff, std::fabs(x - y)) : std::numeric_limits<double>::infinity();
    scale = std::max(scale, std::fabs(y));
  }
  return {diff, scale};
}

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R]\n"
               "  --repeats R  timed batches of 4 back-to-back runs per variant, after one warmup;\n"
               "               the minimum per run is reported (default 20)\n",
               argv0);
  std::exit(status);
}

struct context {
  cudaStream_t stream;
  int repeats;
  double peak;
  std::string device;
};

/// One variant's JSON line; returns the TFLOP/s.
double record(const context& cx, const char* name, const char* variant, const json& shape, double flops, double seconds,
              json kernels) {
  const double tflops = flops / seconds / 1e12;
  std::cout << json{{"name", name},
                    {"variant", variant},
                    {"backend", "cuda"},
                    {"dtype", "f16 in, f32 accumulate, f16 out"},
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
bool bench_linear(const context& cx, cublasLtHandle_t lt, void* workspace, std::size_t workspace_bytes, index_t M,
                  index_t K, index_t N) {
  const json shape{{"tokens", M}, {"in", K}, {"out", N}};
  const auto hx = random_half(std::size_t(M * K), 1, -1.0f, 1.0f);
  const auto hw = random_half(std::size_t(N * K), 2, -0.05f, 0.05f);
  const auto hb = random_half(std::size_t(N), 3, -0.5f, 0.5f);
  device_buffer<__half> x(hx.size()), w(hw.size()), b(hb.size()), y_fused(std::size_t(M * N)), y_unfused(y_fused.n),
      y_lt(y_fused.n);
  x.upload(hx);
  w.upload(hw);
  b.upload(hb);
  const auto e = fusor::gelu_tanh(fusor::linear(fusor::device_view(static_cast<const __half*>(x.p), M, K),
                                                fusor::device_view(static_cast<const __half*>(w.p), N, K),
                                                fusor::device_view(static_cast<const __half*>(b.p), N)));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  const auto fused_ex = fusor::cuda(cx.stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(cx.stream));
  const auto out_f = fusor::device_view(y_fused.p, M, N), out_u = fusor::device_view(y_unfused.p, M, N);

  // cuBLASLt, column-major: Y^T (N x M, ld N) = Wc^T (Wc = W^T: K x N, ld K) * Xc (X^T: K x M, ld K).
  cublasLtMatmulDesc_t op{};
  check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "EPILOGUE");
  const void* bias = b.p;
  check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "BIAS_POINTER");
  const cudaDataType_t bias_type = CUDA_R_16F;
  check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
           "BIAS_DATA_TYPE");
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  check_lt(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, std::uint64_t(K), std::uint64_t(N), std::int64_t(K)), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, std::uint64_t(K), std::uint64_t(M), std::int64_t(K)), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, std::uint64_t(N), std::uint64_t(M), std::int64_t(N)), "layout C");
  cublasLtMatmulPreference_t pref{};
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t ws = workspace_bytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
           "MAX_WORKSPACE_BYTES");
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found), "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm for GELU_BIAS fp16");
  const float alpha = 1.0f, beta = 0.0f;
  const auto run_lt = [&] {
    check_lt(cublasLtMatmul(lt, op, &alpha, w.p, la, x.p, lb, &beta, y_lt.p, lc, y_lt.p, lc, &heur.algo, workspace,
                            workspace_bytes, cx.stream),
             "cublasLtMatmul");
  };

  // --- checks --------------------------------------------------------------
  const std::size_t k_fused = fusor::run(out_f, e, fused_ex).kernels;
  const std::size_t k_unfused = fusor::run(out_u, e, unfused_ex).kernels;
  run_lt();
  check(cudaStreamSynchronize(cx.stream), "first runs");
  const auto f = y_fused.download(), u = y_unfused.download(), l = y_lt.download();
  const auto [du, su] = normwise(f, u);
  const auto [dl, sl] = normwise(f, l);
  // fp16 results: a few fp16 ulps of the largest value (2^-10 relative each).
  constexpr double tol = 4.0 / 1024;
  const bool pass = du <= tol * su && dl <= tol * sl && k_fused == 1 && k_unfused == 2;
  std::cout << json{{"name", "linear_bias_gelu"},
                    {"check", "fused_vs_unfused_and_cublaslt_normwise"},
                    {"shape", shape},
                    {"max_abs_diff_vs_unfused", du},
                    {"max_abs_diff_vs_cublaslt", dl},
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
    record(cx, "linear_bias_gelu", "fused", shape, flops, tf, k_fused);
    record(cx, "linear_bias_gelu", "unfused", shape, flops, tu, k_unfused);
    record(cx, "linear_bias_gelu", "cublaslt", shape, flops, tl, 1);
    std::cout << json{{"name", "linear_bias_gelu"},
                      {"summary", true},
                      {"backend", "cuda"},
                      {"formula", "gelu_tanh(x W^T + b)"},
                      {"shape", shape},
                      {"seconds_fused", tf},
                      {"seconds_unfused", tu},
                      {"seconds_cublaslt", tl},
                      {"tflop_per_s_fused", flops / tf / 1e12},
                      {"tflop_per_s_unfused", flops / tu / 1e12},
                      {"tflop_per_s_cublaslt", flops / tl / 1e12},
                      {"peak_fraction_fused", cx.peak > 0 ? json(flops / tf / cx.peak) : json(nullptr)},
                      {"peak_fraction_cublaslt", cx.peak > 0 ? json(flops / tl / cx.peak) : json(nullptr)},
                      {"speedup_fused_vs_unfused", tu / tf},
                      {"fused_vs_cublaslt", tl / tf},
                      {"device", cx.device}}
                     .dump()
              << std::endl;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return pass;
}

// ------------------------------------------------------------- conv + ReLU
bool bench_conv(const context& cx, [[maybe_unused]] void* workspace, [[maybe_unused]] std::size_t workspace_bytes,
                index_t n, index_t c, index_t hw, index_t k) {
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
           {"check", "fused_vs_unfused_nchw_cudnn_normwise"},
           {"shape", shape},
           {"max_abs_diff_vs_unfused", du},
           {"max_abs_diff_nchw_vs_nhwc", dc},
           {"max_abs_reference", su},
           {"tolerance_normwise", tol},
           {"kernels_fused", k_fused},
           {"kernels_unfused", k_unfused}};

#if FUSOR_BENCH_HAS_CUDNN
  cudnnHandle_t h{};
  check_dnn(cudnnCreate(&h), "cudnnCreate");
  check_dnn(cudnnSetStream(h, cx.stream), "cudnnSetStream");
  cudnnTensorDescriptor_t xd{}, yd{}, bd{};
  cudnnFilterDescriptor_t fd{};
  cudnnConvolutionDescriptor_t cd{};
  cudnnActivationDescriptor_t ad{};
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
  const float alpha1 = 1.0f, alpha2 = 0.0f;
  int chosen = -1;
  const auto run_dnn_with = [&](cudnnConvolutionFwdAlgo_t algo) {
    return cudnnConvolutionBiasActivationForward(h, &alpha1, xd, dx_nhwc.p, fd, dw_ohwi.p, cd, algo, workspace,
                                                 workspace_bytes, &alpha2, yd, y_dnn.p, bd, db.p, ad, yd, y_dnn.p);
  };
  for (int i = 0; i < returned && chosen < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= workspace_bytes &&
        run_dnn_with(perf[i].algo) == CUDNN_STATUS_SUCCESS)
      chosen = i;
  if (chosen < 0) throw std::runtime_error("cuDNN: no forward algorithm runs cudnnConvolutionBiasActivationForward");
  const auto algo = perf[chosen].algo;
  const auto run_dnn = [&] { check_dnn(run_dnn_with(algo), "cudnnConvolutionBiasActivationForward"); };
  check(cudaStreamSynchronize(cx.stream), "cudnn first run");
  const auto d = y_dnn.download();
  const auto [dd, sd] = normwise(f, d);
  pass = pass && dd <= tol * sd;
  chk["max_abs_diff_vs_cudnn"] = dd;
  chk["cudnn_algo"] = int(algo);
#else
  std::cout << json{{"name", "conv_bias_relu"}, {"variant", "cudnn_nhwc"}, {"backend", "cuda"},
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
    record(cx, "conv_bias_relu", "fused_nhwc", shape, flops, tf, k_fused);
    record(cx, "conv_bias_relu", "fused_nchw", shape, flops, tfc, k_fused);
    record(cx, "conv_bias_relu", "unfused_nhwc", shape, flops, tu, k_unfused);
    json summary{{"name", "conv_bias_relu"},
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
    const double td = best_seconds(cx.stream, cx.repeats, run_dnn);
    record(cx, "conv_bias_relu", "cudnn_nhwc", shape, flops, td, 1);
    summary["seconds_cudnn"] = td;
    summary["tflop_per_s_cudnn"] = flops / td / 1e12;
    summary["peak_fraction_cudnn"] = cx.peak > 0 ? json(flops / td / cx.peak) : json(nullptr);
    summary["fused_vs_cudnn"] = td / tf;
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
  int repeats = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
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
  const context cx{stream, repeats, peak, prop.name};

  bool ok = true;
  ok = bench_linear(cx, lt, workspace.p, workspace_bytes, 128, 768, 3072) && ok;
  ok = bench_linear(cx, lt, workspace.p, workspace_bytes, 4096, 768, 3072) && ok;
  ok = bench_linear(cx, lt, workspace.p, workspace_bytes, 4096, 1024, 4096) && ok;
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
