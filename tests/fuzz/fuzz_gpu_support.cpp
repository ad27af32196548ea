// fuzz_gpu's non-template part (g++): the device mirror of a draw's buffers,
// the comparison of the CUDA run with the host() reference, reports and
// statistics. Declared in fuzz_gpu.hpp; README.md, "GPU mode", explains the
// tolerances (the constants below carry the same justification).
#include "fuzz_blocks.hpp"
#include "fuzz_gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace fz {

const char* g_gpu_program = "fuzz_gpu";

// ===================================================================== device mirror
namespace {
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("fuzz_gpu: ") + what + ": " + cudaGetErrorString(e));
}
}  // namespace

device_mirror::~device_mirror() {
  for (unsigned char* p : dev)
    if (p) cudaFree(p);
}

void device_mirror::allocate(const draw& d) {
  while (dev.size() < d.buffers.size()) {
    const buffer& b = d.buffers[dev.size()];
    void* p = nullptr;
    // same byte layout as the host buffer (at least 1 byte, as allocate() does)
    cuda_check(cudaMalloc(&p, std::max<std::size_t>(b.bytes(), 1)), "cudaMalloc of a draw buffer");
    dev.push_back(static_cast<unsigned char*>(p));
  }
}

void device_mirror::upload(const draw& d) {
  for (std::size_t i = 0; i < dev.size(); ++i) {
    const buffer& b = d.buffers[i];
    if (b.mem && b.bytes()) cuda_check(cudaMemcpy(dev[i], b.mem, b.bytes(), cudaMemcpyHostToDevice), "upload");
  }
}

void device_mirror::download(draw& d) {
  for (std::size_t i = 0; i < dev.size(); ++i) {
    buffer& b = d.buffers[i];
    if (b.mem && b.bytes()) cuda_check(cudaMemcpy(b.mem, dev[i], b.bytes(), cudaMemcpyDeviceToHost), "download");
  }
}

void* device_mirror::data(const draw& d, const view_layout& l) const {
  if (l.null_data) return nullptr;
  const buffer& b = d.buffers[std::size_t(l.buffer)];
  return dev[std::size_t(l.buffer)] + std::size_t(l.offset) * dt_size(b.type);
}

void sync_device(run_outcome& r) {
  // an asynchronous kernel fault surfaces here: it is the run's error
  const cudaError_t e = cudaDeviceSynchronize();
  const cudaError_t last = cudaGetLastError();  // clears a non-sticky error
  const cudaError_t bad = e != cudaSuccess ? e : last;
  if (bad != cudaSuccess && r.error.empty())
    r.error = std::string("CUDA error after the run: ") + cudaGetErrorName(bad) + ": " + cudaGetErrorString(bad);
}

