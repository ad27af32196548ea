#pragma once
/// @file exec/host_conv_transpose.hpp
/// conv_transpose2d on the host GEMM engine (issue 17: "fusor owns the
/// fusion; proven engines own the inner loops"), under the group's fused
/// producers (evaluated while packing) and epilogue (applied to each output
/// block while it is in cache).
///
/// The sub-pixel (phase) decomposition: along a dim with stride s, the
/// outputs o = r + s * q of one residue r (0 <= r < s) are reached by the
/// same taps, those k with (r + pad - k * dilation) divisible by s, each
/// from input q + (r + pad - k * dilation) / s. So per conv group and per
/// residue pair (rh, rw) the layer is one dense GEMM with no structural
/// zeros (unlike the "zero-insertion" form, which multiplies s^2 times as
/// many terms, or col2im, which scatters partial sums and so cannot apply a
/// fused epilogue per block):
///   C [N * Qh * Qw, C_out / groups] = A [N * Qh * Qw, C_in / groups * |Th| * |Tw|] * B,
/// A holding the input pixels (zero where a tap lands outside the input,
/// the padding), B the taps of the weight. The same decomposition is
/// PyTorch's and oneDNN's "deconvolution as strided convolutions" (see
/// docs/benchmarks.md, "Layers").
///
/// Numerics: each output is one fp32 (fp64 for f64) engine dot product over
/// its taps plus the bias, then the epilogue; the fused and unfused paths
/// make the same engine calls and agree bitwise; against the direct kernel
/// (the device algorithm, kernels/conv_transpose.hpp, still run by
/// gemm_engine = device_twin and by builds without OpenBLAS) they agree to
/// the rounding of a sum in another order. A weight that is Inf or NaN
/// sends the layer to the direct kernel: the GEMM multiplies the zeros of
/// A's out-of-input taps by their weights, and 0 * Inf is NaN where the
/// direct kernel forms no such term.
#include <fusor/exec/host_gemm.hpp>
#include <fusor/kernels/conv_transpose.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

