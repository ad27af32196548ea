#pragma once
/// @file exec/pad.hpp
/// Binding and launching of a pad group (ops/pad.hpp; kernel
/// kernels::pad_rows): its operand addressed by input indices, the sink and
/// epilogue by output indices; launched by launch_outputs
/// (exec/row_binding.hpp: one output per thread).
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/pad.hpp>

namespace fusor::exec {

/// Binds pad group e (pad node `pd` under an optional elementwise epilogue
/// of its result's shape) to output `o` and runs it.
template <class Ex, class E, class Pd, class O>
void run_pad(const Ex& ex, const E& e, const Pd& pd, const O& o) {
  using T = value_t<Pd>;
  const auto& x = fusor::get<0>(pd.args);
  constexpr int R = rank_v<Pd>;
  const shape<R> in = shape_of(x), os = shape_of(pd);
  kernels::pad_space<R> space;
  for (int d = 0; d < R; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
    space.lo[d] = pd.op.begin[d] < 0 ? -pd.op.begin[d] : 0;
    space.before[d] = pd.op.begin[d] > 0 ? pd.op.begin[d] : 0;
    space.kept[d] = pd.op.kept(d, in[d]);
  }
  space.mode = pd.op.mode;
  const T value = from_compute<T>(pd.op.value);  // (integers saturate, NaN -> 0; 16-bit floats rounded once)
  auto xo = make_row_operand<R>(x);
  auto out = make_output_writer<R, T, is_pad_node_v<E>>(e, o);
  launch_outputs(ex, kernels::pad_rows<R, T, decltype(xo), decltype(out)>{space, xo, out, value}, "pad");
}

}  // namespace fusor::exec
