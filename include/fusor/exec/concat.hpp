#pragma once
/// @file exec/concat.hpp
/// Binding and launching of a concat group (ops/concat.hpp; kernel
/// kernels::concat_rows): each input a row operand addressed by its own
/// indices, the sink and epilogue by output indices; launched by
/// launch_outputs (exec/row_binding.hpp: one output per thread).
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/concat.hpp>

#include <utility>

namespace fusor::exec {

/// Binds concat group e (concat node `cn` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it.
template <class Ex, class E, class Cn, class O>
void run_concat(const Ex& ex, const E& e, const Cn& cn, const O& o) {
  using T = value_t<Cn>;
  constexpr int R = rank_v<Cn>;
  constexpr int N = int(fusor::tuple_size_v<std::remove_cvref_t<decltype(cn.args)>>);
  const shape<R> os = shape_of(cn);
  kernels::concat_space<R, N> space;
  for (int d = 0; d < R; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  space.axis = cn.op.axis;
  int k = 0;
  fusor::apply([&](const auto&... x) { ((space.start[k + 1] = space.start[k] + shape_of(x)[space.axis], ++k), ...); },
               cn.args);
  auto xs = fusor::apply([](const auto&... x) { return fusor::make_tuple(make_row_operand<R>(x)...); }, cn.args);
  auto out = make_output_writer<R, T, is_concat_node_v<E>>(e, o);
  launch_outputs(ex, kernels::concat_rows<R, N, decltype(xs), decltype(out)>{space, xs, out}, "concat");
}

}  // namespace fusor::exec