namespace fusor::exec {

namespace host_conv_transpose_detail {

/// The outputs o = residue + stride * q (q < outputs) of one dim, and the
/// taps that reach them: tap taps[t] reads input q + offsets[t].
struct phase {
  index_t residue = 0, outputs = 0;
  std::vector<index_t> taps, offsets;
};

/// The phases of one dim: out outputs, kernel extent k.
inline std::vector<phase> phases_of(index_t out, index_t k, index_t stride, index_t pad, index_t dilation) {
  std::vector<phase> v;
  for (index_t r = 0; r < std::min(stride, out); ++r) {
    phase p;
    p.residue = r;
    p.outputs = (out - r + stride - 1) / stride;
    for (index_t t = 0; t < k; ++t) {
      const index_t num = r + pad - t * dilation;
      if (num % stride != 0) continue;  // (exact for negative num too: only 0 is tested)
      p.taps.push_back(t);
      p.offsets.push_back(num / stride);
    }
    v.push_back(std::move(p));
  }
  return v;
}

/// One GEMM of the decomposition: conv group g, phases ph x pw.
struct sub_gemm {
  index_t group = 0;
  int ph = 0, pw = 0;
  index_t rows = 0, depth = 0;  ///< M = N * Qh * Qw, K = C_in / groups * |Th| * |Tw|
  std::size_t b_offset = 0;     ///< of its packed B (depth x C_out / groups)
};

/// A block of rows of one sub-GEMM: the unit of work of a thread.
struct row_task {
  std::size_t sub = 0;
  index_t row0 = 0, rows = 0;
};

}  // namespace host_conv_transpose_detail

/// Runs conv_transpose2d kernel k (kernels::conv_transpose_rows) with the
/// host GEMM engine; false when the engine does not apply (no OpenBLAS,
/// gemm_engine = device_twin, sizes past the engine's 32-bit arguments) and
/// the caller runs the direct kernel.
/// @throws allocation_error the packing buffers cannot be allocated
template <class K>
bool run_host_conv_transpose_engine(const host_executor& ex, const K& k) {
#if !FUSOR_WITH_OPENBLAS
  (void)ex;
  (void)k;
  return false;
#else
  namespace d = host_conv_transpose_detail;
  namespace g = host_gemm_detail;
  using T = typename K::acc_type;
  if (ex.gemm_engine == host_gemm_engine::device_twin) return false;
  const kernels::conv_transpose_space& s = k.space;
  if (s.outputs == 0) return true;
  const index_t N = s.out_extent[0], CO = s.out_extent[1], copg = s.cout_per_group, cinpg = s.cin_per_group;
  const index_t groups = CO / copg;
  if (copg > INT_MAX) return false;
  const auto ph = d::phases_of(s.out_extent[2], s.k[0], s.stride[0], s.pad[0], s.dilation[0]);
  const auto pw = d::phases_of(s.out_extent[3], s.k[1], s.stride[1], s.pad[1], s.dilation[1]);

  // The sub-GEMMs and their packed B: B[(icl * |Th| + th) * |Tw| + tw, ocl] = w[ic, ocl, Th[th], Tw[tw]].
  std::vector<d::sub_gemm> subs;
  std::size_t b_elems = 0;
  index_t max_depth = 0;
  for (index_t grp = 0; grp < groups; ++grp)
    for (std::size_t a = 0; a < ph.size(); ++a)
      for (std::size_t c = 0; c < pw.size(); ++c) {
        d::sub_gemm sg{grp, int(a), int(c), N * ph[a].outputs * pw[c].outputs,
                       cinpg * index_t(ph[a].taps.size()) * index_t(pw[c].taps.size()), b_elems};
        if (sg.rows == 0) continue;
        if (sg.depth > INT_MAX) return false;
        max_depth = std::max(max_depth, sg.depth);
        b_elems += std::size_t(sg.depth * copg);
        subs.push_back(sg);
      }
  std::unique_ptr<T[]> bpack = g::buffer<T>(std::max<std::size_t>(b_elems, 1));
  // Rows per task: packed A (rows x depth) and the block of accumulators
  // (rows x C_out / groups) within the engine's per-thread packing budget.
  const index_t widest = std::max<index_t>({max_depth, copg, 1});
  const index_t mc =
      std::clamp<index_t>(index_t(host_gemm_pack_bytes / (std::size_t(widest) * sizeof(T))), 1, host_gemm_mc);
  std::vector<d::row_task> tasks;
  for (std::size_t i = 0; i < subs.size(); ++i)
    for (index_t r0 = 0; r0 < subs[i].rows; r0 += mc) tasks.push_back({i, r0, std::min(mc, subs[i].rows - r0)});

#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#else
  const int threads = 1;
#endif
  const int team = int(std::clamp<std::size_t>(tasks.size(), 1, std::size_t(threads)));
  std::unique_ptr<T[]> apack = g::buffer<T>(std::size_t(team) * std::size_t(mc * std::max<index_t>(max_depth, 1)));
  std::unique_ptr<T[]> cblock = g::buffer<T>(std::size_t(team) * std::size_t(mc * copg));
  const index_t pixels_h = s.in[0], pixels_w = s.in[1];

  g::blas_single_thread one_engine_thread;
  // B first, in its own pass: a tap that lands outside the input is a zero
  // of A times its weight in the GEMM, which the direct kernel (and the
  // scatter definition) never forms; 0 * Inf and 0 * NaN are NaN, so a
  // non-finite weight sends the layer to the direct kernel (IEEE behaviour as
  // the unfused reference), before anything is written.
  int nonfinite = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1) reduction(| : nonfinite)
#endif
  for (std::size_t i = 0; i < subs.size(); ++i) {
    const d::sub_gemm& sg = subs[i];
    const d::phase &a = ph[std::size_t(sg.ph)], &c = pw[std::size_t(sg.pw)];
    T* const dst = bpack.get() + sg.b_offset;
    index_t kk = 0;
    for (index_t icl = 0; icl < cinpg; ++icl)
      for (const index_t th : a.taps)
        for (const index_t tw : c.taps) {
          for (index_t ocl = 0; ocl < copg; ++ocl) {
            const T v = T(k.w.at(kernels::index_array<4>{sg.group * cinpg + icl, ocl, th, tw}));
            nonfinite |= std::isfinite(v) ? 0 : 1;
            dst[std::size_t(kk * copg + ocl)] = v;
          }
          ++kk;
        }
  }
  if (nonfinite) return false;
  std::unique_ptr<index_t[]> coords = g::buffer<index_t>(std::size_t(team) * std::size_t(3 * mc));

#if defined(_OPENMP)
#pragma omp parallel num_threads(team) if (team > 1)
#endif
  {
#if defined(_OPENMP)
    const int me = omp_get_thread_num();
#else
    const int me = 0;
#endif
    T* const my_a = apack.get() + std::size_t(me) * std::size_t(mc * std::max<index_t>(max_depth, 1));
    T* const my_c = cblock.get() + std::size_t(me) * std::size_t(mc * copg);
    index_t* const my_n = coords.get() + std::size_t(me) * std::size_t(3 * mc);  // (n, qh, qw) of each row of a task
    index_t* const my_qh = my_n + mc;
    index_t* const my_qw = my_qh + mc;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic)
#endif
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const d::row_task task = tasks[t];
      const d::sub_gemm& sg = subs[task.sub];
      const d::phase &a = ph[std::size_t(sg.ph)], &c = pw[std::size_t(sg.pw)];
      const index_t qw_n = c.outputs, per_image = a.outputs * c.outputs;
      const index_t nth = index_t(a.taps.size()), ntw = index_t(c.taps.size());
      // A transposed (depth x rows, rows fastest): consecutive rows are
      // consecutive input columns, so an NCHW input is read along its rows.
      const index_t rows = task.rows;
      for (index_t r = 0; r < rows; ++r) {
        const index_t m = task.row0 + r, q = m % per_image;
        my_n[r] = m / per_image;
        my_qh[r] = q / qw_n;
        my_qw[r] = q % qw_n;
      }
      index_t kk = 0;
      for (index_t icl = 0; icl < cinpg; ++icl) {
        const index_t ic = sg.group * cinpg + icl;
        for (index_t th = 0; th < nth; ++th)
          for (index_t tw = 0; tw < ntw; ++tw, ++kk) {
            const index_t oh = a.offsets[std::size_t(th)], ow = c.offsets[std::size_t(tw)];
            T* const col = my_a + std::size_t(kk * rows);
            for (index_t r = 0; r < rows; ++r) {
              const index_t ih = my_qh[r] + oh, iw = my_qw[r] + ow;
              col[r] = (ih >= 0 && ih < pixels_h && iw >= 0 && iw < pixels_w)
                           ? T(k.x.at(kernels::index_array<4>{my_n[r], ic, ih, iw}))
                           : T(0);
            }
          }
      }
      if (sg.depth > 0) {
        g::engine_gemm<T>(int(rows), int(copg), int(sg.depth), my_a, g::blas_layout{true, true, int(rows)},
                          bpack.get() + sg.b_offset, g::blas_layout{true, false, int(copg)}, my_c, int(copg), false);
      } else {
        std::fill(my_c, my_c + rows * copg, T(0));  // no tap reaches these outputs: the bias alone
      }
      for (index_t r = 0; r < rows; ++r) {
        const index_t n = my_n[r], oh = a.residue + s.stride[0] * my_qh[r], ow = c.residue + s.stride[1] * my_qw[r];
        for (index_t ocl = 0; ocl < copg; ++ocl) {
          const index_t oc = sg.group * copg + ocl;
          T acc = my_c[std::size_t(r * copg + ocl)];
          if constexpr (K::has_bias) acc += T(k.b.at(kernels::index_array<1>{oc}));
          k.out.put(kernels::index_array<4>{n, oc, oh, ow}, acc);
        }
      }
    }
  }
  return true;
#endif
}

}  // namespace fusor::exec
