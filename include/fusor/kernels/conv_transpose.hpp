#pragma once
/// @file kernels/conv_transpose.hpp
/// The conv_transpose2d kernel (ops/conv_transpose.hpp): one output element
/// per call (a CUDA thread; an OpenMP iteration on the host), over the row
/// family's operands (kernels/parts/rows.hpp). Each output pixel gathers
/// the input pixels whose kernel footprint covers it: along a dim, tap k
/// reaches output o from input (o + pad - k * dilation) / stride when that
/// divides exactly and lands inside the input.
#include <fusor/kernels/parts/rows.hpp>
#include <fusor/ops/conv_transpose.hpp>

namespace fusor::kernels {

/// Extents and attributes of one conv_transpose2d.
struct conv_transpose_space {
  index_array<4> out_extent{};  ///< [N, C_out, OH, OW]
  index_t outputs = 1;          ///< product of out_extent
  index_t in[2]{}, k[2]{}, stride[2]{}, pad[2]{}, dilation[2]{};
  index_t cin_per_group = 1, cout_per_group = 1;
};

/// conv_transpose2d of operand x [N, C_in, H, W] with weight operand w
/// [C_in, C_out / groups, kH, kW] and bias operand b [C_out] (HasBias),
/// accumulated in Acc.
template <class Acc, bool HasBias, class X, class W, class B, class Out>
struct conv_transpose_rows {
  using acc_type = Acc;                        ///< the accumulator (float, or double for f64)
  static constexpr bool has_bias = HasBias;
  conv_transpose_space space;
  X x;
  W w;
  B b;
  Out out;  ///< addressed by output indices

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<4> oi{};
    for (int d = 3; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    const index_t oc = oi[1], group = oc / space.cout_per_group, ocl = oc % space.cout_per_group;
    Acc acc = 0;
    for (index_t kh = 0; kh < space.k[0]; ++kh) {
      const index_t th = oi[2] + space.pad[0] - kh * space.dilation[0];
      if (th < 0 || th % space.stride[0] != 0) continue;
      const index_t ih = th / space.stride[0];
      if (ih >= space.in[0]) continue;
      for (index_t kw = 0; kw < space.k[1]; ++kw) {
        const index_t tw = oi[3] + space.pad[1] - kw * space.dilation[1];
        if (tw < 0 || tw % space.stride[1] != 0) continue;
        const index_t iw = tw / space.stride[1];
        if (iw >= space.in[1]) continue;
        for (index_t icl = 0; icl < space.cin_per_group; ++icl) {
          const index_t ic = group * space.cin_per_group + icl;
          acc += Acc(x.at(index_array<4>{oi[0], ic, ih, iw})) * Acc(w.at(index_array<4>{ic, ocl, kh, kw}));
        }
      }
    }
    if constexpr (HasBias) acc += Acc(b.at(index_array<1>{oc}));
    out.put(oi, acc);
  }
};

}  // namespace fusor::kernels