// ===================================================================== tolerances
//
// Per element, with h the host() value and g the cuda() value of one output:
//   NaN: g must be NaN exactly where h is NaN (any payload);
//   +-Inf: g must be the same infinity;
//   else |g - h| <= atol + rtol |h| (+ for fuzz_blocks rtol_norm * max|h| over the output).
//
// Elementwise cases whose ops are all exactly rounded on both sides (+ - * /,
// sqrt, neg, abs, relu, max, min, clip, where, comparisons-free selections,
// leaky_relu, hardsigmoid, hardswish, softsign, reciprocal, rsqrt = 1/sqrt,
// thresholded_relu, conversions; device code uses the __f*_rn intrinsics that
// nvcc never contracts, the host is built with -ffp-contract=off) must be
// BITWISE equal: tests/cuda/test_cuda_*.cu and docs/guarantees.md promise that.
//
// Cases with an inexact op (exp, expm1, log, log1p, tanh, erf, sigmoid, silu,
// softplus, gelu, gelu_tanh, elu, celu, selu, pow, sin, cos, tan, asin,
// acos, atan, sinh, cosh, asinh, acosh, atanh) call CUDA's libdevice on the device (expf, erff,
// tanhf, sinf, cosf: <= 2 ulp, powf, tanf <= 4 ulp; CUDA C++
// Programming Guide, "Mathematical Functions") and SLEEF or glibc's libm on
// the host (<= 1-2 ulp; the first GPU run found cos 1 ulp apart):
// one call differs by a few ulp. A case has at most 8 nodes, so a chain of
// a few such calls through well-conditioned ops stays within 64 ulp:
//   f32 / f64 outputs: rtol = 2^-17 (64 f32 ulp), atol = 2^-17 (64 ulp at
//     magnitude 1: a subtraction of two O(1) intermediates, e.g.
//     sigmoid(x) - 0.5, cancels to an absolute error of that size);
//   f16 outputs: rtol = 2^-10 + 2^-17 (values a few f32 ulp apart may round to
//     neighbouring f16 values: one f16 ulp), atol = 2^-17 + 2^-24 (f16
//     subnormal spacing);
//   bf16 outputs: rtol = 2^-7 + 2^-17 (one bf16 ulp), atol = 2^-17;
//   integer outputs: exact, except in a case with an inexact op, where
//     |g - h| <= 1 + 2^-17 |h| (an integer made from a float within the f32
//     tolerance, then truncated or rounded); bool outputs: exact.
// fuzz_blocks' cases all compare with tolerance: reductions, norms,
// contractions and attention sum in another order and with other partials on
// the device (and exp/rsqrt come from libdevice), so their difference is a
// sum-order error bounded by ~ (K + 16) u sum|terms| (tests/cuda/test_cuda_*.cu,
// contractions; u = 2^-24), which is not proportional to |h| when terms
// cancel. A norm-wise term covers it: rtol_norm = 2^-12 (4096 u) times the
// largest finite |h| of the output, with rtol and atol as above.
//
// Outputs of discontinuous functions of inexact values may flip on a 1-ulp
// difference (pow of a negative base with a computed exponent is NaN or not,
// log/sqrt of a computed ~0 value, thresholds of thresholded_relu/softplus/
// hardswish, f16 overflow at 65520, x / (a computed ~0), sums overflowing in
// one order and not in the other). Cases with an inexact op (all block cases)
// may therefore have at most floor(n / 32) of an output's n elements outside
// the tolerance. Such a draw passes but prints a "FUZZ TOLERATED" line and is
// counted in the summary: nothing is tolerated silently.

