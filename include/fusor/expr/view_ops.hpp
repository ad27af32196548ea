#pragma once
/// @file expr/view_ops.hpp
/// Shape operations on tensor views (ONNX Transpose, Slice, Unsqueeze,
/// Squeeze, Reshape, Flatten, Expand): each returns another view of the same
/// memory with new extents and strides, so nothing is copied and a fused
/// kernel reads the original elements through the new strides (a permuted
/// or sliced operand costs no kernel and no temporary).
///
/// Results have dynamic extents (`dextents<R>`) and no identity tag (a view
/// with another layout is another tensor). Axes may be negative (counted
/// from the end, as ONNX). Errors are `fusor::argument_error` (a bad axis, a
/// permutation that is not one, a negative step) or `fusor::shape_error` (a
/// squeezed dim that is not 1, a reshape that changes the element count or
/// that these strides cannot express), naming the op and the shapes.
///
/// These take views; ops/shape_ops.hpp takes expressions (pushed down to
/// their views, or applied to a computed value's temporary).
#include <fusor/expr/view.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

namespace fusor {

namespace view_ops_detail {
template <int R>
int normalize_axis(int axis, const char* op, const shape<R>& s, int rank = R) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw argument_error(std::string("fusor: ") + op + ": axis " + std::to_string(axis) + " is out of range for x " +
                         to_string<R>(s));
  return a;
}

/// NumPy's no-copy reshape (_attempt_nocopy_reshape) of a view with extents
/// `ext` and strides `st` (n > 0 elements) to extents `to` (same count):
/// the dims of extent 1 dropped, old and new dims grouped into runs of equal
/// element count; each old run must be contiguous in memory, and the new
/// dims of the run get row-major strides inside it. Writes them to `s`
/// (which holds row-major strides on entry: trailing dims of extent 1 keep
/// them); false when the strides cannot express `to`.
template <int R, int R2>
bool nocopy_strides(const shape<R>& ext, const shape<R>& st, const shape<R2>& to, shape<R2>& s) {
  index_t od[R > 0 ? R : 1] = {}, os[R > 0 ? R : 1] = {};
  int on = 0;
  for (int d = 0; d < R; ++d)
    if (ext[d] != 1) od[on] = ext[d], os[on] = st[d], ++on;
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < R2 && oi < on) {
    index_t np = to[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= R2) return false;
        np *= to[nj++];
      } else {
        if (oj >= on) return false;
        op *= od[oj++];
      }
    }
    for (int ok = oi; ok < oj - 1; ++ok)
      if (os[ok] != od[ok + 1] * os[ok + 1]) return false;
    s[nj - 1] = os[oj - 1];
    for (int nk = nj - 1; nk > ni; --nk) s[nk - 1] = s[nk] * to[nk];
    ni = nj++;
    oi = oj++;
  }
  return true;
}

template <class T, int R, class S>
tensor_view<T, dextents<R>, S> build(T* data, const shape<R>& ext, const shape<R>& st) {
  using X = dextents<R>;
  cuda::std::array<index_t, R> e{}, s{};
  for (int d = 0; d < R; ++d) e[d] = ext[d], s[d] = st[d];
  return {typename tensor_view<T, X, S>::mdspan_type(data, cuda::std::layout_stride::mapping<X>(X(e), s))};
}
}  // namespace view_ops_detail

/// The axes of a permute: `{2, 0, 1}` (a braced list), at most 8. Stored by
/// value (index_t entries, no padding), so a shape op over a computed value
/// can keep it in the expression (ops/view_map.hpp).
struct perm_list {
  static constexpr int max_count = 8;
  index_t count = 0;
  index_t axis[max_count] = {};
  perm_list() = default;
  perm_list(std::initializer_list<int> p) {
    if (p.size() > std::size_t(max_count))
      throw argument_error("fusor: permute: " + std::to_string(p.size()) + " axes given (rank 8 at most)");
    for (int a : p) axis[count++] = a;
  }
};

