#pragma once
/// @file ops/reducers.hpp
/// One struct per reduction kind, as Eigen's reducers (TensorFunctors.h):
/// its name, FLOPs per reduced element, whether the result is floating (an
/// integer input then reduces in f32), its accumulator (identity, push,
/// merge) and its finalize. The row-reduction kernel is generic over them
/// (kernels/reduction.hpp, reduce_rows); op::reduce reads its name, FLOPs and
/// result type from them. Adding a kind (prod, say) is an enumerator, one
/// reducer specialization and one factory line (FUSOR_REDUCE_FN in
/// ops/reduction.hpp). Device-safe: FUSOR_HOST_DEVICE, cuda::std only.
#include <fusor/core/shape.hpp>
#include <fusor/ops/elementwise.hpp>

#include <cuda/std/limits>

namespace fusor {

/// The reductions of op::reduce.
enum class reduce_kind : int { sum, mean, max, min, sum_square, l2, logsumexp, prod, l1, log_sum };

namespace reducers {

template <class T>
FUSOR_HOST_DEVICE constexpr T lowest_value() {
  if constexpr (cuda::std::numeric_limits<T>::has_infinity) return -cuda::std::numeric_limits<T>::infinity();
  else return cuda::std::numeric_limits<T>::lowest();
}
template <class T>
FUSOR_HOST_DEVICE constexpr T highest_value() {
  if constexpr (cuda::std::numeric_limits<T>::has_infinity) return cuda::std::numeric_limits<T>::infinity();
  else return cuda::std::numeric_limits<T>::max();
}

/// sum (identity -0.0: -0.0 + x == x for every x, so sum of -0.0s is -0.0).
template <class T>
struct sum_acc {
  T v;
  FUSOR_HOST_DEVICE static sum_acc identity() { return {T(-0.0)}; }
  FUSOR_HOST_DEVICE void push(T x) { v = math::add(v, x); }
  FUSOR_HOST_DEVICE static sum_acc merge(sum_acc a, sum_acc b) { return {math::add(a.v, b.v)}; }
  /// Lane l of a pack accumulator (host packs, kernels/parts/host_rows.hpp).
  sum_acc<scalar_of_t<T>> lane(int l) const { return {lane_of(v, l)}; }
};
/// sum of squares.
template <class T>
struct sumsq_acc : sum_acc<T> {
  FUSOR_HOST_DEVICE static sumsq_acc identity() { return {{T(0)}}; }
  FUSOR_HOST_DEVICE void push(T x) { this->v = math::add(this->v, math::mul(x, x)); }
  FUSOR_HOST_DEVICE static sumsq_acc merge(sumsq_acc a, sumsq_acc b) { return {{math::add(a.v, b.v)}}; }
  sumsq_acc<scalar_of_t<T>> lane(int l) const { return {{lane_of(this->v, l)}}; }
};
/// product (identity 1; integers wrap, as op::mul).
template <class T>
struct prod_acc {
  T v;
  FUSOR_HOST_DEVICE static prod_acc identity() { return {T(1)}; }
  FUSOR_HOST_DEVICE void push(T x) { v = math::mul(v, x); }
  FUSOR_HOST_DEVICE static prod_acc merge(prod_acc a, prod_acc b) { return {math::mul(a.v, b.v)}; }
  prod_acc<scalar_of_t<T>> lane(int l) const { return {lane_of(v, l)}; }
};
/// sum of absolute values.
template <class T>
struct l1_acc : sum_acc<T> {
  FUSOR_HOST_DEVICE static l1_acc identity() { return {{T(0)}}; }
  FUSOR_HOST_DEVICE void push(T x) { this->v = math::add(this->v, op::abs{}(x)); }
  FUSOR_HOST_DEVICE static l1_acc merge(l1_acc a, l1_acc b) { return {{math::add(a.v, b.v)}}; }
  l1_acc<scalar_of_t<T>> lane(int l) const { return {{lane_of(this->v, l)}}; }
};
/// max with NaN propagation and max(-0, +0) = +0 (op::max).
template <class T>
struct max_acc {
  T v;
  FUSOR_HOST_DEVICE static max_acc identity() { return {T(lowest_value<scalar_of_t<T>>())}; }
  FUSOR_HOST_DEVICE void push(T x) { v = op::max{}(v, x); }
  FUSOR_HOST_DEVICE static max_acc merge(max_acc a, max_acc b) { return {op::max{}(a.v, b.v)}; }
  max_acc<scalar_of_t<T>> lane(int l) const { return {lane_of(v, l)}; }
};
/// min with NaN propagation.
template <class T>
struct min_acc {
  T v;
  FUSOR_HOST_DEVICE static min_acc identity() { return {T(highest_value<scalar_of_t<T>>())}; }
  FUSOR_HOST_DEVICE void push(T x) { v = op::min{}(v, x); }
  FUSOR_HOST_DEVICE static min_acc merge(min_acc a, min_acc b) { return {op::min{}(a.v, b.v)}; }
  min_acc<scalar_of_t<T>> lane(int l) const { return {lane_of(v, l)}; }
};

/// Online (max, sum of exp(x - max)): logsumexp and softmax. While every
/// element so far is -inf, s is 0 (no exp(-inf - -inf) = NaN).
template <class T>
struct lse_acc {
  T m, s;
  FUSOR_HOST_DEVICE static lse_acc identity() { return {T(lowest_value<scalar_of_t<T>>()), T(0)}; }
  FUSOR_HOST_DEVICE static lse_acc merge(lse_acc a, lse_acc b) {
    const T m = op::max{}(a.m, b.m);
    if constexpr (is_pack_v<T>) {  // (the same per lane, with selects)
      const T sa = math::select(a.s == T(0), T(0), math::mul(a.s, math::exp(math::sub(a.m, m))));
      const T sb = math::select(b.s == T(0), T(0), math::mul(b.s, math::exp(math::sub(b.m, m))));
      return {m, math::select(m == T(lowest_value<scalar_of_t<T>>()), T(0), math::add(sa, sb))};
    } else {
      if (m == lowest_value<T>()) return {m, T(0)};
      const T sa = a.s == T(0) ? T(0) : math::mul(a.s, math::exp(math::sub(a.m, m)));
      const T sb = b.s == T(0) ? T(0) : math::mul(b.s, math::exp(math::sub(b.m, m)));
      return {m, math::add(sa, sb)};
    }
  }
  lse_acc<scalar_of_t<T>> lane(int l) const { return {lane_of(m, l), lane_of(s, l)}; }
  FUSOR_HOST_DEVICE void push(T x) { *this = merge(*this, {x, T(1)}); }
  /// log(sum(exp(x))); +-inf max gives +-inf (log of an infinite/zero sum).
  FUSOR_HOST_DEVICE T logsumexp() const {
    if (!(m > lowest_value<T>() && m < highest_value<T>())) return m;
    return math::add(m, math::log(s));
  }
};

}  // namespace reducers

/// The reducer of kind K (specialized below, one struct per kind).
template <reduce_kind K>
struct reducer;

/// sum (ONNX ReduceSum): an empty sum is +0.0 (ONNX, NumPy); the -0.0
/// identity only keeps a sum of -0.0s at -0.0.
template <>
struct reducer<reduce_kind::sum> {
  static constexpr const char* name = "sum";
  static constexpr double flops = 1;
  static constexpr bool floating = false;
  template <class T>
  using accumulator = reducers::sum_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t len) { return len == 0 ? T(0) : a.v; }
};
/// mean (ONNX ReduceMean): the sum divided by the reduced count.
template <>
struct reducer<reduce_kind::mean> {
  static constexpr const char* name = "mean";
  static constexpr double flops = 1;
  static constexpr bool floating = true;
  template <class T>
  using accumulator = reducers::sum_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t len) { return math::div(a.v, T(len)); }
};
/// max (ONNX ReduceMax): NaN propagates, max(-0, +0) = +0.
template <>
struct reducer<reduce_kind::max> {
  static constexpr const char* name = "max_reduce";
  static constexpr double flops = 1;
  static constexpr bool floating = false;
  template <class T>
  using accumulator = reducers::max_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return a.v; }
};
/// min (ONNX ReduceMin): NaN propagates.
template <>
struct reducer<reduce_kind::min> {
  static constexpr const char* name = "min_reduce";
  static constexpr double flops = 1;
  static constexpr bool floating = false;
  template <class T>
  using accumulator = reducers::min_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return a.v; }
};
/// sum of squares (ONNX ReduceSumSquare).
template <>
struct reducer<reduce_kind::sum_square> {
  static constexpr const char* name = "sum_square";
  static constexpr double flops = 2;
  static constexpr bool floating = false;
  template <class T>
  using accumulator = reducers::sumsq_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return a.v; }
};
/// Euclidean norm (ONNX ReduceL2): sqrt of the sum of squares.
template <>
struct reducer<reduce_kind::l2> {
  static constexpr const char* name = "l2_norm";
  static constexpr double flops = 1;
  static constexpr bool floating = true;
  template <class T>
  using accumulator = reducers::sumsq_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return math::sqrt(a.v); }
};
/// log(sum(exp(x))) (ONNX ReduceLogSumExp), online and stable (lse_acc).
template <>
struct reducer<reduce_kind::logsumexp> {
  static constexpr const char* name = "logsumexp";
  static constexpr double flops = 10;
  static constexpr bool floating = true;
  template <class T>
  using accumulator = reducers::lse_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return a.logsumexp(); }
};

/// product (ONNX ReduceProd): an empty product is 1.
template <>
struct reducer<reduce_kind::prod> {
  static constexpr const char* name = "prod";
  static constexpr double flops = 1;
  static constexpr bool floating = false;
  template <class T>
  using accumulator = reducers::prod_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return a.v; }
};
/// sum of absolute values (ONNX ReduceL1).
template <>
struct reducer<reduce_kind::l1> {
  static constexpr const char* name = "l1_norm";
  static constexpr double flops = 2;
  static constexpr bool floating = false;
  template <class T>
  using accumulator = reducers::l1_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t) { return a.v; }
};
/// log of the sum (ONNX ReduceLogSum): log(0) = -inf for an empty or
/// all-zero sum.
template <>
struct reducer<reduce_kind::log_sum> {
  static constexpr const char* name = "log_sum";
  static constexpr double flops = 1;
  static constexpr bool floating = true;
  template <class T>
  using accumulator = reducers::sum_acc<T>;
  template <class T, class A>
  FUSOR_HOST_DEVICE static T finalize(const A& a, index_t len) { return math::log(len == 0 ? T(0) : a.v); }
};

}  // namespace fusor
