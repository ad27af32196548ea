#pragma once
/// @file plan/describe.hpp
/// Human-readable text for expressions and plans (used by explain() and by
/// error messages that name a kernel).
#include <fusor/plan/plan.hpp>

#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

namespace fusor {

/// "f32[4, ?]": dtype and static extents ('?' where dynamic) of a view type.
template <class V>
std::string describe_view_type() {
  std::string s = dtype_traits<typename V::value_type>::name;
  s += "[";
  for (int d = 0; d < V::rank; ++d) {
    const auto e = V::extents_type::static_extent(d);
    s += (d ? ", " : "") + (e == dyn ? std::string("?") : std::to_string(e));
  }
  return s + "]";
}

namespace detail {
template <class T>
std::string number(T v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}
}  // namespace detail

/// Text of an expression or planned tree: `relu(add(f32[?], silu(f32[?]#1)))`.
/// Identity-tagged views carry `#k` where k numbers distinct tags in order of
/// appearance; groups print as `[rule: ...]`.
template <class E>
std::string describe(const E& e);

namespace detail {
/// Text being built plus the identity tags seen so far (numbered #1, #2, ...).
struct describe_context {
  std::string text;
  std::vector<const std::type_info*> tags;
  describe_context& operator+=(const std::string& s) {
    text += s;
    return *this;
  }
  int tag_number(const std::type_info& t) {
    for (std::size_t i = 0; i < tags.size(); ++i)
      if (*tags[i] == t) return int(i) + 1;
    tags.push_back(&t);
    return int(tags.size());
  }
};
template <class E>
void describe_into(describe_context& out, const E& e);
template <class R, class X>
void describe_group(describe_context& out, const group<R, X>& g);
template <class R, class... X>
void describe_group(describe_context& out, const sibling_group<R, X...>& g);
template <class... P>
void describe_group(describe_context& out, const plan_sequence<P...>& g);
template <class... X>
void describe_group(describe_context& out, const siblings_expr<X...>& g);
template <std::size_t I, class SG>
void describe_group(describe_context& out, const sibling_output<I, SG>& g);
template <class F, class S>
void describe_group(describe_context& out, const runtime_choice<F, S>& g);
template <class F, class S>
void describe_group(describe_context& out, const guarded_plan<F, S>& g);

template <class E>
void describe_into(describe_context& out, const E& e) {
  if constexpr (is_view_v<E>) {
    out += describe_view_type<E>();
    if constexpr (!std::is_void_v<typename E::id>) out += "#" + std::to_string(out.tag_number(typeid(typename E::id*)));
  } else if constexpr (is_scalar_v<E>) {
    out += number(e.value);
  } else if constexpr (is_constant_v<E>) {
    out += number(E::value) + "_c";
  } else if constexpr (is_node_v<E>) {
    out += std::string(std::remove_cvref_t<decltype(e.op)>::name);
    out += "(";
    fusor::apply(
        [&](const auto&... a) {
          int i = 0;
          ((out += (i++ ? ", " : ""), describe_into(out, a)), ...);
        },
        e.args);
    out += ")";
  } else {
    // One describe_group overload per remaining plan kind (pattern/plan_tree.hpp).
    static_assert(!is_plan_leaf_v<E> && plan_kind_v<E> != plan_kind::node);
    describe_group(out, e);
  }
}
template <class R, class X>
void describe_group(describe_context& out, const group<R, X>& g) {
  out += "[";
  out += std::string(R::name);
  out += ": ";
  describe_into(out, g.expr);
  out += "]";
}
template <class R, class... X>
void describe_group(describe_context& out, const sibling_group<R, X...>& g) {
  out += "[";
  out += std::string(R::name);
  out += " x";
  out += std::to_string(sizeof...(X));
  out += ": ";
  std::apply([&](const auto&... a) {
    int i = 0;
    ((out += (i++ ? "; " : ""), describe_into(out, a)), ...);
  }, g.exprs);
  out += "]";
}
template <class... P>
void describe_group(describe_context& out, const plan_sequence<P...>& g) {
  std::apply([&](const auto&... a) {
    int i = 0;
    ((out += (i++ ? "; " : ""), describe_into(out, a)), ...);
  }, g.parts);
}
template <std::size_t I, class SG>
void describe_group(describe_context& out, const sibling_output<I, SG>& g) {
  out += "[output " + std::to_string(I) + " of ";
  describe_group(out, g.set);
  out += "]";
}
template <class F, class S>
void describe_group(describe_context& out, const runtime_choice<F, S>& g) {
  out += "{chosen at run time: recompute ";
  describe_into(out, g.first);
  out += " | materialize ";
  describe_into(out, g.second);
  out += "}";
}
template <class F, class S>
void describe_group(describe_context& out, const guarded_plan<F, S>& g) {
  out += "{guarded: recognised ";
  describe_into(out, g.recognized);
  out += " | as written ";
  describe_into(out, g.written);
  out += "}";
}
template <class... X>
void describe_group(describe_context& out, const siblings_expr<X...>& g) {
  out += "siblings(";
  std::apply([&](const auto&... a) {
    int i = 0;
    ((out += (i++ ? ", " : ""), describe_into(out, a)), ...);
  }, g.exprs);
  out += ")";
}
}  // namespace detail

template <class E>
std::string describe(const E& e) {
  detail::describe_context out;
  detail::describe_into(out, e);
  return out.text;
}

}  // namespace fusor
