#pragma once
/// @file exec/run.hpp
/// fusor::run: canonicalize -> plan -> validate -> launch.
#include <fusor/exec/bind.hpp>
#include <fusor/exec/cuda_backend.hpp>
#include <fusor/exec/host_backend.hpp>
#include <fusor/exec/attention.hpp>
#include <fusor/exec/contraction.hpp>
#include <fusor/exec/reduction.hpp>
#include <fusor/exec/validate.hpp>

#include <memory>
#include <new>
#include <typeinfo>
#include <vector>

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

template <class Ex>
struct run_context {
  using space = typename Ex::space;
  const Ex& ex;
  std::vector<std::shared_ptr<void>> temps;  // kept alive until the run ends
  // Results of provably identical groups (shared producers), computed once.
  std::vector<std::pair<const std::type_info*, std::shared_ptr<void>>> memo;
  // Outputs of multi-output sibling groups read through sibling_output,
  // keyed by the group's type and the tensors it reads.
  std::vector<std::pair<std::string, std::shared_ptr<void>>> sibling_memo;
};

template <class Ex>
const auto& device_of(const Ex& ex) {
  if constexpr (requires { ex.inner; }) return device_of(ex.inner);
  else return ex;
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
      keyable = detail::append_attributes(key, x.op) && keyable;
      fusor::apply([&](const auto&... a) { (self(self, a), ...); }, x.args);
    } else if constexpr (k == plan_kind::group || k == plan_kind::sibling_group || k == plan_kind::sibling_output) {
      for_each_child(x, [&](const auto& c) { self(self, c); });  // (their rules are in the type)
    } else {
      static_assert(k == plan_kind::group, "fusor: internal: prepared_key: sequences and run-time choices are not keyed");
    }
  };
  if constexpr (plan_kind_v<E> == plan_kind::group) walk(walk, e.expr);
  else walk(walk, e);
  return keyable ? key : std::string();
}

/// Runs plan p (any plan_kind but a siblings set) into output views outs (a
/// tuple): the plan_runner below, through visit.
template <class Ctx, class P, class Outs>
void execute(Ctx& ctx, const P& p, const Outs& outs);

// True when E holds a group or a sibling output (an operand that a kernel of
// its own computes first). Subtrees without one pass through
// materialize_operands as they are: walking them would nest three
// instantiations per level, and nvcc's front end gives up on a chain of
// about 85 levels ("cannot deduce the return type"; compile_bench chain 128).
template <class E>
inline constexpr bool has_kernel_operand_v = is_kernel_operand_v<E>;
template <class Op, class... A>
inline constexpr bool has_kernel_operand_v<node<Op, A...>> = (has_kernel_operand_v<A> || ...);

template <class Ctx, class E>
auto materialize_operands(Ctx& ctx, const E& e) {
  constexpr plan_kind kind = plan_kind_v<E>;
  static_assert(kind != plan_kind::sibling_group && kind != plan_kind::sequence && kind != plan_kind::runtime_choice &&
                    kind != plan_kind::guarded && kind != plan_kind::roots,
                "fusor: internal: materialize_operands: a plan root inside a group's expression");
  if constexpr (kind == plan_kind::node && !has_kernel_operand_v<E>) {
    return e;
  } else if constexpr (kind == plan_kind::node) {
    return fusor::apply([&](const auto&... a) { return make_node_unchecked(e.op, materialize_operands(ctx, a)...); }, e.args);
  } else if constexpr (kind == plan_kind::sibling_output) {
    // Output I of a multi-output sibling group: run the group once.
    return [&]<std::size_t I, class R, class... X>(const sibling_output<I, sibling_group<R, X...>>& so) {
      using Views = std::tuple<decltype(make_view<typename Ctx::space>(static_cast<value_t<X>*>(nullptr),
                                                                      dextents<rank_v<X>>{}))...>;
      const std::string key = prepared_key(so.set);  // (empty: not shareable, computed at each use)
      if (!key.empty())
        for (const auto& [k, v] : ctx.sibling_memo)
          if (k == key) return std::get<I>(*static_cast<const Views*>(v.get()));
      auto views = std::make_shared<Views>();
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        auto one = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
          using XJ = std::tuple_element_t<J, std::tuple<X...>>;
          using T = value_t<XJ>;
          constexpr int RJ = rank_v<XJ>;
          const auto& xj = std::get<J>(so.set.exprs);
          const auto s = shape_of(xj);
          const auto what = temporary_name<RJ>("temporary", xj, s);
          auto buffer = allocate<T>(device_of(ctx.ex), temporary_elements<RJ>(s, what), what);
          ctx.temps.push_back(buffer);
          dextents<RJ> ext = [&]<std::size_t... D>(std::index_sequence<D...>) { return dextents<RJ>(s[D]...); }(
              std::make_index_sequence<RJ>{});
          std::get<J>(*views) = make_view<typename Ctx::space>(buffer.get(), ext);
        };
        (one(std::integral_constant<std::size_t, K>{}), ...);
      }(std::index_sequence_for<X...>{});
      execute(ctx, so.set, *views);
      if (!key.empty()) ctx.sibling_memo.emplace_back(key, views);
      return std::get<I>(*views);
    }(e);
  } else if constexpr (kind == plan_kind::group) {
    // A group operand: its own kernel writes a temporary this group reads.
    using T = value_t<E>;
    constexpr int R = rank_v<E>;
    using V = decltype(make_view<typename Ctx::space>(static_cast<T*>(nullptr), dextents<R>{}));
    if constexpr (statically_identical_v<E>) {
      for (const auto& [type, view] : ctx.memo)
        if (*type == typeid(E)) return *static_cast<const V*>(view.get());
    }
    using Rule = typename group_rule<E>::type;
    const auto s = shape_of(e);
    const auto what = temporary_name<R>(fusor::detail::is_cached_rule_v<Rule> ? "prepared weights" : "temporary", e, s);
    if constexpr (fusor::detail::is_cached_rule_v<Rule>) {
      // Prepared once per weight set (folded batch norm), shared by the
      // executor's copies and threads. The rehearsal looks the key up and
      // keeps what it finds (owning) for the real pass, so both passes take
      // the same path and no insert or clear_prepared() elsewhere can free
      // weights this run reads.
      using Entry = std::pair<std::shared_ptr<T>, V>;
      auto& cache = *device_of(ctx.ex).prepared;
      run_state* st = current_run();
      std::shared_ptr<void> found;
      const std::string key = prepared_key(e);
      if (st == nullptr || st->rehearsal) {
        if (!key.empty()) {
          std::lock_guard<std::mutex> lock(cache.mutex);
          if (auto it = cache.entries.find(key); it != cache.entries.end()) found = it->second;
        }
        if (st != nullptr) st->prepared.push_back(found);
      } else if (st->next_prepared < st->prepared.size()) {
        found = st->prepared[st->next_prepared++];
      }
      if (found) {
        ctx.temps.push_back(found);
        return static_cast<const Entry*>(found.get())->second;
      }
      auto buffer = allocate<T>(device_of(ctx.ex), temporary_elements<R>(s, what), what);
      ctx.temps.push_back(buffer);
      dextents<R> ext = [&]<std::size_t... D>(std::index_sequence<D...>) { return dextents<R>(s[D]...); }(std::make_index_sequence<R>{});
      V view = make_view<typename Ctx::space>(buffer.get(), ext);
      execute(ctx, e, std::make_tuple(view));
      if (!rehearsing() && !key.empty()) {
        auto entry = std::make_shared<Entry>(buffer, view);
        std::lock_guard<std::mutex> lock(cache.mutex);
        cache.entries.try_emplace(key, std::move(entry));  // (another thread's equal entry may be there: keep it)
      }
      return view;
    }
    auto buffer = allocate<T>(device_of(ctx.ex), temporary_elements<R>(s, what), what);
    ctx.temps.push_back(buffer);
    dextents<R> ext = [&]<std::size_t... D>(std::index_sequence<D...>) { return dextents<R>(s[D]...); }(std::make_index_sequence<R>{});
    V view = make_view<typename Ctx::space>(buffer.get(), ext);
    execute(ctx, e, std::make_tuple(view));
    if constexpr (statically_identical_v<E>) ctx.memo.emplace_back(&typeid(E), std::make_shared<V>(view));
    return view;
  } else {
    static_assert(is_plan_leaf_v<E>);
    return e;  // a view, scalar or constant: read as it is
  }
}