namespace {

struct tolerance {
  double rtol = 0, atol = 0;
};

tolerance tolerance_of(dt t) {
  constexpr double f32 = 0x1p-17;
  switch (t) {
    case dt::f32:
    case dt::f64: return {f32, f32};
    case dt::f16: return {0x1p-10 + f32, f32 + 0x1p-24};
    case dt::bf16: return {0x1p-7 + f32, f32};
    default: return {0, 0};
  }
}
constexpr double rtol_norm = 0x1p-12;
constexpr std::size_t outlier_divisor = 32;

/// The ops whose device and host implementations differ by a few ulp.
bool has_inexact_op(const std::string& describe) {
  static const char* const names[] = {"exp",  "expm1", "log",  "log1p", "tanh", "erf",  "sigmoid", "silu",
                                      "softplus", "gelu", "gelu_tanh", "elu", "celu", "selu", "pow",
                                      "sin",  "cos",   "tan",  "asin",  "acos", "atan", "sinh",    "cosh",
                                      "asinh", "acosh", "atanh"};
  for (std::size_t i = 0; i < describe.size(); ++i) {
    if (describe[i] != '(') continue;
    std::size_t j = i;
    while (j > 0 && (std::isalnum((unsigned char)describe[j - 1]) || describe[j - 1] == '_')) --j;
    const std::string w = describe.substr(j, i - j);
    for (const char* n : names)
      if (w == n) return true;
  }
  return false;
}

double to_double(dt t, const unsigned char* p) {
  switch (t) {
    case dt::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case dt::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case dt::f16: {
      __half_raw h;
      std::memcpy(&h.x, p, 2);
      return double(__half2float(__half(h)));
    }
    case dt::bf16: {
      std::uint16_t u;
      std::memcpy(&u, p, 2);
      const std::uint32_t w = std::uint32_t(u) << 16;
      float f;
      std::memcpy(&f, &w, 4);
      return f;
    }
    case dt::i32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case dt::i64: {
      long long v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case dt::boolean: return *p ? 1.0 : 0.0;
  }
  return 0;
}

bool is_floating(dt t) { return t == dt::f32 || t == dt::f64 || t == dt::f16 || t == dt::bf16; }

struct gpu_stats {
  long long draws = 0, bitwise_mode = 0, close_mode = 0, not_bitwise = 0, tolerated = 0,
            both_threw = 0, empty = 0, in_place = 0, dense = 0, nan_outputs = 0, elements = 0;
  double worst_ratio = 0;  ///< largest |g - h| / allowed among the elements within tolerance
  int worst_case = -1;
  std::uint64_t worst_seed = 0;
};
gpu_stats g_gpu[2];

const char* family_text(gpu_family f) { return f == gpu_family::elementwise ? "elementwise" : "blocks"; }

void print_gpu_draw(const draw& d, gpu_family fam, const std::string& describe) {
  std::printf("  case %d: %s\n", d.case_id, d.info);
  std::printf("  expression: %s\n", describe.c_str());
  if (fam == gpu_family::blocks)
    std::printf("  geometry: %s (%s)\n", static_cast<const block_draw&>(d).geometry.c_str(), d.size_class.c_str());
  else
    std::printf("  size class: %s\n", d.size_class.c_str());
  for (std::size_t i = 0; i < d.in.size(); ++i) {
    const std::string name = fam == gpu_family::elementwise ? std::string(1, "abc"[i]) : std::to_string(i);
    std::printf("  input %s: %s\n", name.c_str(), layout_text(d, d.in[i], d.spec[i].type).c_str());
  }
  for (std::size_t i = 0; i < d.out.size(); ++i)
    std::printf("  output %zu: %s\n", i, layout_text(d, d.out[i], d.out_type[i]).c_str());
  std::printf("  (addresses above are the host buffers'; each device buffer has the same byte layout from a 256-byte "
              "aligned base)\n");
  std::printf("  scalars: sf =");
  for (float v : g_scalars.f) std::printf(" %.9g", double(v));
  std::printf("; sd =");
  for (double v : g_scalars.d) std::printf(" %.17g", v);
  std::printf("; si =");
  for (long long v : g_scalars.i) std::printf(" %lld", v);
  std::printf("; sb =");
  for (bool v : g_scalars.b) std::printf(" %d", int(v));
  std::printf("\n");
}

std::string index_text(const view_layout& l, std::size_t k) {
  dims idx{};
  for (int j = l.rank - 1; j >= 0; --j) {
    idx[std::size_t(j)] = std::int64_t(k % std::size_t(l.shape[std::size_t(j)]));
    k /= std::size_t(l.shape[std::size_t(j)]);
  }
  return dims_text(idx, l.rank);
}

}  // namespace

bool judge_gpu(draw& d, gpu_family fam, run_outcome& g, run_outcome& h, const std::string& describe, const options& o) {
  const bool close = fam == gpu_family::blocks || has_inexact_op(describe);
  if (o.inject && !g.out.empty() && !g.out[0].empty() && !d.out_type.empty()) {
    // bitwise cases: flip the lowest bit of output 0's middle element; cases
    // compared with a tolerance: swap NaN and non-NaN in every element of output
    // 0 (beyond any tolerance and any outlier allowance); integer outputs: +1
    const dt t = d.out_type[0];
    const std::size_t es = dt_size(t), n = g.out[0].size() / es;
    for (std::size_t k = close ? 0 : n / 2; k < (close ? n : n / 2 + 1); ++k) {
      unsigned char* p = g.out[0].data() + k * es;
      if (!close || !is_floating(t)) {
        if (t == dt::boolean) *p ^= 1;
        else p[0] ^= 1;
      } else if (is_nan(t, p)) {
        std::memset(p, 0, es);
      } else if (t == dt::f32) {
        const float v = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(p, &v, 4);
      } else if (t == dt::f64) {
        const double v = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(p, &v, 8);
      } else {
        const std::uint16_t v = t == dt::f16 ? 0x7e00 : 0x7fc0;
        std::memcpy(p, &v, 2);
      }
    }
  }
  std::string problem, tolerated_note;
  std::size_t bad_out = 0, bad_index = 0;
  bool have_index = false, differ = false;
  double worst = 0;
  std::string first_lines;  // the first bad elements (up to 5)
  if (!g.error.empty() || !h.error.empty()) {
    if (g.error.empty() || h.error.empty())
      problem = "exception on one side only: cuda: " + (g.error.empty() ? std::string("none") : g.error) +
                "; host: " + (h.error.empty() ? std::string("none") : h.error);
  } else if (!g.stray.empty() || !h.stray.empty()) {
    problem = "write outside the outputs: cuda: " + (g.stray.empty() ? std::string("none") : g.stray) +
              "; host: " + (h.stray.empty() ? std::string("none") : h.stray);
  } else {
    for (std::size_t i = 0; i < g.out.size() && problem.empty(); ++i) {
      const dt t = d.out_type[i];
      const std::size_t es = dt_size(t), n = g.out[i].size() / es;
      const tolerance tol = close ? tolerance_of(t) : tolerance{};
      double norm = 0;
      if (fam == gpu_family::blocks && is_floating(t))
        for (std::size_t k = 0; k < n; ++k) {
          const double v = to_double(t, h.out[i].data() + k * es);
          if (std::isfinite(v)) norm = std::max(norm, std::fabs(v));
        }
      const double abs_allowed = tol.atol + rtol_norm * norm;
      std::size_t outliers = 0;
      std::size_t shown = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const unsigned char *a = g.out[i].data() + k * es, *b = h.out[i].data() + k * es;
        if (std::memcmp(a, b, es) == 0) continue;
        const bool na = is_nan(t, a), nb = is_nan(t, b);
        if (na && nb) continue;
        differ = true;
        bool ok = false;
        if (close && is_floating(t) && !na && !nb) {
          const double x = to_double(t, a), y = to_double(t, b);
          if (std::isfinite(x) && std::isfinite(y)) {
            const double allowed = abs_allowed + tol.rtol * std::fabs(y);
            const double err = std::fabs(x - y);
            if (err <= allowed) {
              ok = true;
              worst = std::max(worst, allowed > 0 ? err / allowed : 0.0);
            }
          }
        }
        if (close && (t == dt::i32 || t == dt::i64)) {
          // an integer made from an inexact float value (a cast, or a max
          // with an int operand) is that float, within the f32 tolerance,
          // truncated or rounded: one step more (first GPU run: 12 vs 13,
          // -278977184 vs -278977248)
          const double x = to_double(t, a), y = to_double(t, b);
          ok = std::fabs(x - y) <= 1.0 + tolerance_of(dt::f32).rtol * std::fabs(y);
        }
        if (ok) continue;
        ++outliers;
        if (shown < 5) {
          ++shown;
          first_lines += "    output " + std::to_string(i) + " index " + index_text(d.out[i], k) + ": cuda " +
                         value_text(t, a) + ", host " + value_text(t, b);
          if (close && is_floating(t) && !na && !nb)
            first_lines += ", |difference| " + std::to_string(std::fabs(to_double(t, a) - to_double(t, b))) +
                           ", allowed " + std::to_string(abs_allowed + tol.rtol * std::fabs(to_double(t, b)));
          first_lines += "\n";
        }
        if (!have_index) bad_out = i, bad_index = k, have_index = true;
      }
      const std::size_t allowance = close ? n / outlier_divisor : 0;
      if (outliers > allowance)
        problem = "output " + std::to_string(i) + ": " + std::to_string(outliers) + " of " + std::to_string(n) +
                  " elements differ" + (close ? " beyond the tolerance (outliers allowed: " + std::to_string(allowance) + ")"
                                              : " (bitwise comparison)");
      else if (outliers > 0)
        tolerated_note += "output " + std::to_string(i) + ": " + std::to_string(outliers) + " of " +
                          std::to_string(n) + " elements beyond the tolerance (allowed: " + std::to_string(allowance) +
                          ")\n" + first_lines;
      if (problem.empty()) first_lines.clear();
    }
  }
  const bool ok = problem.empty();
  {
    gpu_stats& st = g_gpu[int(fam)];
    ++st.draws;
    (close ? st.close_mode : st.bitwise_mode) += 1;
    st.not_bitwise += differ;
    st.tolerated += ok && !tolerated_note.empty();
    st.both_threw += !g.error.empty() && !h.error.empty();
    long long elements = 0;
    for (const auto& l : d.out) elements += l.elements();
    st.elements += elements;
    st.empty += elements == 0;
    st.dense += d.dense;
    for (int a : d.out_alias) st.in_place += a >= 0;
    bool nan = false;
    for (std::size_t i = 0; i < h.out.size() && !nan; ++i)
      for (std::size_t k = 0; k < h.out[i].size() / dt_size(d.out_type[i]) && !nan; ++k)
        nan = is_nan(d.out_type[i], h.out[i].data() + k * dt_size(d.out_type[i]));
    st.nan_outputs += nan;
    if (worst > st.worst_ratio) st.worst_ratio = worst, st.worst_case = d.case_id, st.worst_seed = d.seed;
  }
  if (!tolerated_note.empty() && ok) {
    std::printf("FUZZ TOLERATED: %s case %d seed 0x%016llx (replay: %s --family %s --case %d --seed 0x%016llx): %s",
                family_text(fam), d.case_id, (unsigned long long)d.seed, g_gpu_program, family_text(fam), d.case_id,
                (unsigned long long)d.seed, tolerated_note.c_str());
  }
  if (!ok || o.verbose) {
    std::printf("%s: case %d seed 0x%016llx (replay: %s --family %s --case %d --seed 0x%016llx)\n",
                ok ? "FUZZ DRAW" : "FUZZ MISMATCH", d.case_id, (unsigned long long)d.seed, g_gpu_program,
                family_text(fam), d.case_id,
                (unsigned long long)d.seed);
    print_gpu_draw(d, fam, describe);
    std::printf("  kernels: cuda %zu, host %zu\n", g.kernels, h.kernels);
    std::printf("  comparison: %s\n", close ? "within the tolerance (README.md, GPU mode)" : "bitwise (NaN == NaN)");
    if (!g.error.empty() || !h.error.empty())
      std::printf("  errors: cuda: %s; host: %s\n", g.error.empty() ? "none" : g.error.c_str(),
                  h.error.empty() ? "none" : h.error.c_str());
    if (!ok) std::printf("  problem: %s\n", problem.c_str());
    if (have_index) {
      std::printf("  first differing elements:\n%s", first_lines.c_str());
      (void)bad_out;
      (void)bad_index;
    }
    std::fflush(stdout);
  }
  return ok;
}

