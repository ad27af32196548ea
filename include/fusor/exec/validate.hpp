#pragma once
/// @file exec/validate.hpp
/// Checks run before any kernel is launched, so outputs are untouched when
/// one fails: run-time shape inference (shape_error naming the op and the
/// shapes), null data (argument_error naming the operand), and outputs that
/// partially overlap an input or each other (argument_error). An output that
/// exactly aliases an input of the same shape and strides (in-place) is fine:
/// each element is read before it is written.
#include <fusor/recognize/decomposed.hpp>
#include <fusor/plan/describe.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <typeinfo>
#include <vector>

// same_attributes clears op padding before comparing bytes where the
// compiler can (FUSOR_HAS_CLEAR_PADDING, config.hpp).
#include <fusor/config.hpp>

namespace fusor::exec {

/// A byte range [lo, hi) that a view may touch.
struct byte_range {
  std::uintptr_t lo = 0, hi = 0;
};

template <class V>
byte_range range_of(const V& v) {
  if (v.size() == 0) return {};
  using T = typename V::value_type;
  std::intptr_t lo = 0, hi = 0;
  for (int d = 0; d < V::rank; ++d) {
    const std::intptr_t span = std::intptr_t(v.stride(d)) * std::intptr_t(v.extent(d) - 1);
    (span < 0 ? lo : hi) += span;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(v.data());
  return {base + std::uintptr_t(lo * std::intptr_t(sizeof(T))), base + std::uintptr_t((hi + 1) * std::intptr_t(sizeof(T)))};
}

/// Where a view's elements lie: base address, element size, and its extents
/// and strides (elements), for the element-set overlap test.
struct view_layout {
  std::uintptr_t base = 0;
  std::size_t element_bytes = 0;
  std::vector<index_t> extent, stride;
  byte_range range;
};
template <class V>
view_layout view_layout_of(const V& v) {
  view_layout l{reinterpret_cast<std::uintptr_t>(v.data()), sizeof(typename V::value_type), {}, {}, range_of(v)};
  for (int d = 0; d < V::rank; ++d) {
    l.extent.push_back(v.extent(d));
    l.stride.push_back(v.stride(d));
  }
  return l;
}

namespace detail {
/// Is there an index difference delta (|delta_k| <= extent_k - 1) with
/// sum(stride_k * delta_k) == d? dims: (|stride|, extent) sorted by |stride|
/// descending, nested (each |stride| above what all smaller dims reach).
/// At most two candidates per dim: at most 2^rank steps.
inline bool reaches(const std::vector<std::pair<index_t, index_t>>& dims, std::size_t k, index_t d) {
  if (k == dims.size()) return d == 0;
  index_t below = 0;  // how far the smaller dims reach
  for (std::size_t j = k + 1; j < dims.size(); ++j) below += dims[j].first * (dims[j].second - 1);
  const index_t s = dims[k].first, e = dims[k].second;
  // delta with |d - s * delta| <= below
  const auto floor_div = [](index_t a, index_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  index_t lo = -floor_div(-(d - below), s), hi = floor_div(d + below, s);
  lo = lo < -(e - 1) ? -(e - 1) : lo;
  hi = hi > e - 1 ? e - 1 : hi;
  for (index_t delta = lo; delta <= hi; ++delta)
    if (reaches(dims, k + 1, d - s * delta)) return true;
  return false;
}
}  // namespace detail

/// Can two views share a byte? Exact when their byte ranges are disjoint,
/// when their element offsets differ by a number that the gcd of all their
/// strides does not divide (even and odd columns of one buffer), and for
/// two views of one layout shifted by d elements (two halves of a last dim,
/// interleaved in memory: rotary embeddings in place), which is decided by
/// searching the index difference that reaches d (nested layouts). Anything
/// else that overlaps in bytes is taken as sharing (conservative: refused,
/// never corrupted).
inline bool may_share_elements(const view_layout& a, const view_layout& b) {
  if (!(a.range.lo < b.range.hi && b.range.lo < a.range.hi)) return false;
  if (a.element_bytes != b.element_bytes) return true;
  const std::intptr_t bytes = std::intptr_t(b.base) - std::intptr_t(a.base);
  if (bytes % std::intptr_t(a.element_bytes) != 0) return true;
  const index_t d = index_t(bytes / std::intptr_t(a.element_bytes));
  index_t g = 0;
  const auto gcd = [](index_t x, index_t y) {
    x = x < 0 ? -x : x;
    y = y < 0 ? -y : y;
    while (y != 0) {
      const index_t t = x % y;
      x = y;
      y = t;
    }
    return x;
  };
  for (const auto* l : {&a, &b})
    for (std::size_t k = 0; k < l->extent.size(); ++k)
      if (l->extent[k] > 1) g = gcd(g, l->stride[k]);
  if (g == 0) return d == 0;  // one element each
  if (d % g != 0) return false;
  if (a.extent != b.extent || a.stride != b.stride) return true;
  std::vector<std::pair<index_t, index_t>> dims;
  for (std::size_t k = 0; k < a.extent.size(); ++k)
    if (a.extent[k] > 1 && a.stride[k] != 0) dims.push_back({a.stride[k] < 0 ? -a.stride[k] : a.stride[k], a.extent[k]});
  std::sort(dims.begin(), dims.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  index_t reach = 0;  // nested: each |stride| above what the smaller dims reach
  for (std::size_t k = dims.size(); k-- > 0;) {
    if (dims[k].first <= reach) return true;
    reach += dims[k].first * (dims[k].second - 1);
  }
  return detail::reaches(dims, 0, d);
}

/// A short description of operand `index` of `op`: "input 1 of add (f32[4, 5])".
template <class V>
std::string operand_name(const char* role, int index, const char* op, const V& v) {
  return std::string(role) + " " + std::to_string(index) + " of " + op + " (" + dtype_traits<typename V::value_type>::name +
         to_string<V::rank>(v.shape()) + ")";
}

namespace detail {
/// Calls f(view, op name, operand index) for every view of expression, set
/// or plan e, named by the op that reads it. Of a plan chosen at run time,
/// the views of its first variant (both variants read the same views).
template <class E, class F>
void for_each_view(const E& e, F&& f, const char* parent = "run", int index = 0) {
  constexpr plan_kind k = plan_kind_v<E>;
  if constexpr (k == plan_kind::view) {
    f(e, parent, index);
  } else if constexpr (k == plan_kind::node) {
    using Op = std::remove_cvref_t<decltype(e.op)>;
    fusor::apply([&](const auto&... a) {
      int i = 0;
      (for_each_view(a, f, Op::name, i++), ...);
    }, e.args);
  } else if constexpr (k == plan_kind::runtime_choice) {
    for_each_view(e.first, f, parent, index);
  } else if constexpr (k == plan_kind::guarded) {
    for_each_view(e.written, f, parent, index);  // (the views as the user wrote them)
  } else if constexpr (!is_plan_leaf_v<E>) {
    for_each_child(e, [&](const auto& c) { for_each_view(c, f, parent, index); });
  }
}

/// Calls f(view) for every view of e read by an op that reads elements at
/// other positions than the one it writes (Op::reads_other_positions:
/// pooling, resize, gather), directly or through elementwise producers: an
/// output may not alias such a view even exactly (in-place), since a later
/// element would read one already overwritten.
template <class E, class F>
void for_each_view_read_elsewhere(const E& e, F&& f, bool under = false) {
  constexpr plan_kind k = plan_kind_v<E>;
  if constexpr (k == plan_kind::view) {
    if (under) f(e);
  } else if constexpr (k == plan_kind::node) {
    using Op = std::remove_cvref_t<decltype(e.op)>;
    const bool u = under || requires { Op::reads_other_positions; };
    fusor::apply([&](const auto&... a) { (for_each_view_read_elsewhere(a, f, u), ...); }, e.args);
  } else if constexpr (k == plan_kind::runtime_choice) {
    for_each_view_read_elsewhere(e.first, f, under);
  } else if constexpr (k == plan_kind::guarded) {
    for_each_view_read_elsewhere(e.written, f, under);
  } else if constexpr (!is_plan_leaf_v<E>) {
    for_each_child(e, [&](const auto& c) { for_each_view_read_elsewhere(c, f, under); });
  }
}

/// Is hint E, below a root, read whole into a temporary by a kernel of its
/// own before anything is written? Only contiguous under a shape op of a
/// computed value, whose operand plan/absorb.hpp always copies
/// (planned_hint_operand). Elsewhere a hint's operand may be read in place:
/// materialize(e) and, under a contraction, contiguous(e) are e's own plan,
/// which for an e that canonicalizes to a (transposed) view is that view
/// (`materialize(transpose(q) * 1_c)`), so those are checked as read.
template <class E, bool UnderViewMap>
inline constexpr bool hint_reads_first_v = false;
template <class X>
inline constexpr bool hint_reads_first_v<node<op::contiguous, X>, true> = true;

/// Calls f(view, op name, operand index) for every view of the expressions
/// of set e as written, as the kernels read it (a transposed view leaf,
/// `transpose(v)`, as the transposed view: in place, `run(q, transpose(q) *
/// 2)` is not an exact alias). With SkipHinted (one kernel writes every
/// output), not the operands of hints below a root that are read whole into
/// temporaries before anything is written (hint_reads_first_v), so an
/// output may overlap them (`run(q, reshape(contiguous(transpose(Q)), s))`).
template <bool SkipHinted, bool UnderViewMap = false, class E, class F>
void for_each_view_as_read(const E& e, F&& f, const char* parent = "run", int index = 0) {
  if constexpr (is_view_v<E>) {
    f(e, parent, index);
  } else if constexpr (is_transpose_leaf_v<E>) {
    f(transposed_view(fusor::get<0>(e.args)), "transpose", 0);
  } else if constexpr (is_node_v<E>) {
    if constexpr (SkipHinted && hint_reads_first_v<E, UnderViewMap>) return;
    using Op = std::remove_cvref_t<decltype(e.op)>;
    fusor::apply([&](const auto&... a) {
      int i = 0;
      (for_each_view_as_read<SkipHinted, is_view_map_node_v<E>>(a, f, Op::name, i++), ...);
    }, e.args);
  } else if constexpr (requires { e.exprs; }) {  // a siblings_expr
    std::apply([&](const auto&... x) { (for_each_view_as_read<SkipHinted>(x, f, parent, index), ...); }, e.exprs);
  }
}
}  // namespace detail

/// Throws argument_error for an input view with null data and elements.
template <class E>
void check_inputs(const E& e) {
  detail::for_each_view(e, [](const auto& v, const char* op, int i) {
    using V = std::remove_cvref_t<decltype(v)>;
    // Count with the operand's name, so an overflow names op, operand and shape.
    (void)element_count<V::rank>(v.shape(), ("run: " + operand_name("input", i, op, v)).c_str());
    if (v.data() == nullptr && v.size() != 0)
      throw argument_error("fusor: run: " + operand_name("input", i, op, v) + " has null data");
  });
}

namespace detail {
/// Calls f(node) for every tagged expression node (op::tagged<Id>) of e.
template <class E, class F>
void for_each_tagged(const E& e, F&& f) {
  constexpr plan_kind k = plan_kind_v<E>;
  if constexpr (k == plan_kind::node) {
    if constexpr (value_naming_op<typename E::op_type>) f(e);
    fusor::apply([&](const auto&... a) { (for_each_tagged(a, f), ...); }, e.args);
  } else if constexpr (k == plan_kind::runtime_choice) {
    for_each_tagged(e.first, f);
  } else if constexpr (k == plan_kind::guarded) {
    for_each_tagged(e.written, f);
  } else if constexpr (!is_plan_leaf_v<E>) {
    for_each_child(e, [&](const auto& c) { for_each_tagged(c, f); });
  }
}
/// Same op attributes, bit for bit: ops are small trivially copyable
/// structs, compared as bytes with their padding cleared (padding is
/// unspecified, even between copies). Without __builtin_clear_padding, an op
/// with padding bytes is taken on trust.
template <class Op>
bool same_attributes(const Op& a, const Op& b) {
  return fusor::detail::attribute_bits_equal(a, b) != 0;  // not comparable: taken on trust
}

// append_attributes: pattern/plan_key.hpp

/// Same tensors (data, extents, strides), scalars (bits) and attributes
/// (same_attributes): what fusor can check of "one value".
template <class E>
bool same_tagged_value(const E& a, const E& b) {
  return fusor::detail::same_value(a, b, [](const auto& x, const auto& y) { return same_attributes(x.op, y.op); });
}
}  // namespace detail

/// Throws argument_error when two different tensors carry one identity tag,
/// or two occurrences of one tagged expression (fusor::tag) differ.
template <class E>
void check_identity_tags(const E& e) {
  struct seen_node {
    const std::type_info* id;
    const std::type_info* type;
    const void* node;
    std::string (*text)(const void*);  // describe() of the node
  };
  std::vector<seen_node> nodes;
  detail::for_each_tagged(e, [&](const auto& n) {
    using N = std::remove_cvref_t<decltype(n)>;
    const seen_node me{&typeid(typename N::op_type::id*), &typeid(N), static_cast<const void*>(&n),
                       [](const void* p) { return describe(*static_cast<const N*>(p)); }};
    for (const auto& s : nodes) {
      if (*s.id != *me.id) continue;
      if (*s.type != *me.type)
        throw argument_error("fusor: run: one tag (tag<Id>(e)) names two different expressions: " + s.text(s.node) +
                             " and " + describe(n) + "; a tag must name exactly one value");
      if (!detail::same_tagged_value(*static_cast<const N*>(s.node), n))
        throw argument_error("fusor: run: two occurrences of the tagged expression " + describe(n) +
                             " (tag<Id>(e)) read different tensors (data, extents or strides), different scalars or "
                             "have different op attributes (axis, eps, ...; floats compared bit for bit); a tag must "
                             "name exactly one value");
    }
    nodes.push_back(me);
  });
  struct seen_view {
    const std::type_info* id;
    const std::type_info* dtype;
    const std::type_info* space;
    const void* data;
    std::string shape, strides, name;
  };
  std::vector<seen_view> seen;
  detail::for_each_view(e, [&](const auto& v, const char* op, int i) {
    using V = std::remove_cvref_t<decltype(v)>;
    if constexpr (!std::is_void_v<typename V::id>) {
      const seen_view me{&typeid(typename V::id*), &typeid(typename V::value_type), &typeid(typename V::space),
                         static_cast<const void*>(v.data()), to_string<V::rank>(v.shape()),
                         to_string<V::rank>(v.strides()), operand_name("input", i, op, v)};
      for (const auto& s : seen)
        if (*s.id == *me.id && (*s.dtype != *me.dtype || *s.space != *me.space || s.data != me.data ||
                                s.shape != me.shape || s.strides != me.strides))
          throw argument_error("fusor: run: " + s.name + " and " + me.name +
                               " carry the same identity tag (with_id<Tag>) but are different tensors (data, dtype, "
                               "memory space, extents or strides differ); a tag must name exactly one tensor");
      seen.push_back(me);
    }
  });
}

/// True unless a layout with extents e and strides st (elements, any sign)
/// is proven free of self-overlap: dims of extent > 1 sorted by |stride|,
/// each |stride| at least the previous |stride| times its extent (row- and
/// column-major, permuted and padded layouts pass). Rarer non-nested
/// layouts that happen not to overlap are refused too (documented in
/// guarantees.md).
template <int R>
bool self_overlapping(const shape<R>& e, const shape<R>& st) {
  index_t order[R > 0 ? R : 1];
  int n = 0;
  for (int d = 0; d < R; ++d)
    if (e[d] > 1) order[n++] = d;
  auto mag = [&](index_t d) { return st[d] < 0 ? -st[d] : st[d]; };
  // Insertion sort (at most 8 dims; std::sort's 16-element threshold makes
  // GCC 12 warn -Warray-bounds on these small arrays, a false positive).
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && mag(order[j]) < mag(order[j - 1]); --j) {
      const index_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  index_t need = 1;  // the smallest |stride| the next dim may have
  for (int k = 0; k < n; ++k) {
    const index_t s = mag(order[k]);
    if (s < need) return true;
    // (s * extent past int64: no later dim can fit, unless none follows)
    need = (e[order[k]] > INT64_MAX / s) ? INT64_MAX : s * e[order[k]];
  }
  return false;
}

/// Checks outputs against their expressions' ranks and shapes, null data, zero
/// strides (several elements written to one address) and overlap with inputs
/// or each other. Exact in-place aliasing (same data, shape and strides) is
/// allowed when InPlaceOk: one kernel writes every output after reading its
/// inputs at the same index.
template <bool InPlaceOk, class Outs, class Shapes, class E>
void check_outputs(const Outs& outs, const Shapes& shapes, const E& inputs) {
  std::vector<view_layout> written, read_elsewhere;
  detail::for_each_view_read_elsewhere(inputs, [&](const auto& v) { read_elsewhere.push_back(view_layout_of(v)); });
  auto check = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    const auto& o = std::get<K>(outs);
    using O = std::remove_cvref_t<decltype(o)>;
    const auto& want = std::get<K>(shapes);
    const std::string name = "output " + std::to_string(K) + " (" + dtype_traits<typename O::value_type>::name +
                             to_string<O::rank>(o.shape()) + ")";
    (void)element_count<O::rank>(o.shape(), ("run: " + name).c_str());  // an overflow names the output
    using X = std::remove_cvref_t<std::tuple_element_t<K, decltype(inputs.exprs)>>;
    static_assert(O::rank == rank_v<X>,
                  "fusor: run: an output view's rank differs from the rank of the expression it receives");
    if constexpr (O::rank == rank_v<X>) {
      bool same = true;
      for (int d = 0; d < O::rank; ++d) same = same && o.shape()[d] == want[d];
      if (!same)
        throw shape_error("fusor: run: " + name + " does not have the expression's shape " +
                          to_string<rank_v<X>>(want));
    }
    if (o.data() == nullptr && o.size() != 0) throw argument_error("fusor: run: " + name + " has null data");
    for (int d = 0; d < O::rank; ++d)
      if (o.stride(d) == 0 && o.extent(d) > 1)
        throw argument_error("fusor: run: " + name + " has a zero stride on dimension " + std::to_string(d) +
                             ": several results would be written to one address");
    if (self_overlapping<O::rank>(o.shape(), o.strides()))
      throw argument_error("fusor: run: " + name + " has strides " + to_string<O::rank>(o.strides()) +
                           " under which two of its elements share an address (a self-overlapping layout): several "
                           "results would be written to one address");
    const view_layout r = view_layout_of(o);
    for (const auto& w : written)
      if (may_share_elements(r, w)) throw argument_error("fusor: run: " + name + " overlaps another output");
    written.push_back(r);
    detail::for_each_view_as_read<InPlaceOk>(inputs, [&](const auto& v, const char* op, int i) {
      if (!may_share_elements(r, view_layout_of(v))) return;
      using V = std::remove_cvref_t<decltype(v)>;
      bool exact = false;
      if constexpr (V::rank == O::rank && sizeof(typename V::value_type) == sizeof(typename O::value_type)) {
        exact = static_cast<const void*>(v.data()) == static_cast<const void*>(o.data()) && v.shape() == o.shape() &&
                v.strides() == o.strides();
      }
      if (!exact)
        throw argument_error("fusor: run: " + name + " partially overlaps " + operand_name("input", i, op, v) +
                             "; a fused kernel could read elements it already overwrote (only exact in-place "
                             "aliasing is allowed)");
      for (const auto& l : read_elsewhere)
        if (may_share_elements(r, l))
          throw argument_error("fusor: run: " + name + " is also " + operand_name("input", i, op, v) +
                               ", which a pooling, resize, gather, pad or concat reads at other positions than it writes: "
                               "in place, later elements would read overwritten ones (write to another buffer)");
      if (!InPlaceOk)
        throw argument_error("fusor: run: " + name + " is also " + operand_name("input", i, op, v) +
                             ", and these siblings do not run as one elementwise kernel (several kernels, or a "
                             "multi-output GEMM, which never runs in place): a later write could clobber what is still "
                             "to be read (in-place is allowed when one elementwise kernel computes every output)");
    });
  };
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (check(std::integral_constant<std::size_t, K>{}), ...);
  }(std::make_index_sequence<std::tuple_size_v<Outs>>{});
}

}  // namespace fusor::exec
