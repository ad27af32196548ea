/// @file bench/reduction_cases.hpp
/// The cases of the reduction benchmarks (bench/reduction_bench.cpp on the
/// host, bench/gpu_reduction.cu on CUDA): transformer normalizations and a
/// loss over a row-major [rows, cols] tensor, with their byte-count roofline
/// model. One definition serves both memory spaces and every executor.
///
/// Operands (all of dtype T, f32 or f16; row-major, contiguous):
///   x [rows, cols]  the activations
///   r [rows, cols]  a residual (layer_norm_residual) or the target (mse_loss)
///   g [cols]        gamma (the norms' scale)
///   b [cols]        beta (layer_norm's shift)
///   y [rows, cols]  the output (mse_loss: one T)
///
/// Cases:
///   softmax              y = softmax(x, -1)                          (op)
///   softmax_decomposed   e = exp(x - max_reduce(x, {1})); y = e / sum(e, {1})
///                        (the textbook formula written out)
///   layer_norm           y = layer_norm(x, g, b), eps 1e-5, last axis
///   layer_norm_residual  y = layer_norm(x, g, b) + r (residual add: epilogue)
///   rms_norm             y = rms_norm(x, g), eps 1e-5, last axis
///   rms_norm_decomposed  y = x / sqrt(mean(x * x, {1}) + 1e-5) * g
///   mse_loss             y = mean((x - r)^2) over all elements (scalar)
///
/// Byte-count roofline model ("bytes"): the minimum DRAM traffic any
/// implementation needs, i.e. every operand read once and the output written
/// once, sizeof(T) bytes per element (rows * cols * (inputs + outputs) +
/// cols * parameter vectors): softmax 2 R C, layer_norm 2 R C + 2 C,
/// layer_norm_residual 3 R C + 2 C, rms_norm 2 R C + C, mse_loss 2 R C + 1
/// elements. It ignores re-reads that hit cache (a fused row kernel reads a
/// row two or three times, from L1/L2 when the row fits) and write-allocate
/// traffic; an unfused run's temporaries are real traffic the model does not
/// grant, so its gbps is "effective": minimum bytes / time, comparable across
/// variants (higher = closer to the roofline).
#pragma once

#include "bench_common.hpp"

#include <fusor/fusor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace fusor_bench::reduction {

using fusor::index_t;

/// The benchmark cases (see the file comment).
enum class op_id { softmax, softmax_decomposed, layer_norm, layer_norm_residual, rms_norm, rms_norm_decomposed, mse_loss };

/// Every case, in output order.
inline constexpr std::array<op_id, 7> all_ops{op_id::softmax,  op_id::softmax_decomposed,  op_id::layer_norm,
                                              op_id::layer_norm_residual, op_id::rms_norm, op_id::rms_norm_decomposed,
                                              op_id::mse_loss};

/// The case's name in the JSON output and on the command line.
constexpr const char* name(op_id op) {
  switch (op) {
    case op_id::softmax: return "softmax";
    case op_id::softmax_decomposed: return "softmax_decomposed";
    case op_id::layer_norm: return "layer_norm";
    case op_id::layer_norm_residual: return "layer_norm_residual";
    case op_id::rms_norm: return "rms_norm";
    case op_id::rms_norm_decomposed: return "rms_norm_decomposed";
    case op_id::mse_loss: return "mse_loss";
  }
  return "?";
}

/// The case's formula (fusor API), for the JSON output.
constexpr const char* formula(op_id op) {
  switch (op) {
    case op_id::softmax: return "softmax(x, -1)";
    case op_id::softmax_decomposed: return "e = exp(x - max_reduce(x, {1})); e / sum(e, {1})";
    case op_id::layer_norm: return "layer_norm(x, g, b)";
    case op_id::layer_norm_residual: return "layer_norm(x, g, b) + r";
    case op_id::rms_norm: return "rms_norm(x, g)";
    case op_id::rms_norm_decomposed: return "x / sqrt(mean(x * x, {1}) + 1e-5) * g";
    case op_id::mse_loss: return "mse_loss(x, r) (mean)";
  }
  return "?";
}

/// True when the output is one scalar (mse_loss), else [rows, cols].
constexpr bool scalar_output(op_id op) { return op == op_id::mse_loss; }

/// The byte-count roofline model (see the file comment), in bytes, for
/// elements of `elem_bytes` bytes.
constexpr double min_bytes(op_id op, index_t rows, index_t cols, double elem_bytes) {
  const double rc = double(rows) * double(cols), c = double(cols);
  switch (op) {
    case op_id::softmax:
    case op_id::softmax_decomposed: return elem_bytes * 2 * rc;
    case op_id::layer_norm: return elem_bytes * (2 * rc + 2 * c);
    case op_id::layer_norm_residual: return elem_bytes * (3 * rc + 2 * c);
    case op_id::rms_norm:
    case op_id::rms_norm_decomposed: return elem_bytes * (2 * rc + c);
    case op_id::mse_loss: return elem_bytes * (2 * rc + 1);
  }
  return 0;
}