/// permute(v, {p0, ..., p(R-1)}): dim d of the result is dim p[d] of v
/// (ONNX Transpose's perm; torch.permute). Shape [x[p0], ..., x[p(R-1)]].
/// @throws argument_error perm is not a permutation of v's dims
template <class T, class X, class S, class I>
auto permute(const tensor_view<T, X, S, I>& v, const perm_list& perm) {
  constexpr int R = int(X::rank());
  namespace d = view_ops_detail;
  const shape<R> ext = v.shape(), st = v.strides();
  if (int(perm.count) != R)
    throw argument_error("fusor: permute: " + std::to_string(perm.count) + " axes given for x " + to_string<R>(ext) +
                         " of rank " + std::to_string(R));
  shape<R> e{}, s{};
  bool seen[R > 0 ? R : 1] = {};
  int k = 0;
  for (index_t i = 0; i < perm.count; ++i) {
    const int p = int(perm.axis[i]);
    const int a = d::normalize_axis<R>(p, "permute", ext);
    if (seen[a]) throw argument_error("fusor: permute: axis " + std::to_string(p) + " appears twice (x " + to_string<R>(ext) + ")");
    seen[a] = true;
    e[k] = ext[a];
    s[k] = st[a];
    ++k;
  }
  return d::build<T, R, S>(v.data(), e, s);
}

/// transpose(v, a, b): v with dims a and b swapped (torch.transpose).
/// @throws argument_error an axis is out of range
template <class T, class X, class S, class I>
auto transpose(const tensor_view<T, X, S, I>& v, int a, int b) {
  constexpr int R = int(X::rank());
  shape<R> ext = v.shape(), st = v.strides();
  const int i = view_ops_detail::normalize_axis<R>(a, "transpose", ext);
  const int j = view_ops_detail::normalize_axis<R>(b, "transpose", ext);
  std::swap(ext[i], ext[j]);
  std::swap(st[i], st[j]);
  return view_ops_detail::build<T, R, S>(v.data(), ext, st);
}

/// slice(v, axis, start, stop, step = 1): elements start, start + step, ...
/// up to (not including) stop along `axis` (ONNX Slice for one axis:
/// negative start/stop count from the end; for step > 0 both are clamped to
/// [0, extent], for step < 0 start to [0, extent - 1] and stop to
/// [-1, extent - 1], walking down: a negative stride). An empty range gives
/// extent 0.
/// @throws argument_error the axis is out of range, or step is 0
template <class T, class X, class S, class I>
auto slice(const tensor_view<T, X, S, I>& v, int axis, index_t start, index_t stop, index_t step = 1) {
  constexpr int R = int(X::rank());
  static_assert(R >= 1, "fusor: slice: the view needs rank >= 1");
  shape<R> ext = v.shape(), st = v.strides();
  const int a = view_ops_detail::normalize_axis<R>(axis, "slice", ext);
  if (step == 0) throw argument_error("fusor: slice: step 0 (ONNX Slice: steps are nonzero)");
  const index_t n = ext[a];
  const auto from_end = [n](index_t i) { return i < 0 ? i + n : i; };
  index_t b = 0, count = 0;
  if (step > 0) {
    b = std::clamp<index_t>(from_end(start), 0, n);
    const index_t e = std::clamp<index_t>(from_end(stop), 0, n);
    count = e > b ? (e - b + step - 1) / step : 0;
  } else if (n > 0) {
    b = std::clamp<index_t>(from_end(start), 0, n - 1);
    const index_t e = std::clamp<index_t>(from_end(stop), -1, n - 1);
    count = b > e ? (b - e - step - 1) / -step : 0;
  }
  T* data = count > 0 ? v.data() + b * st[a] : v.data();
  ext[a] = count;
  st[a] = st[a] * step;
  return view_ops_detail::build<T, R, S>(data, ext, st);
}