bool attach_host_references(registry& gpu, const registry& host) {
  if (gpu.cases.size() != host.cases.size()) {
    std::printf("fuzz_gpu: %zu GPU cases but %zu host cases (case translation units out of date?)\n",
                gpu.cases.size(), host.cases.size());
    return false;
  }
  for (std::size_t k = 0; k < gpu.cases.size(); ++k) {
    gpu.cases[k].host_reference = host.cases[k].host_reference;
    gpu.cases[k].host_one_kernel = host.cases[k].host_one_kernel;
    if (gpu.cases[k].run && !gpu.cases[k].host_reference) {
      std::printf("fuzz_gpu: case %zu has no host reference\n", k);
      return false;
    }
  }
  return true;
}

namespace {
void print_gpu_summary(gpu_family f) {
  const gpu_stats& st = g_gpu[int(f)];
  std::printf("fuzz_gpu %s: %lld output elements; draws: %lld compared bitwise, %lld within the tolerance "
              "(%lld not bitwise equal, %lld with tolerated outliers); both sides threw %lld; empty outputs %lld, "
              "dense views %lld, in-place outputs %lld, NaN in the output %lld; worst |difference| / allowed %.3g "
              "(case %d seed 0x%016llx)\n",
              family_text(f), st.elements, st.bitwise_mode, st.close_mode, st.not_bitwise, st.tolerated, st.both_threw,
              st.empty, st.dense, st.in_place, st.nan_outputs, st.worst_ratio, st.worst_case,
              (unsigned long long)st.worst_seed);
}
}  // namespace

void print_gpu_summary_elementwise() { print_gpu_summary(gpu_family::elementwise); }
void print_gpu_summary_blocks() { print_gpu_summary(gpu_family::blocks); }

}  // namespace fz
