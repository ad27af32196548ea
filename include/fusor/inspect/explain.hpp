#pragma once
/// @file inspect/explain.hpp
/// explain(e): what fusor will do with an expression, as text: the expression,
/// its canonical form and the rewrites that produced it, the device model, the
/// fusion groups (rule, kernel family, estimated bytes, FLOPs, registers and
/// time of each), every split with its reason, run-time choices with both
/// estimates, and the unfused vs fused totals.
#include <fusor/cost/shaped_estimate.hpp>
#include <fusor/exec/host_gemm.hpp>
#include <fusor/exec/validate.hpp>
#include <fusor/inspect/kernels_planned.hpp>
#include <fusor/ops/conv_transpose.hpp>
#include <fusor/plan/describe.hpp>

#include <cstdio>
#include <string>
#include <typeinfo>
#include <vector>

namespace fusor {

namespace detail {
template <class... R>
std::string rule_names(type_list<R...>) {
  std::string s;
  ((s += std::string("  - ") + R::name + "\n"), ...);
  return s;
}

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

inline std::string estimate_text(const cost::estimate& e, double n) {
  const double per = n > 0 ? 1.0 / n : 0.0;
  return fmt("%.0f", double(e.launches)) + " launch" + (e.launches == 1 ? "" : "es") + ", " +
         fmt("%.3g", e.bytes * per) + " B/elem, " + fmt("%.3g", e.flops * per) + " FLOP/elem, ~" +
         fmt("%.0f", double(e.registers)) + " regs, " + fmt("%.4g", e.seconds * 1e6) + " us";
}

template <class Rule>
std::string rule_text() {
  std::string s = std::string(Rule::name) + " (" + Rule::kernel::name;
  if constexpr (requires { Rule::why; }) s += std::string("; split off: ") + to_string(Rule::why);
  if constexpr (requires { Rule::launch_note; })
    s += std::string("; ") + Rule::launch_note + ", " + std::to_string(rule_launches_v<Rule>) + " launches";
  return s + ")";
}

/// Lists the kernels of planned tree p in launch order (producers first),
/// each provably identical group once (cost::for_each_kernel), each with its
/// estimate at the run-time shapes (cost::kernel_estimate_at).
template <class Policy, class P>
std::string kernel_list(const P& p, double n) {
  std::string out;
  int count = 0;
  cost::for_each_kernel(Policy::model, n, p, [&](const auto& k) {
    using K = std::remove_cvref_t<decltype(k)>;
    if constexpr (plan_kind_v<K> == plan_kind::group) {
      out += "  kernel " + std::to_string(++count) + ": " + rule_text<group_rule_t<K>>() + " computes " + describe(k.expr) +
             "\n";
    } else {
      out += "  kernel " + std::to_string(++count) + ": " + rule_text<group_rule_t<K>>() + ", horizontal, " +
             std::to_string(std::tuple_size_v<decltype(k.exprs)>) + " outputs, computes " + describe(k) + "\n";
    }
    out += "            estimate: " + estimate_text(cost::kernel_estimate_at(Policy::model, k, n), n) + "\n";
  }, &out);
  return out;
}
/// The run-time access path of the elementwise kernels reading e's views
/// (exec/bind.hpp, make_elementwise_kernel): vectorized when every view is
/// dense, of the result's shape and 16-byte aligned; otherwise the scalar
/// contiguous path (misaligned) or the strided path (strided, transposed or
/// broadcast). A fallback, never an error; the output view counts too.
template <int R, class E>
std::string access_text(const E& e, const shape<R>& result) {
  std::string lines;
  bool strided = false, misaligned = false;
  exec::detail::for_each_view(e, [&](const auto& v, const char* op, int i) {
    using V = std::remove_cvref_t<decltype(v)>;
    const std::string name = exec::operand_name("input", i, op, v);
    bool dense = v.is_contiguous();
    if constexpr (V::rank == R) dense = dense && v.shape() == result;
    else dense = false;
    if (!dense) {
      strided = true;
      lines += "  " + name + ", strides " + to_string<V::rank>(v.strides()) + ": not dense at the result's shape " +
               to_string<R>(result) + " (strided, transposed or broadcast) -> strided path\n";
    } else if (reinterpret_cast<std::uintptr_t>(v.data()) % 16 != 0) {
      misaligned = true;
      lines += "  " + name + ": not 16-byte aligned -> scalar (non-vector) contiguous path\n";
    }
  });
  std::string head = strided ? "strided path" : misaligned ? "scalar contiguous path" : "vectorized (16-byte) path";
  return "memory access (elementwise kernels; chosen at run time, never an error): " + head +
         (strided || misaligned ? "" : " if the output view is dense and 16-byte aligned too") + "\n" + lines;
}
}  // namespace detail

namespace detail {
/// True when kernel list L is non-empty and has no elementwise-family kernel
/// (an empty list: not known statically, e.g. a plan chosen at run time).
template <class L>
inline constexpr bool no_elementwise_kernel = false;
template <class K0, class... K>
inline constexpr bool no_elementwise_kernel<type_list<K0, K...>> =
    (!std::is_same_v<typename group_rule_t<typename kernel_group<K0>::type>::kernel, kernel_family::elementwise> && ... &&
     !std::is_same_v<typename group_rule_t<typename kernel_group<K>::type>::kernel, kernel_family::elementwise>);
/// True when kernel list L has a contraction-family kernel (GEMM / conv tiles).
template <class L>
inline constexpr bool has_contraction_kernel = false;
template <class... K>
inline constexpr bool has_contraction_kernel<type_list<K...>> =
    (std::is_same_v<typename group_rule_t<typename kernel_group<K>::type>::kernel, kernel_family::contraction> || ...);
/// True when expression E has a conv_transpose2d node.
template <class E>
inline constexpr bool has_conv_transpose2d = false;
template <class Op, class... A>
inline constexpr bool has_conv_transpose2d<node<Op, A...>> =
    std::is_same_v<Op, op::conv_transpose2d> || (has_conv_transpose2d<std::remove_cvref_t<A>> || ...);
}  // namespace detail

/// A readable account of how fusor runs expression (or siblings set) e under
/// Policy (default: the H100 model; pass host_policy for the host executor).
/// Element counts are taken from e's views. Pure host code; no kernel runs.
template <class Policy = fused_policy, class E>
  requires(expression<E> || is_siblings_v<E>)
std::string explain(const E& e) {
  const auto canonical = canonicalize(e);
  std::string out = "expression:  " + describe(e) + "\n";
  out += "canonical:   " + describe(canonical) + "\n";
  std::string rewrites;
  if constexpr (is_siblings_v<E>) {
    std::apply([&](const auto&... x) {
      ((rewrites += detail::rule_names(typename decltype(canon::canonicalize_traced(x))::trace{})), ...);
    }, e.exprs);
  } else {
    rewrites = detail::rule_names(typename decltype(canon::canonicalize_traced(e))::trace{});
  }
  out += "rewrites:\n" + (rewrites.empty() ? std::string("  (none)\n") : rewrites);

  const double n = [&] {
    if constexpr (is_siblings_v<decltype(canonical)>) return double(element_count_of(std::get<0>(canonical.exprs)));
    else return double(element_count_of(canonical));
  }();
  out += std::string("device model: ") + Policy::model.name + ", " + detail::fmt("%.0f", n) + " elements\n";
  const auto planned = plan<Policy>(canonical);
  // The access paths are those of elementwise kernels: not printed for a
  // plan known to launch none (a row reduction or a GEMM alone).
  if constexpr (!detail::no_elementwise_kernel<kernels_of_t<decltype(planned)>>) {
    if constexpr (is_siblings_v<E>) {
      const auto& e0 = std::get<0>(e.exprs);
      out += detail::access_text<rank_v<decltype(e0)>>(e, shape_of(e0));
    } else {
      out += detail::access_text<rank_v<E>>(e, shape_of(e));
    }
  }

  // Which inner loop the host runs for the GEMM/conv tiles (exec/host_gemm.hpp).
  if constexpr (detail::has_contraction_kernel<kernels_of_t<decltype(planned)>>)
    out += std::string("host GEMM engine: ") + exec::host_gemm_engine_name(host()) + "\n";
  // conv_transpose2d on the host: one engine GEMM per conv group and output
  // phase (exec/host_conv_transpose.hpp), or the direct kernel.
  if constexpr (detail::has_conv_transpose2d<std::remove_cvref_t<decltype(canonical)>>)
    out += std::string("host conv_transpose2d: ") +
           (exec::host_gemm_engine_available ? "OpenBLAS gemm per conv group and output phase, epilogue per block"
                                             : "direct kernel, one output per thread (built without OpenBLAS)") +
           "\n";

  const auto unfused_plan = plan<unfused_policy>(canonical);
  const cost::estimate before = cost::plan_estimate_at(Policy::model, unfused_plan, n);

  auto show = [&]<class Q>(const Q& q, const char* title) {
    out += title;
    out += detail::kernel_list<Policy>(q, n);
    const cost::estimate after = cost::plan_estimate_at(Policy::model, q, n);
    // (launches on the branches taken: split rows count two, separate Q/K/V projections three)
    out += "kernels:     " + std::to_string(kernels_of_plan<unfused_policy>(unfused_plan, n).per_run) + " unfused -> " +
           std::to_string(kernels_of_plan<Policy>(q, n).per_run) + " fused\n";
    out += "unfused:     " + detail::estimate_text(before, n) + "\n";
    out += "fused:       " + detail::estimate_text(after, n) + "\n";
  };
  auto choose = [&](auto& self, const auto& p) -> void {
    if constexpr (plan_kind_v<decltype(p)> == plan_kind::guarded) {
      out += std::string("check: ") + to_string(p.why, p.holds) + "\n";
      if (p.holds) self(self, p.recognized);
      else self(self, p.written);
    } else if constexpr (plan_kind_v<decltype(p)> == plan_kind::runtime_choice) {
      using F = std::remove_cvref_t<decltype(p.first)>;
      using S = std::remove_cvref_t<decltype(p.second)>;
      const comparison c = compare_plans<F, S>(Policy::model, n);
      out += "plan chosen at run time (dynamic extents, shared producer): recompute " + detail::fmt("%.4g", c.first_seconds * 1e6) +
             " us vs materialize " + detail::fmt("%.4g", c.second_seconds * 1e6) + " us at this size -> " +
             (c.first_wins ? "recompute" : "materialize") + "\n";
      if (c.first_wins) show(p.first, "fusion groups:\n");
      else show(p.second, "fusion groups:\n");
    } else {
      show(p, "fusion groups:\n");
    }
  };
  choose(choose, planned);
  return out;
}
template <class Policy = fused_policy, class E>
  requires(!(expression<E> || is_siblings_v<E>))
std::string explain(const E&) {
  static_assert(diagnostic::always_false<E>, "fusor: explain: the argument is not a fusor expression (nor a "
                                             "siblings(...) set); " FUSOR_WHAT_IS_AN_EXPRESSION);
  return {};
}

}  // namespace fusor