/// The kernels fusor::host() (fused) and fusor::unfused() launch for `op`
/// on [rows, cols] (bench_reduction checks them: a change in fusion shows up
/// as a failed check, not only as a different timing). The written-out
/// softmax and rms_norm are recognised by the fused planner (one kernel);
/// mse_loss over enough elements is split over several blocks plus a
/// finalize (fusor::kernels::row_chunks), on both executors.
constexpr std::size_t expected_host_kernels(op_id op, bool fused, std::int64_t rows, std::int64_t cols) {
  switch (op) {
    case op_id::softmax:
    case op_id::layer_norm:
    case op_id::rms_norm: return 1;
    case op_id::softmax_decomposed: return fused ? 1 : 8;
    case op_id::layer_norm_residual: return fused ? 1 : 2;
    case op_id::rms_norm_decomposed: return fused ? 1 : 6;
    case op_id::mse_loss: {
      const std::size_t finalize = fusor::kernels::row_chunks(1, rows * cols) > 1 ? 1 : 0;
      return (fused ? 1 : 3) + finalize;
    }
  }
  return 0;
}

/// Upper bound on the [rows, cols] temporaries an unfused run of `op`
/// allocates (one per kernel but the last; reduced [rows, 1] ones counted as
/// full size): for the memory limit of the benchmarks.
constexpr int unfused_temporaries_bound(op_id op) {
  switch (op) {
    case op_id::softmax:
    case op_id::layer_norm:
    case op_id::rms_norm: return 0;
    case op_id::layer_norm_residual: return 1;
    case op_id::mse_loss: return 2;
    case op_id::rms_norm_decomposed: return 5;
    case op_id::softmax_decomposed: return 7;
  }
  return 0;
}

/// The operands of one shape (see the file comment); pointers into memory of
/// the space the benchmark runs in.
template <class T>
struct operands {
  const T* x;
  const T* r;
  const T* g;
  const T* b;
  index_t rows, cols;
};

/// Runs case `op` on executor `ex` into `y` (in memory space Space: a
/// [rows, cols] array, or one element for mse_loss) and returns the kernels
/// run() launched. Errors: fusor::error from run() (shapes, devices).
template <class Space, class T, class Ex>
std::size_t run_case(op_id op, const operands<T>& in, T* y, const Ex& ex) {
  const auto mat = [&](auto* p) { return fusor::make_view<Space>(p, fusor::dextents<2>(in.rows, in.cols)); };
  const auto vec = [&](const T* p) { return fusor::make_view<Space>(p, fusor::dextents<1>(in.cols)); };
  const auto X = mat(in.x);
  const auto Y = mat(y);
  switch (op) {
    case op_id::softmax: return fusor::run(Y, fusor::softmax(X, -1), ex).kernels;
    case op_id::softmax_decomposed: {
      const auto e = fusor::exp(X - fusor::max_reduce(X, {1}));
      return fusor::run(Y, e / fusor::sum(e, {1}), ex).kernels;
    }
    case op_id::layer_norm: return fusor::run(Y, fusor::layer_norm(X, vec(in.g), vec(in.b)), ex).kernels;
    case op_id::layer_norm_residual:
      return fusor::run(Y, fusor::layer_norm(X, vec(in.g), vec(in.b)) + mat(in.r), ex).kernels;
    case op_id::rms_norm: return fusor::run(Y, fusor::rms_norm(X, vec(in.g)), ex).kernels;
    case op_id::rms_norm_decomposed:
      return fusor::run(Y, X / fusor::sqrt(fusor::mean(X * X, {1}) + 1e-5f) * vec(in.g), ex).kernels;
    case op_id::mse_loss:
      return fusor::run(fusor::make_view<Space>(y, fusor::extents<>{}), fusor::mse_loss(X, mat(in.r)), ex).kernels;
  }
  return 0;
}

/// Deterministic input values of operand `which` (0 x, 1 r, 2 g, 3 b) at
/// index i: x in [-4, 4) (softmax logits of a realistic spread; layer_norm
/// inputs with a nonzero mean per row come from the row-dependent offset),
/// r in [-1, 1), gamma in [0.5, 1.5), beta in [-0.5, 0.5). Host and device
/// (CUDA benchmarks fill their operands on the device) give the same values.
FUSOR_BENCH_HD inline float input_at(int which, std::uint64_t i, index_t cols) {
  switch (which) {
    case 0: return fusor_bench::uniform(11, i, -4.0f, 4.0f) + 0.25f * float((i / std::uint64_t(cols)) % 8);
    case 1: return fusor_bench::uniform(12, i, -1.0f, 1.0f);
    case 2: return fusor_bench::uniform(13, i, 0.5f, 1.5f);
    default: return fusor_bench::uniform(14, i, -0.5f, 0.5f);
  }
}

}  // namespace fusor_bench::reduction
