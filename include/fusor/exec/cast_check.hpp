#pragma once
/// @file exec/cast_check.hpp
/// The host's check of floating -> integer casts (issue 21: ONNX Cast
/// leaves NaN -> integer undefined; fusor refuses it on the host rather
/// than store an arbitrary number). Before anything is written, each
/// `cast<I>(a)` with I an integer and a floating, `a` an elementwise
/// expression over the inputs (the usual ONNX Cast of a tensor), is
/// evaluated once over its shape (an extra read of its inputs) and a NaN is
/// an argument_error naming cast, the position and the operand's shape. A
/// cast of a reduction's, contraction's or attention's result is not
/// checked (its operand exists only inside the plan): NaN gives 0 there,
/// as on the CUDA executor, which does not check (cvt.rzi.sat).
#include <fusor/exec/row_binding.hpp>

#include <string>

namespace fusor::exec {

namespace cast_check_detail {
template <class E>
inline constexpr bool float_to_int_cast_v = false;
template <class T, class A>
inline constexpr bool float_to_int_cast_v<node<op::cast_to<T>, A>> =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && std::is_floating_point_v<value_t<A>>;
/// True when E holds such a cast (a type-level test: expressions without one
/// instantiate no walker).
template <class E>
inline constexpr bool has_float_to_int_cast_v = false;
template <class Op, class... A>
inline constexpr bool has_float_to_int_cast_v<node<Op, A...>> =
    float_to_int_cast_v<node<Op, A...>> || (has_float_to_int_cast_v<A> || ...);
template <class... E>
inline constexpr bool has_float_to_int_cast_v<siblings_expr<E...>> = (has_float_to_int_cast_v<E> || ...);
}  // namespace cast_check_detail

/// Throws argument_error for the first NaN that a checked floating ->
/// integer cast in e would convert (see the file comment).
template <class E>
void check_cast_nan(const E& e) {
  if constexpr (!cast_check_detail::has_float_to_int_cast_v<E>) {
    (void)e;
  } else if constexpr (is_siblings_v<E>) {
    std::apply([](const auto&... x) { (check_cast_nan(x), ...); }, e.exprs);
  } else if constexpr (is_node_v<E>) {
    if constexpr (cast_check_detail::float_to_int_cast_v<E>) {
      const auto& a = fusor::get<0>(e.args);
      using A = std::remove_cvref_t<decltype(a)>;
      constexpr int R = rank_v<A>;
      if constexpr (R >= 1 && !contains_expensive_v<A>) {
        const shape<R> s = shape_of(a);
        index_t n = 1;
        for (int d = 0; d < R; ++d) n *= s[d];
        const auto xo = make_row_operand<R>(a);
        const auto at = [&](index_t o) {
          kernels::index_array<R> idx{};
          for (int d = R - 1; d >= 0; --d) {
            idx[d] = o % s[d];
            o /= s[d];
          }
          return idx;
        };
        bool nan = false;
#if defined(_OPENMP)
#pragma omp parallel for reduction(|| : nan) if (n > (index_t(1) << 16))
#endif
        for (index_t o = 0; o < n; ++o) {
          const auto v = xo.at(at(o));
          nan = nan || v != v;
        }
        if (nan) {
          for (index_t o = 0; o < n; ++o) {
            const auto v = xo.at(at(o));
            if (v != v) {
              const auto idx = at(o);
              std::string pos = "[";
              for (int d = 0; d < R; ++d) pos += (d ? ", " : "") + std::to_string(idx[d]);
              throw argument_error("fusor: cast: NaN at " + pos + "] of its operand " + to_string<R>(s) +
                                   " cannot be converted to " + dtype_traits<typename E::op_type::target>::name +
                                   " (ONNX Cast leaves it undefined; fusor refuses it on the host)");
            }
          }
        }
      }
    }
    fusor::apply([](const auto&... x) { (check_cast_nan(x), ...); }, e.args);
  }
}

}  // namespace fusor::exec