/// fusor's own kernel families: they run in the rehearsal too (their
/// launchers launch nothing then, and their temporaries are reserved). A
/// user's kernel family (docs/extending.md) runs only in the real pass.
template <class K>
inline constexpr bool is_fusor_family_v = std::is_same_v<K, kernel_family::reduction> ||
                                          std::is_same_v<K, kernel_family::contraction> ||
                                          std::is_same_v<K, kernel_family::attention>;

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

template <class Ctx, class Outs, class R, class X>
void execute_group(Ctx& ctx, const group<R, X>& g, const Outs& outs) {
  const auto x = materialize_operands(ctx, g.expr);
  [[maybe_unused]] const auto marker = group_marker(ctx, g);
  using K = typename R::kernel;
  if constexpr (requires { K::run(device_of(ctx.ex), x, outs); }) {
    // A kernel family with its own launcher (fusor's, or a user's: see
    // docs/extending.md): it receives the group's expression with operand
    // groups already materialized as views. Extra launches it makes (a
    // temporary, a finalize) it counts itself.
    if (is_fusor_family_v<K> || !rehearsing()) K::run(device_of(ctx.ex), x, outs);
    count_launches(device_of(ctx.ex));
  } else {
    if (rehearsing()) return;  // (nothing to allocate: skip building the kernel and its name)
    constexpr int Rank = rank_v<X>;
    const auto k = make_elementwise_kernel<Rank>(shape_of(x), outs, x);
    launch(device_of(ctx.ex), k, describe(g));
  }
}

template <class Ctx, class Outs, class R, class... X>
void execute_sibling_group(Ctx& ctx, const sibling_group<R, X...>& g, const Outs& outs) {
  const auto xs = std::apply([&](const auto&... x) { return std::make_tuple(materialize_operands(ctx, x)...); }, g.exprs);
  [[maybe_unused]] const auto marker = group_marker(ctx, g);
  if constexpr (std::is_same_v<typename R::kernel, kernel_family::contraction>) {
    static_assert(sizeof...(X) == 3, "fusor: multi-output contraction groups have three outputs (Q, K, V)");
    const std::size_t n = std::apply(
        [&](const auto&... x) { return run_contraction_siblings(device_of(ctx.ex), x..., outs); }, xs);
    count_launches(device_of(ctx.ex), n);
  } else {
    if (rehearsing()) return;
    using X0 = std::tuple_element_t<0, std::tuple<X...>>;
    constexpr int Rank = rank_v<X0>;
    const auto s = shape_of(std::get<0>(xs));
    std::apply([&](const auto&... x) {
      const auto k = make_elementwise_kernel<Rank>(s, outs, x...);
      launch(device_of(ctx.ex), k, describe(g));
    }, xs);
  }
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
  if constexpr (std::is_same_v<typename Ex::space, device_space>) check_device_pointer(v.data(), what);
  else check_host_pointer(v.data(), what);
  (void)ex;
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
