#pragma once
/// @file exec/run.hpp
/// fusor::run: canonicalize -> plan -> validate -> launch.
#include <fusor/cost/shaped_estimate.hpp>
#include <fusor/exec/cast_check.hpp>
#include <fusor/exec/materialize.hpp>
#include <fusor/exec/root_view_map.hpp>

/// FUSOR_CHECK_LAUNCHES (default 0; fusor's tests build with 1): every run
/// checks that it launched the kernels its plan lists (kernels_of_plan) and
/// throws an internal error otherwise.
#if !defined(FUSOR_CHECK_LAUNCHES)
#  define FUSOR_CHECK_LAUNCHES 0
#endif

namespace fusor {

/// Several output views, paired in order with the expressions of a siblings set.
template <class... O>
struct output_set {
  std::tuple<O...> views;
};
/// `outputs(y1, y2)`: the outputs of `siblings(e1, e2)`.
template <class... O>
output_set<O...> outputs(const O&... o) {
  return {{o...}};
}

/// What a run did.
struct run_result {
  std::size_t kernels = 0;  ///< kernels launched
};

namespace exec {

/// The profiler marker of group g: on the CUDA executor an NVTX range named
/// "fusor: <group>" (describe(g), as explain names kernels) around its
/// launches (FUSOR_NVTX, exec/cuda_backend.hpp); nothing on the host or while
/// rehearsing.
template <class Ctx, class G>
auto group_marker(const Ctx&, const G& g) {
  if constexpr (std::is_same_v<typename Ctx::space, device_space> && FUSOR_NVTX)
    return nvtx_range(rehearsing() ? std::string() : "fusor: " + describe(g));
  else
    return 0;
}

/// Runs group g: its operand groups first (materialize_operands), then its
/// family's launcher (exec/launcher.hpp), which counts what it launches.
/// Launchers that do not rehearse are skipped in the rehearsal pass.
template <class Ctx, class Outs, class R, class X>
void execute_group(Ctx& ctx, const group<R, X>& g, const Outs& outs) {
  const auto x = materialize_operands(ctx, g.expr);
  [[maybe_unused]] const auto marker = group_marker(ctx, g);
  using L = launcher<typename R::kernel>;
  if (L::rehearses || !rehearsing()) L::run(device_of(ctx.ex), g, x, outs);
}

/// Runs a multi-output group through its family's launcher.
template <class Ctx, class Outs, class R, class... X>
void execute_sibling_group(Ctx& ctx, const sibling_group<R, X...>& g, const Outs& outs) {
  const auto xs = std::apply([&](const auto&... x) { return std::make_tuple(materialize_operands(ctx, x)...); }, g.exprs);
  [[maybe_unused]] const auto marker = group_marker(ctx, g);
  using L = launcher<typename R::kernel>;
  if (L::rehearses || !rehearsing()) L::run_siblings(device_of(ctx.ex), g, xs, outs);
}

/// The walker that runs a plan (visit, pattern/plan_tree.hpp): one handler
/// per plan kind.
template <class Ctx, class Outs>
struct plan_runner {
  Ctx& ctx;
  const Outs& outs;