/// unsqueeze(v, axis): v with a new dim of extent 1 at `axis` of the result
/// (ONNX Unsqueeze, one axis; axis in [-(R+1), R]). Rank R + 1.
/// @throws argument_error the axis is out of range
template <class T, class X, class S, class I>
auto unsqueeze(const tensor_view<T, X, S, I>& v, int axis) {
  constexpr int R = int(X::rank());
  const shape<R> ext = v.shape(), st = v.strides();
  const int a = view_ops_detail::normalize_axis<R>(axis, "unsqueeze", ext, R + 1);
  shape<R + 1> e{}, s{};
  for (int d = 0, k = 0; d < R + 1; ++d) {
    if (d == a) {
      e[d] = 1;
      s[d] = 0;
    } else {
      e[d] = ext[k];
      s[d] = st[k];
      ++k;
    }
  }
  return view_ops_detail::build<T, R + 1, S>(v.data(), e, s);
}

/// squeeze(v, axis): v without dim `axis`, which must have extent 1 (ONNX
/// Squeeze, one axis). Rank R - 1.
/// @throws shape_error the dim's extent is not 1
template <class T, class X, class S, class I>
auto squeeze(const tensor_view<T, X, S, I>& v, int axis) {
  constexpr int R = int(X::rank());
  static_assert(R >= 1, "fusor: squeeze: the view needs rank >= 1");
  const shape<R> ext = v.shape(), st = v.strides();
  const int a = view_ops_detail::normalize_axis<R>(axis, "squeeze", ext);
  if (ext[a] != 1)
    throw shape_error("fusor: squeeze: dim " + std::to_string(axis) + " of x " + to_string<R>(ext) +
                      " has extent " + std::to_string(ext[a]) + ", not 1");
  shape<R - 1> e{}, s{};
  for (int d = 0, k = 0; d < R; ++d)
    if (d != a) e[k] = ext[d], s[k] = st[d], ++k;
  return view_ops_detail::build<T, R - 1, S>(v.data(), e, s);
}

namespace view_ops_detail {
/// expand(v, to) for a target of v's rank or above.
template <class T, class X, class S, class I, std::size_t N>
auto expand_to(const tensor_view<T, X, S, I>& v, const cuda::std::array<index_t, N>& to) {
  constexpr int R = int(X::rank()), R2 = int(N);
  const shape<R> ext = v.shape(), st = v.strides();
  shape<R2> s{}, out = to;
  for (int d = 0; d < R2; ++d) {
    const int k = d - (R2 - R);
    if (k < 0) {
      s[d] = 0;
    } else if (ext[k] == to[d]) {
      s[d] = st[k];
    } else if (ext[k] == 1) {
      s[d] = 0;
    } else if (to[d] == 1) {  // ONNX's bidirectional rule: a 1 in the shape keeps x's extent
      s[d] = st[k];
      out[d] = ext[k];
    } else {
      throw shape_error("fusor: expand: x " + to_string<R>(ext) + " does not broadcast to " + to_string<R2>(to));
    }
  }
  return build<T, R2, S>(v.data(), out, s);
}
}  // namespace view_ops_detail

/// expand(v, shape): v broadcast with `shape` (a fusor::shape<R2>; ONNX
/// Expand): dims right-aligned, an extent-1 dim of v (or a missing leading
/// dim) takes the shape's extent with stride 0, and, unlike NumPy's
/// broadcast_to, a 1 in `shape` keeps v's extent (ONNX's bidirectional
/// rule: x [3, 1] expanded with [2, 1, 6] is [2, 3, 6]). Rank max(R, R2): a
/// shorter shape is aligned on the right (x [2, 3, 4] with [3, 1]: [2, 3, 4]).
/// @throws shape_error v's shape does not broadcast to `shape`
template <class T, class X, class S, class I, std::size_t N>
auto expand(const tensor_view<T, X, S, I>& v, const cuda::std::array<index_t, N>& to) {
  constexpr int R = int(X::rank()), R2 = int(N);
  if constexpr (R2 < R) {
    // ONNX's shapes align on the right: a shorter target is padded with 1s
    // (which keep v's extents), so the result has v's rank
    cuda::std::array<index_t, std::size_t(R)> padded{};
    for (int d = 0; d < R; ++d) padded[std::size_t(d)] = d < R - R2 ? 1 : to[std::size_t(d - (R - R2))];
    return expand(v, padded);
  } else {
    return view_ops_detail::expand_to(v, to);
  }
}

