#pragma once
/// @file pattern/plan_key.hpp
/// prepared_key(p): the value key of a plan subtree (its type, every op's
/// attributes bit for bit, every view's address, shape and strides, every
/// scalar's bits). The executor memoizes prepared weights and the outputs
/// of sibling groups by it (exec/materialize.hpp); the kernel walker of the
/// cost model (cost/shaped_estimate.hpp) counts a sibling group once per key
/// with it, so planned == launched.
#include <fusor/config.hpp>
#include <fusor/pattern/plan_tree.hpp>

#include <string>
#include <type_traits>
#include <typeinfo>

namespace fusor::detail {

/// Appends op a's attributes to cache key `key`, bit for bit with padding
/// cleared (as same_attributes compares them). Returns false when the op has
/// padding the compiler cannot clear: its bytes are not a key.
template <class Op>
bool append_attributes(std::string& key, const Op& a) {
  if constexpr (std::is_empty_v<Op>) {
    return true;
  } else if constexpr (!std::is_trivially_copyable_v<Op>) {
    return false;
  } else if constexpr (std::has_unique_object_representations_v<Op>) {
    key.append(reinterpret_cast<const char*>(&a), sizeof(Op));
    return true;
  } else {
#if defined(FUSOR_HAS_CLEAR_PADDING)
    Op x = a;
    __builtin_clear_padding(&x);
    key.append(reinterpret_cast<const char*>(&x), sizeof(Op));
    return true;
#else
    return false;
#endif
  }
}

/// The prepared-cache and sibling-memo key of e: its type (dtypes, static
/// extents, structure), every op's attributes bit for bit (padding cleared),
/// every view's address, shape and strides and every scalar's value, in
/// order. Empty when an op's attributes cannot be keyed (padding the
/// compiler cannot clear): such a value is computed every time, never shared.
template <class E>
std::string prepared_key(const E& e) {
  std::string key = typeid(E).name();
  bool keyable = true;
  auto add = [&](const void* p, std::size_t n) { key.append(static_cast<const char*>(p), n); };
  auto walk = [&](auto self, const auto& x) -> void {
    using X = std::remove_cvref_t<decltype(x)>;
    constexpr plan_kind k = plan_kind_v<X>;
    if constexpr (k == plan_kind::view) {
      const void* d = x.data();
      const auto sh = x.shape(), st = x.strides();
      add(&d, sizeof d);
      add(sh.data(), sizeof(index_t) * std::size_t(X::rank));
      add(st.data(), sizeof(index_t) * std::size_t(X::rank));
    } else if constexpr (k == plan_kind::scalar) {
      add(&x.value, sizeof x.value);
    } else if constexpr (k == plan_kind::constant) {
      // (its value is in the type)
    } else if constexpr (k == plan_kind::node) {
      keyable = append_attributes(key, x.op) && keyable;
      fusor::apply([&](const auto&... a) { (self(self, a), ...); }, x.args);
    } else if constexpr (k == plan_kind::group || k == plan_kind::sibling_group || k == plan_kind::sibling_output) {
      for_each_child(x, [&](const auto& c) { self(self, c); });  // (their rules are in the type)
    } else if constexpr (k == plan_kind::guarded) {
      key += x.holds ? 'R' : 'W';  // (the branch taken, then its own key)
      if (x.holds) self(self, x.recognized);
      else self(self, x.written);
    } else {
      static_assert(k == plan_kind::group, "fusor: internal: prepared_key: sequences and run-time choices are not keyed");
    }
  };
  if constexpr (plan_kind_v<E> == plan_kind::group) walk(walk, e.expr);
  else walk(walk, e);
  return keyable ? key : std::string();
}

}  // namespace fusor::detail