  // A bare view, scalar, constant or transposed view written to an output is
  // a copy group in the plan (plan/plan.hpp, as_output_plan): never a root here.
  template <class V>
  void leaf(const V&) const {
    static_assert(diagnostic::always_false<V>, "fusor: internal: run: a leaf outside a group");
  }
  template <class N>
  void node(const N&) const {
    static_assert(diagnostic::always_false<N>, "fusor: internal: run: an expression node outside a group");
  }
  template <class R, class X>
  void group(const fusor::group<R, X>& g) const {
    execute_group(ctx, g, outs);
  }
  template <class R, class... X>
  void sibling_group(const fusor::sibling_group<R, X...>& g) const {
    execute_sibling_group(ctx, g, outs);
  }
  template <class SO>
  void sibling_output(const SO&) const {
    static_assert(diagnostic::always_false<SO>, "fusor: internal: run: a sibling output as a plan root");
  }
  /// A plan chosen at run time: the cost model compares both at the actual
  /// element count (once per run; the choice is a pure function of the shape).
  template <class F, class S>
  void runtime_choice(const fusor::runtime_choice<F, S>& c) const {
    using Policy = typename std::remove_cvref_t<decltype(ctx.ex)>::policy;
    const double n = double(element_count_of(c.first));
    if (compare_plans<F, S>(Policy::model, n).first_wins) execute(ctx, c.first, outs);
    else execute(ctx, c.second, outs);
  }
  /// Recognised decomposed normalizations when their run-time check held,
  /// the expression as written otherwise (recognize/decomposed.hpp).
  template <class F, class S>
  void guarded(const guarded_plan<F, S>& g) const {
    if (g.holds) execute(ctx, g.recognized, outs);
    else execute(ctx, g.written, outs);
  }
  /// Independent plans, each into its own output.
  template <class... P>
  void sequence(const plan_sequence<P...>& seq) const {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (execute(ctx, std::get<K>(seq.parts), std::make_tuple(std::get<K>(outs))), ...);
    }(std::index_sequence_for<P...>{});
  }
  template <class... E>
  void roots(const siblings_expr<E...>&) const {
    static_assert(diagnostic::always_false<E...>, "fusor: internal: run: an unplanned siblings set");
  }
};

template <class Ctx, class P, class Outs>
void execute(Ctx& ctx, const P& p, const Outs& outs) {
  visit(plan_runner<Ctx, Outs>{ctx, outs}, p);
}

template <class Ex, class V>
void check_space(const Ex& ex, const V& v, const std::string& what) {
  static_assert(std::is_same_v<typename V::space, typename Ex::space>,
                "fusor: run: a view's memory space does not match the executor (host_view with host()/unfused(), "
                "device_view with cuda(stream))");
  (void)ex;
  // A view with no elements is never read or written: its pointer may be
  // anything (a size-0 allocation, one past another buffer, null).
  for (int d = 0; d < int(V::rank); ++d)
    if (v.extent(d) == 0) return;
  if constexpr (std::is_same_v<typename Ex::space, device_space>) check_device_pointer(v.data(), what);
  else check_host_pointer(v.data(), what);
}

/// The checks that kernels make when they start (attention the flash kernel
/// cannot run, a folded batch_norm over the wrong channel axis), made for
/// every node of plan p before the first kernel launches: with several
/// kernels an earlier one would otherwise have written its output already.
/// Both variants of a run-time choice are checked; of a guarded plan, the one
/// that will run.
template <class P>
void check_plan(const P& p) {
  if constexpr (plan_kind_v<P> == plan_kind::guarded) {
    if (p.holds) check_plan(p.recognized);
    else check_plan(p.written);
  } else if constexpr (plan_kind_v<P> == plan_kind::node) {
    if constexpr (is_attention_node_v<P>) check_attention_supported(p);
    if constexpr (std::is_same_v<typename P::op_type, op::conv2d>) contraction_detail::check_folded_batch_norm_layout(p.op);
    fusor::apply([](const auto&... x) { (check_plan(x), ...); }, p.args);
  } else if constexpr (!is_plan_leaf_v<P>) {
    for_each_child(p, [](const auto& x) { check_plan(x); });
  }
}

/// Runs roots `exprs` (a siblings_expr) into output views `outs` (a tuple).
template <class Ex, class Outs, class... E>
run_result run_all(const Ex& ex, const Outs& outs, const siblings_expr<E...>& exprs) {
  static_assert(std::tuple_size_v<Outs> == sizeof...(E), "fusor: run: the number of outputs differs from the number of expressions");
  // Every check runs before the first launch, on the expression as written
  // (so messages name operands in the user's order): outputs stay untouched.
  const auto shapes = std::apply([](const auto&... e) { return std::make_tuple(shape_of(e)...); }, exprs.exprs);
  check_identity_tags(exprs);
  check_inputs(exprs);
  const auto canonical = canonicalize(exprs);
  using Policy = typename Ex::policy;
  const auto planned = plan<Policy>(canonical);
  constexpr bool one_kernel_writes_all = sizeof...(E) == 1 || plan_kind_v<decltype(planned)> == plan_kind::sibling_group;
  check_outputs<one_kernel_writes_all>(outs, shapes, exprs);
  detail::for_each_view(canonical, [&](const auto& v, const char* op, int i) {
    check_space(device_of(ex), v, operand_name("input", i, op, v));
  });
  std::apply([&](const auto&... o) {
    int i = 0;
    auto name = [&](const auto& v) {
      using V = std::remove_cvref_t<decltype(v)>;
      return "output " + std::to_string(i++) + " (" + dtype_traits<typename V::value_type>::name +
             to_string<V::rank>(v.shape()) + ")";
    };
    (check_space(device_of(ex), o, name(o)), ...);
  }, outs);
  // siblings with different run-time shapes cannot share one kernel
  if constexpr (plan_kind_v<decltype(planned)> == plan_kind::sibling_group) {
    std::apply([&](const auto& s0, const auto&... s) {
      if (((s != s0) || ...)) {
        std::string text;
        ((text += (text.empty() ? to_string<int(std::tuple_size_v<std::remove_cvref_t<decltype(s0)>>)>(s0) : std::string()) +
                  " vs " + to_string<int(std::tuple_size_v<std::remove_cvref_t<decltype(s)>>)>(s)), ...);
        throw shape_error("fusor: run: sibling expressions fused into one kernel must have equal shapes (" + text + ")");
      }
    }, shapes);
  }

  check_plan(planned);
  // (after the space checks: the host reads the cast's inputs here)
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(device_of(ex))>, host_executor>) check_cast_nan(exprs);