/// reshape(v, shape): the same elements in row-major order with another
/// shape, a fusor::shape<R2> of rank R2 >= 1 (ONNX Reshape without 0
/// entries; one -1 stands for the remaining extent). Needs strides that can express the new shape (any
/// contiguous view can; a permuted or sliced view may not: then compute it
/// into a buffer first).
/// @throws shape_error the element counts differ, or v's strides cannot
///         express the new shape
template <class T, class X, class S, class I, std::size_t N>
auto reshape(const tensor_view<T, X, S, I>& v, cuda::std::array<index_t, N> to) {
  constexpr int R = int(X::rank()), R2 = int(N);
  const shape<R> ext = v.shape(), st = v.strides();
  const index_t n = v.size();
  int infer = -1;
  index_t known = 1;
  const cuda::std::array<index_t, N> written = to;
  for (int d = 0; d < R2; ++d) {
    if (to[d] == -1 && infer < 0) infer = d;
    else if (to[d] < 0) throw shape_error("fusor: reshape: target " + to_string<R2>(to) + " has a negative extent");
    else known *= to[d];
  }
  const auto mismatch = [&] {
    return shape_error("fusor: reshape: x " + to_string<R>(ext) + " has " + std::to_string(n) + " elements; the target " +
                       to_string<R2>(written) + " cannot hold them" +
                       (infer >= 0 ? " (its -1 would be " + std::to_string(n) + " / " + std::to_string(known) + ")"
                                   : " (it has " + std::to_string(known) + ")"));
  };
  if (infer >= 0) {
    if (known == 0 ? n != 0 : n % known != 0) throw mismatch();
    to[infer] = known == 0 ? 0 : n / known;  // (no elements and a 0 extent: the -1 is 0, as before)
  }
  index_t m = 1;
  for (int d = 0; d < R2; ++d) m *= to[d];
  if (m != n) throw mismatch();
  shape<R2> s = row_major_strides<R2>(to);
  if (n == 0) return view_ops_detail::build<T, R2, S>(v.data(), to, s);
  if (!view_ops_detail::nocopy_strides<R, R2>(ext, st, to, s))
    throw shape_error("fusor: reshape: x " + to_string<R>(ext) + " with strides " + to_string<R>(st) +
                      " cannot be viewed as " + to_string<R2>(to) + " without a copy; reshape fusor::contiguous(x) (a copy) instead");
  // trailing new dims of extent 1: any stride (keep the row-major ones)
  return view_ops_detail::build<T, R2, S>(v.data(), to, s);
}

/// flatten(v, axis = 1): a rank-2 view [x[0] * ... * x[axis-1], x[axis] *
/// ... * x[R-1]] (ONNX Flatten). Same conditions as reshape.
/// @throws argument_error axis out of [-R, R]; shape_error as reshape
template <class T, class X, class S, class I>
auto flatten(const tensor_view<T, X, S, I>& v, int axis = 1) {
  constexpr int R = int(X::rank());
  const shape<R> ext = v.shape();
  const int a = axis < 0 ? axis + R : axis;
  if (a < 0 || a > R)
    throw argument_error("fusor: flatten: axis " + std::to_string(axis) + " is out of range for x " + to_string<R>(ext));
  index_t outer = 1, inner = 1;
  for (int d = 0; d < R; ++d) (d < a ? outer : inner) *= ext[d];
  return reshape(v, shape<2>{outer, inner});
}

}  // namespace fusor
