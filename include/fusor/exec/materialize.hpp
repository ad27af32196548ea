#pragma once
/// @file exec/materialize.hpp
/// The state of one run (temporaries, memos of shared producers and of
/// multi-output sibling groups), the keys of the prepared-weights cache, and
/// materialize_operands: every operand of a group that its own kernel
/// computes (a group, an output of a sibling group) is run first into a
/// temporary view the group reads.
#include <fusor/exec/bind.hpp>
#include <fusor/exec/cuda_backend.hpp>
#include <fusor/exec/host_backend.hpp>
#include <fusor/exec/attention.hpp>
#include <fusor/exec/contraction.hpp>
#include <fusor/exec/reduction.hpp>
#include <fusor/exec/validate.hpp>
#include <fusor/pattern/plan_key.hpp>

#include <memory>
#include <new>
#include <typeinfo>
#include <vector>

namespace fusor::exec {

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

// prepared_key: pattern/plan_key.hpp
using fusor::detail::prepared_key;

/// Runs plan p (any plan_kind but a siblings set) into output views outs (a
/// tuple): the plan_runner below, through visit.
template <class Ctx, class P, class Outs>
void execute(Ctx& ctx, const P& p, const Outs& outs);

// Subtrees without a kernel operand (has_kernel_operand_v,
// pattern/plan_tree.hpp) pass through materialize_operands as they are.
template <class Ctx, class E>
auto materialize_operands(Ctx& ctx, const E& e) {
  constexpr plan_kind kind = plan_kind_v<E>;
  static_assert(kind != plan_kind::sibling_group && kind != plan_kind::sequence && kind != plan_kind::runtime_choice &&
                    kind != plan_kind::roots,
                "fusor: internal: materialize_operands: a plan root inside a group's expression");
  if constexpr (kind == plan_kind::node && is_view_map_node_v<E>) {
    // A shape op over a computed value (ops/view_map.hpp): the view op of
    // the temporary its own group wrote.
    const auto v = materialize_operands(ctx, fusor::get<0>(e.args));
    if constexpr (is_transpose_leaf_v<std::remove_cvref_t<decltype(v)>>) return e.op.f(transposed_view(fusor::get<0>(v.args)));
    else return e.op.f(v);
  } else if constexpr (kind == plan_kind::node && !has_kernel_operand_v<E>) {
    return e;
  } else if constexpr (kind == plan_kind::node) {
    return fusor::apply([&](const auto&... a) { return make_node_unchecked(e.op, materialize_operands(ctx, a)...); }, e.args);
  } else if constexpr (kind == plan_kind::guarded) {
    // The branch its check chose (pattern/plan_tree.hpp); both are read as
    // the same view type.
    using A = decltype(materialize_operands(ctx, e.recognized));
    static_assert(std::is_same_v<A, decltype(materialize_operands(ctx, e.written))>,
                  "fusor: internal: the branches of a guarded operand differ in type");
    if (e.holds) return materialize_operands(ctx, e.recognized);
    return materialize_operands(ctx, e.written);
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

}  // namespace fusor::exec