  // The rehearsal makes every allocation the plan needs and launches
  // nothing (exec/run_state.hpp); only then does the real pass write.
  run_state rehearsal;
  rehearsal.rehearsal = true;
  run_state real;
  auto walk = [&](run_state& state) {
    run_scope scope(state);
    run_context<Ex> ctx{ex, {}, {}, {}};
    if constexpr (sizeof...(E) == 1 && plan_kind_v<decltype(planned)> == plan_kind::sequence) {
      execute(ctx, std::get<0>(planned.parts), outs);
    } else {
      execute(ctx, planned, outs);
    }
  };
  try {
    walk(rehearsal);
    real.reserved = std::move(rehearsal.reserved);
    real.prepared = std::move(rehearsal.prepared);
    walk(real);
  } catch (const std::bad_alloc&) {
    // (an allocation of fusor's own bookkeeping: temporaries raise allocation_error themselves)
    throw allocation_error("fusor: run: out of host memory for the run's bookkeeping");
  }
  // The unfused and policy executors count what their inner executor launched.
  if constexpr (requires { ex.inner; }) ex.launches += real.launched;
#if FUSOR_CHECK_LAUNCHES
  // Planned == launched (issue 16; on in fusor's own tests): the kernels of
  // the plan's branches taken, plus, on a first run, those preparing weights.
  const planned_kernels k = kernels_of_plan<Policy>(planned, double(element_count_of(std::get<0>(canonical.exprs))));
  if (real.launched < k.per_run || real.launched > k.per_run + k.prepared)
    throw argument_error("fusor: internal: run launched " + std::to_string(real.launched) + " kernels, the plan lists " +
                         std::to_string(k.per_run) + " (+ " + std::to_string(k.prepared) + " preparing weights)");
#endif
  return {real.launched};
}

}  // namespace exec

/// Evaluates expression `e` into view `out` on executor `ex`
/// (host(), cuda(stream) or unfused(...)).
///
/// @param out  output view (non-const element type, any dtype; its extents must
///             equal e's broadcast extents; any strides, without zero strides).
/// @throws shape_error     operands that do not broadcast, an output of another shape
/// @throws argument_error  null data, an output partially overlapping an input
/// @throws device_error    (CUDA) host memory given to the CUDA executor, a launch failure
/// Nothing is written when it throws.
template <class O, expression E, executor Ex>
  requires is_view_v<O>
run_result run(const O& out, const E& e, const Ex& ex) {
  if constexpr (is_view_map_node_v<E>) {
    // a shape op over a computed value at the root: the value written
    // through the inverse view op, no copy kernel (exec/root_view_map.hpp)
    if (const auto inverse = exec::output_through_inverse(out, e)) return run(*inverse, fusor::get<0>(e.args), ex);
  }
  return exec::run_all(ex, std::make_tuple(out), siblings_expr<E>{{e}});
}

/// Evaluates several expressions into several outputs; with equal shapes they
/// run as one multi-output kernel (horizontal fusion).
template <class... O, class... E, executor Ex>
run_result run(const output_set<O...>& outs, const siblings_expr<E...>& e, const Ex& ex) {
  return exec::run_all(ex, outs.views, e);
}

namespace detail {
template <class O, class E>
inline constexpr bool run_operands_fit = is_view_v<O> && expression<E>;
template <class... O, class... E>
inline constexpr bool run_operands_fit<output_set<O...>, siblings_expr<E...>> = true;
template <class O>
inline constexpr bool is_output_set_v = false;
template <class... O>
inline constexpr bool is_output_set_v<output_set<O...>> = true;
}  // namespace detail
/// run() with arguments that are not (output view, expression, executor):
/// one `fusor:` line instead of the candidates' unsatisfied constraints.
/// Only calls with a fusor argument are claimed (another library's `run`
/// stays visible under `using namespace fusor`).
template <class O, class E, class Ex>
  requires((!detail::run_operands_fit<O, E> || !executor<Ex>) &&
           (is_view_v<O> || detail::is_output_set_v<O> || expression<E> || executor<Ex>))
run_result run(const O&, const E&, const Ex&) {
  static_assert(detail::run_operands_fit<O, E>,
                "fusor: run: an operand is not a fusor expression; run(out, e, executor): out is a tensor_view "
                "(host_view/device_view) and e an expression, or run(outputs(o1, o2, ...), siblings(e1, e2, ...), "
                "executor); " FUSOR_WHAT_IS_AN_EXPRESSION);
  static_assert(executor<Ex>, "fusor: run: the third argument is not a fusor executor: fusor::host(), "
                              "fusor::cuda(stream), fusor::unfused(...) or fusor::with_policy<P>(...)");
  return {};
}

}  // namespace fusor
