#pragma once
/// @file exec/conv_transpose.hpp
/// Binding and launching of a conv_transpose2d group (ops/conv_transpose.hpp;
/// kernel kernels::conv_transpose_rows): x, w and the bias as row operands
/// addressed by their own indices, the sink and epilogue by output indices;
/// launched by launch_conv_transpose: on the host the GEMM engine's phase
/// decomposition (exec/host_conv_transpose.hpp), else launch_outputs
/// (exec/row_binding.hpp: one output per thread, the device algorithm).
#include <fusor/exec/host_conv_transpose.hpp>
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/conv_transpose.hpp>

#include <type_traits>

namespace fusor::exec {

/// Runs conv_transpose2d kernel k on the host: the GEMM engine when it
/// applies (exec/host_conv_transpose.hpp), else the direct kernel.
template <class K>
void launch_conv_transpose(const host_executor& ex, const K& k) {
  if (!rehearsing() && run_host_conv_transpose_engine(ex, k)) {
    count_launches(ex);
    return;
  }
  launch_outputs(ex, k, "conv_transpose2d");
}
/// ... and on the device: the direct kernel, one output per thread.
template <class K>
void launch_conv_transpose(const cuda_executor& ex, const K& k) {
  launch_outputs(ex, k, "conv_transpose2d");
}

/// Binds conv_transpose2d group e (node `ct` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it.
template <class Ex, class E, class Ct, class O>
void run_conv_transpose(const Ex& ex, const E& e, const Ct& ct, const O& o) {
  using T = value_t<Ct>;
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const auto& x = fusor::get<0>(ct.args);
  const auto& w = fusor::get<1>(ct.args);
  const auto& b = fusor::get<2>(ct.args);
  using Bv = std::remove_cvref_t<decltype(b)>;
  constexpr bool has_bias = !is_constant_v<Bv>;  // (an absent bias is the constant 0 marker)
  const shape<4> xs = shape_of(x), ws = shape_of(w), os = shape_of(ct);
  const auto& p = ct.op.params;
  kernels::conv_transpose_space space;
  for (int d = 0; d < 4; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  for (int d = 0; d < 2; ++d) {
    space.in[d] = xs[2 + d];
    space.k[d] = ws[2 + d];
    space.stride[d] = p.stride[d];
    space.pad[d] = p.padding[d];
    space.dilation[d] = p.dilation[d];
  }
  space.cin_per_group = xs[1] / p.groups;
  space.cout_per_group = ws[1];
  auto xo = make_row_operand<4>(x);
  auto wo = make_row_operand<4>(w);
  auto bo = [&] {
    if constexpr (has_bias) return make_row_operand<1>(b);
    else return 0;
  }();
  auto out = make_output_writer<4, T, is_conv_transpose2d_node_v<E>>(e, o);
  launch_conv_transpose(
      ex, kernels::conv_transpose_rows<Acc, has_bias, decltype(xo), decltype(wo), decltype(bo), decltype(out)>{
              space, xo, wo, bo, out});
}

}  // namespace fusor::exec
