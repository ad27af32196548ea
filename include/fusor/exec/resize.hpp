#pragma once
/// @file exec/resize.hpp
/// Binding and launching of a resize group (ops/resize.hpp; kernel
/// kernels::resize_rows): its operand addressed by input indices, the sink
/// and epilogue by output indices; launched by launch_outputs
/// (exec/row_binding.hpp: one output per thread).
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/resize.hpp>

namespace fusor::exec {

/// Binds resize group e (resize node `rz` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it.
template <class Ex, class E, class Rz, class O>
void run_resize(const Ex& ex, const E& e, const Rz& rz, const O& o) {
  constexpr int R = 4;
  const auto& x = fusor::get<0>(rz.args);
  const shape<R> in = shape_of(x), os = shape_of(rz);
  kernels::resize_space<R> space;
  for (int d = 0; d < R; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  space.hd = rz.op.h_dim();
  for (int d = 0; d < 2; ++d) {
    space.in[d] = in[space.hd + d];
    space.out[d] = os[space.hd + d];
    space.scale[d] = rz.op.coordinate_scale(d, in[space.hd + d]);
  }
  space.mode = rz.op.params.mode;
  space.coordinates = rz.op.params.coordinates;
  space.rounding = rz.op.params.rounding;
  auto xo = make_row_operand<R>(x);
  auto out = make_output_writer<R, value_t<Rz>, is_resize_node_v<E>>(e, o);
  launch_outputs(ex, kernels::resize_rows<R, decltype(xo), decltype(out)>{space, xo, out}, "resize");
}

}  // namespace fusor::exec
