#pragma once
/// @file kernels/resize.hpp
/// The resize kernel (ops/resize.hpp): one output element per call (a CUDA
/// thread; an OpenMP iteration on the host), over the row family's operands
/// (kernels/parts/rows.hpp). Source coordinates are computed in double, as
/// ONNX's reference does, so that nearest's rounding at exact halves and the
/// linear weights do not depend on fp32 rounding; the bilinear mix is in
/// double too and rounds once to the result type.
#include <fusor/kernels/parts/rows.hpp>
#include <fusor/ops/resize.hpp>

#include <cuda/std/cmath>

namespace fusor::kernels {

/// The output's extents and how spatial dim d (0: H at dim hd, 1: W at
/// hd + 1) maps output pixels to input coordinates.
template <int R>
struct resize_space {
  index_array<R> out_extent{};
  index_t outputs = 1;  ///< product of out_extent
  int hd = 2;
  index_t in[2]{}, out[2]{};
  double scale[2]{};
  resize_mode mode = resize_mode::nearest;
  resize_coordinates coordinates = resize_coordinates::half_pixel;
  resize_rounding rounding = resize_rounding::round_prefer_floor;

  /// x_original of output pixel x along spatial dim d (ONNX Resize). The
  /// resized length in the formulas is scale * input length, not rounded
  /// (ONNX's reference: with scales 0.6 over 4 pixels, align_corners divides
  /// by 2.4 - 1, not 2 - 1); with sizes, scale = output / input makes it the
  /// output extent.
  /// (math:: ops: IEEE round-to-nearest, never contracted into an FMA, so
  /// the device computes the host's coordinates bit for bit.)
  FUSOR_HOST_DEVICE double original(int d, index_t x) const {
    using namespace math;
    const double xr = double(x), s = scale[d], li = double(in[d]), lr = mul(s, li);
    const double half = sub(div(add(xr, 0.5), s), 0.5);
    switch (coordinates) {
      case resize_coordinates::half_pixel_symmetric: {
        const double adjustment = div(double(out[d]), lr), center = div(li, 2.0);
        return add(mul(center, sub(1.0, adjustment)), half);
      }
      case resize_coordinates::pytorch_half_pixel: return lr > 1 ? half : 0.0;
      case resize_coordinates::align_corners: return lr == 1 ? 0.0 : div(mul(xr, sub(li, 1.0)), sub(lr, 1.0));
      case resize_coordinates::asymmetric: return div(xr, s);
      default: return half;  // half_pixel
    }
  }
  /// i clamped to [0, in[d]) (ONNX's reference pads with the edge elements).
  FUSOR_HOST_DEVICE index_t clamp(int d, index_t i) const { return i < 0 ? 0 : (i >= in[d] ? in[d] - 1 : i); }
  /// The nearest input pixel of x_original xo along dim d.
  FUSOR_HOST_DEVICE index_t nearest(int d, double xo) const {
    const double f = cuda::std::floor(xo), frac = math::sub(xo, f);
    index_t i = index_t(f);
    switch (rounding) {
      case resize_rounding::round_prefer_ceil: i += frac >= 0.5 ? 1 : 0; break;
      case resize_rounding::floor: break;
      case resize_rounding::ceil: i += frac > 0 ? 1 : 0; break;
      default: i += frac > 0.5 ? 1 : 0; break;  // round_prefer_floor
    }
    return clamp(d, i);
  }
};

/// resize of operand x: nearest copies one input element, linear mixes the
/// four around the source coordinate with weights (1 - f, f) per dim.
template <int R, class X, class Out>
struct resize_rows {
  resize_space<R> space;
  X x;
  Out out;  ///< addressed by output indices

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<R> oi{};
    for (int d = R - 1; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    const int hd = space.hd, wd = space.hd + 1;
    const double yh = space.original(0, oi[hd]), yw = space.original(1, oi[wd]);
    index_array<R> at = oi;
    if (space.mode == resize_mode::nearest) {
      at[hd] = space.nearest(0, yh);
      at[wd] = space.nearest(1, yw);
      out.put(oi, x.at(at));
      return;
    }
    using namespace math;
    const double fh0 = cuda::std::floor(yh), fw0 = cuda::std::floor(yw);
    const double fh = sub(yh, fh0), fw = sub(yw, fw0);
    const index_t h0 = index_t(fh0), w0 = index_t(fw0);
    const auto v = [&](index_t h, index_t w) {
      at[hd] = space.clamp(0, h);
      at[wd] = space.clamp(1, w);
      return double(x.at(at));
    };
    const double top = add(mul(v(h0, w0), sub(1.0, fw)), mul(v(h0, w0 + 1), fw));
    const double bottom = add(mul(v(h0 + 1, w0), sub(1.0, fw)), mul(v(h0 + 1, w0 + 1), fw));
    // (the double goes to the store as it is: one rounding to the result type,
    // as ONNX's reference casts its float64 mix once)
    out.put(oi, add(mul(top, sub(1.0, fh)), mul(bottom, fh)));
  }
};

}  // namespace fusor::kernels
