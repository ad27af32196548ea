#pragma once
/// @file expr/view.hpp
/// Non-owning tensor views: the leaves of every fusor expression.
#include <fusor/core/dtype.hpp>
#include <fusor/core/shape.hpp>

#include <cuda/std/mdspan>

namespace fusor {

/// Memory space of host (CPU-addressable) data.
struct host_space {
  static constexpr const char* name = "host";
};
/// Memory space of CUDA device data.
struct device_space {
  static constexpr const char* name = "device";
};

/// A non-owning, strided view of a tensor in memory.
///
/// @tparam T      element type: float, double, __half, __nv_bfloat16, a signed
///                or unsigned 8/16/32/64-bit integer, or bool, optionally const
///                (const views are inputs only).
/// @tparam Extents `fusor::extents<...>`: each extent static or `fusor::dyn`.
/// @tparam Space  host_space or device_space: where the data lives.
/// @tparam Id     void, or a tag type naming this tensor at compile time, so
///                that one tensor used twice in an expression is one node (one
///                load per element in a fused kernel, and rewrites such as
///                x * sigmoid(x) -> silu(x) can see that both x are the same).
///
/// Strides are in elements and may be 0 (a broadcast view) or arbitrary
/// (a transposed or sliced view); row-major strides are the default.
template <class T, class Extents, class Space = host_space, class Id = void>
struct tensor_view {
  static_assert(dtype<T>, "fusor: tensor_view: element type is not a fusor dtype "
                          "(float, double, __half, __nv_bfloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t, bool)");
  using element_type = T;
  using value_type = cuda::std::remove_cv_t<T>;
  using extents_type = Extents;
  using space = Space;
  using id = Id;
  using mdspan_type = cuda::std::mdspan<T, Extents, cuda::std::layout_stride>;
  static constexpr int rank = int(Extents::rank());

  mdspan_type md;

  FUSOR_HOST_DEVICE T* data() const { return md.data_handle(); }
  FUSOR_HOST_DEVICE const Extents& extents() const { return md.extents(); }
  FUSOR_HOST_DEVICE index_t extent(int d) const { return md.extent(d); }
  FUSOR_HOST_DEVICE index_t stride(int d) const { return md.stride(d); }

  /// Run-time extents.
  fusor::shape<rank> shape() const { return shape_of_extents(md.extents()); }
  /// Run-time strides in elements.
  fusor::shape<rank> strides() const {
    fusor::shape<rank> s{};
    for (int d = 0; d < rank; ++d) s[d] = md.stride(d);
    return s;
  }
  /// Number of elements (throws shape_error if it overflows int64).
  index_t size() const { return element_count<rank>(shape(), "tensor_view"); }
  /// True when the elements are dense and row-major (extent-1 dims ignored).
  bool is_contiguous() const {
    index_t expect = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (md.extent(d) != 1 && md.stride(d) != expect) return false;
      expect *= md.extent(d);
    }
    return true;
  }
  /// This view carrying the identity tag NewId (see the class comment).
  template <class NewId>
  tensor_view<T, Extents, Space, NewId> with_id() const {
    return {md};
  }
};

/// Row-major strides (elements) of a run-time shape.
template <int R>
shape<R> row_major_strides(const shape<R>& s) {
  shape<R> st{};
  index_t acc = 1;
  for (int d = R - 1; d >= 0; --d) {
    st[d] = acc;
    const index_t e = s[d] > 0 ? s[d] : 1;
    // Checked: extents whose product overflows int64 get saturated strides
    // here and a shape_error from size() before anything is read.
    if (d > 0) acc = acc > INT64_MAX / e ? INT64_MAX : acc * e;
  }
  return st;
}

/// A view of `data` in memory space Space with extents `e` and strides `strides`
/// (elements). No data is touched.
template <class Space, class T, cuda::std::size_t... E>
tensor_view<T, extents<E...>, Space> make_view(T* data, extents<E...> e,
                                               const shape<int(sizeof...(E))>& strides) {
  using X = extents<E...>;
  cuda::std::array<index_t, sizeof...(E)> st{};
  for (int d = 0; d < int(sizeof...(E)); ++d) st[d] = strides[d];  // (int: no unsigned d < 0 warning at rank 0)
  return {typename tensor_view<T, X, Space>::mdspan_type(data, cuda::std::layout_stride::mapping<X>(e, st))};
}

/// A row-major view of `data` with extents `e`.
template <class Space, class T, cuda::std::size_t... E>
tensor_view<T, extents<E...>, Space> make_view(T* data, extents<E...> e) {
  return make_view<Space>(data, e, row_major_strides<int(sizeof...(E))>(shape_of_extents(e)));
}

/// Host view with static/dynamic extents: `host_view(p, fusor::extents<4, fusor::dyn>(n))`.
template <class T, cuda::std::size_t... E>
auto host_view(T* data, extents<E...> e) { return make_view<host_space>(data, e); }
/// Host view with explicit strides (elements; 0 broadcasts).
template <class T, cuda::std::size_t... E>
auto host_view(T* data, extents<E...> e, const shape<int(sizeof...(E))>& strides) {
  return make_view<host_space>(data, e, strides);
}
/// Row-major host view with dynamic extents: `host_view(p, rows, cols)`.
template <class T, class... I>
  requires(cuda::std::is_integral_v<I> && ...)
auto host_view(T* data, I... n) { return make_view<host_space>(data, dextents<sizeof...(I)>(index_t(n)...)); }

/// Device view with static/dynamic extents (data must be CUDA device memory).
template <class T, cuda::std::size_t... E>
auto device_view(T* data, extents<E...> e) { return make_view<device_space>(data, e); }
/// Device view with explicit strides (elements; 0 broadcasts).
template <class T, cuda::std::size_t... E>
auto device_view(T* data, extents<E...> e, const shape<int(sizeof...(E))>& strides) {
  return make_view<device_space>(data, e, strides);
}
/// Row-major device view with dynamic extents.
template <class T, class... I>
  requires(cuda::std::is_integral_v<I> && ...)
auto device_view(T* data, I... n) { return make_view<device_space>(data, dextents<sizeof...(I)>(index_t(n)...)); }

// host_view / device_view given something that is not a pointer (a
// std::vector, a smart pointer, nullptr): one `fusor:` line instead of the
// overloads' deduction failures.
#define FUSOR_VIEW_FALLBACK(NAME)                                                                          \
  template <class P, class... I>                                                                            \
    requires(!cuda::std::is_pointer_v<cuda::std::remove_cvref_t<P>> &&                                      \
             !cuda::std::is_array_v<cuda::std::remove_cvref_t<P>>)                                           \
  auto NAME(const P&, const I&...) {                                                                        \
    static_assert(sizeof(P*) == 0, "fusor: " #NAME ": the first argument is not a pointer; " #NAME            \
                                   "(data, extents...) takes a typed pointer to the tensor's first element "  \
                                   "(e.g. v.data() of a std::vector), then the extents");                      \
    return 0;                                                                                               \
  }
FUSOR_VIEW_FALLBACK(host_view)
FUSOR_VIEW_FALLBACK(device_view)
#undef FUSOR_VIEW_FALLBACK

/// `tag<Id>(v)`: v with identity tag Id (same as v.with_id<Id>()).
template <class Id, class T, class E, class S, class Old>
tensor_view<T, E, S, Id> tag(const tensor_view<T, E, S, Old>& v) {
  return v.template with_id<Id>();
}

template <class V>
inline constexpr bool is_view_v = false;
template <class T, class E, class S, class I>
inline constexpr bool is_view_v<tensor_view<T, E, S, I>> = true;

}  // namespace fusor
