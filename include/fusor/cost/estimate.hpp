#pragma once
/// @file cost/estimate.hpp
/// constexpr cost estimates of fusion groups and whole plans on a device
/// model. Everything here is a function of types and an element count, so it
/// runs at compile time for static extents and at run time otherwise.
///
/// Per group (one kernel) of N output elements:
///   bytes  = N * (sum of the element sizes of its distinct sources + output size)
///            (sources read once: an identity-tagged tensor used k times counts once;
///             broadcast operands are counted as if full: an upper bound; the
///             operands of a row kernel's op count once per pass over the row:
///             softmax 2, layer_norm 3, rms_norm 2)
///   flops  = N * (sum of the FLOPs per element of its ops)
///   t_mem  = bytes / (bandwidth * efficiency), divided by occupancy/0.5 when
///            registers leave fewer than half the warps resident (GPU only)
///   t_comp = flops / peak FP32
///   t      = launch + t_mem + t_comp - 0.95 * min(t_mem, t_comp)
/// The last line is XLA's GPU performance model (xla/service/gpu/model/
/// gpu_performance_model_base.cc: "combine" of memory and compute time with a
/// 0.95 overlap factor). A plan's time is the sum over its groups.
#include <fusor/core/device_model.hpp>
#include <fusor/pattern/group.hpp>

namespace fusor::cost {

/// Totals of one group or plan for a given element count.
struct estimate {
  int launches = 0;
  double bytes = 0;     ///< global-memory bytes read + written
  double flops = 0;     ///< floating-point operations
  int registers = 0;    ///< largest per-thread register estimate of its kernels
  double seconds = 0;   ///< estimated time on the model
  constexpr estimate operator+(const estimate& o) const {
    return {launches + o.launches, bytes + o.bytes, flops + o.flops, registers > o.registers ? registers : o.registers,
            seconds + o.seconds};
  }
};

/// Per-element figures of one group's expression (operand groups are sources).
struct element_stats {
  double bytes_read = 0;   ///< bytes per output element read from distinct sources
  double bytes_written = 0;
  double flops = 0;
  int sources = 0;         ///< distinct sources
  int nodes = 0;           ///< ops computed in registers
  int transcendentals = 0; ///< ops of 4+ FLOPs (libm-style bodies)
  int param_bytes = 0;     ///< kernel parameter bytes (sources + sink)
  int live = 0;            ///< values live at once (Sethi-Ullman count, see live_v)
};

namespace detail {
template <class E, int K>
struct anonymous_source {};  // an untagged operand: distinct from every other


template <class E>
inline constexpr bool is_source_v = is_view_v<E>;
template <class R, class X>
inline constexpr bool is_source_v<group<R, X>> = true;
template <std::size_t I, class SG>
inline constexpr bool is_source_v<sibling_output<I, SG>> = true;
template <class F, class S>
inline constexpr bool is_source_v<guarded_plan<F, S>> = true;

/// Type-level walk of one group's expression: distinct sources (keys) and
/// their per-element bytes, node and FLOP counts.
template <class E, class Keys>
struct walk {
  using keys = Keys;
  static constexpr element_stats stats{};
};

template <class E, class Keys>
  requires is_source_v<E>
struct walk<E, Keys> {
  static constexpr bool tagged = [] {
    if constexpr (is_view_v<E>) return !std::is_void_v<typename E::id>;
    else return statically_identical_v<E>;
  }();
  using key = std::conditional_t<tagged, E, anonymous_source<E, list_length<Keys>>>;
  static constexpr bool fresh = !list_contains<key, Keys>;
  using keys = std::conditional_t<fresh, typename concat_lists<Keys, type_list<key>>::type, Keys>;
  static constexpr double size = [] {
    if constexpr (is_view_v<E>) return double(sizeof(typename E::value_type));
    else return double(sizeof(value_t<E>));
  }();
  static constexpr element_stats stats{fresh ? size : 0.0, 0, 0, fresh ? 1 : 0, 0, 0,
                                       fresh ? int(8 + 8 * (rank_v<E> > 0 ? rank_v<E> : 1)) : 0};
};

/// Values a thread keeps live at once while evaluating E (Sethi & Ullman
/// 1970, "The generation of optimal code for arithmetic expressions"): a
/// loaded source 1; constants and scalars 0 (immediates, parameters); a node
/// evaluates its operands largest first, so it needs max_i(l_i + i) over its
/// operands' counts sorted in decreasing order, and at least its operand
/// count plus 4 values of scratch for an op of 4+ FLOPs (libm-style bodies).
/// A chain needs the same at any length; a balanced tree of n leaves
/// log2(n) + 1.
template <class E>
inline constexpr int live_v = 0;
template <class E>
  requires is_source_v<E>
inline constexpr int live_v<E> = 1;
template <int N>
constexpr int sethi_ullman(int (&l)[N], int arity, int scratch) {
  for (int i = 0; i < arity; ++i)  // insertion sort, decreasing; arity is small
    for (int j = i; j > 0 && l[j] > l[j - 1]; --j) {
      const int t = l[j];
      l[j] = l[j - 1];
      l[j - 1] = t;
    }
  int need = arity + scratch;
  for (int i = 0; i < arity; ++i) need = l[i] + i > need ? l[i] + i : need;
  return need;
}
template <class Op, class... A>
inline constexpr int live_v<node<Op, A...>> = [] {
  int l[sizeof...(A) + 1] = {live_v<A>..., 0};
  return sethi_ullman(l, int(sizeof...(A)), Op::flops >= 4 ? 4 : 0);
}();

/// Walks operands left to right, threading the distinct-source keys.
template <class L, class Keys>
struct walk_list {
  using keys = Keys;
  static constexpr element_stats stats{};
};
template <class A, class... Rest, class Keys>
struct walk_list<type_list<A, Rest...>, Keys> {
  using first = walk<A, Keys>;
  using rest = walk_list<type_list<Rest...>, typename first::keys>;
  using keys = typename rest::keys;
  static constexpr element_stats stats{
      first::stats.bytes_read + rest::stats.bytes_read, 0, first::stats.flops + rest::stats.flops,
      first::stats.sources + rest::stats.sources, first::stats.nodes + rest::stats.nodes,
      first::stats.transcendentals + rest::stats.transcendentals, first::stats.param_bytes + rest::stats.param_bytes};
};
/// Times a kernel reads (and re-evaluates) an op's operands per element:
/// row kernels make several passes over a row (softmax 2, layer_norm 3,
/// rms_norm 2: kernels/reduction.hpp); everything else 1.
template <class Op>
inline constexpr int operand_passes = [] {
  if constexpr (requires { Op::passes; }) return int(Op::passes);
  else return 1;
}();
template <class Op, class... A, class Keys>
struct walk<node<Op, A...>, Keys> {
  using operands = walk_list<type_list<A...>, Keys>;
  using keys = typename operands::keys;
  static constexpr element_stats stats{operands::stats.bytes_read * operand_passes<Op>,
                                       0,
                                       operands::stats.flops * operand_passes<Op> + Op::flops,
                                       operands::stats.sources,
                                       operands::stats.nodes + 1,
                                       operands::stats.transcendentals + (Op::flops >= 4 ? 1 : 0),
                                       operands::stats.param_bytes + int(sizeof(Op))};
};
}  // namespace detail

/// Per-element stats of a group computing expression E (operand groups and
/// views are its sources).
template <class E>
constexpr element_stats group_stats() {
  element_stats s = detail::walk<E, type_list<>>::stats;
  s.bytes_written = double(sizeof(value_t<E>));
  s.live = detail::live_v<E>;
  s.param_bytes += int(8 + 8 * (rank_v<E> > 0 ? rank_v<E> : 1)) + 64;  // sink + extents, size, path
  return s;
}

/// Register estimate of a kernel with these stats: 16 for indexing and loop
/// state, 2 per distinct source (its address and index) and 2 per value live
/// at once (`live`: the Sethi-Ullman count of the expression, with 4 values
/// of scratch while an op of 4+ FLOPs runs). Values die when consumed, so a
/// chain of any length needs the same registers; counting every op instead
/// (an earlier version) split long chains into one-op kernels on GPUs. A
/// coarse, documented guess; nvcc's real count shows with -Xptxas -v.
constexpr int register_estimate(const element_stats& s) {
  return 16 + 2 * s.sources + 2 * s.live;
}

/// Fraction of a GPU SM's thread slots that registers allow to be resident.
constexpr double occupancy(const device_model& m, int registers) {
  if (!m.gpu) return 1.0;
  const int per_thread = registers < 32 ? 32 : ((registers + 7) / 8) * 8;  // allocation granularity 8
  const int threads = m.registers_per_sm / per_thread;
  const int resident = threads < m.max_threads_per_sm ? threads : m.max_threads_per_sm;
  return double(resident) / double(m.max_threads_per_sm);
}

/// Estimated time of one kernel on model m (see the file comment).
constexpr double kernel_seconds(const device_model& m, double bytes, double flops, int registers) {
  double t_mem = bytes / (m.hbm_bytes_per_s * m.hbm_efficiency);
  const double occ = occupancy(m, registers);
  if (occ < 0.5) t_mem *= 0.5 / (occ > 0 ? occ : 1e-3);
  const double t_comp = flops / m.fp32_flops;
  return m.launch_seconds + t_mem + t_comp - 0.95 * (t_mem < t_comp ? t_mem : t_comp);
}

/// Estimate of one group of n output elements computing E.
template <class E>
constexpr estimate group_estimate(const device_model& m, double n) {
  constexpr element_stats s = group_stats<E>();
  const int regs = register_estimate(s);
  const double bytes = n * (s.bytes_read + s.bytes_written), flops = n * s.flops;
  return {1, bytes, flops, regs, kernel_seconds(m, bytes, flops, regs)};
}

namespace detail {
template <class G>
struct kernel_estimate;
template <class R, class X>
struct kernel_estimate<group<R, X>> {
  // A rule may bring its own cost rule: `template <class X> static constexpr
  // cost::estimate estimate(const device_model&, double n)`.
  static constexpr estimate of(const device_model& m, double n) {
    if constexpr (requires { R::template estimate<X>(m, n); }) return R::template estimate<X>(m, n);
    else return group_estimate<X>(m, n);
  }
};
template <class R, class... X>
struct kernel_estimate<sibling_group<R, X...>> {
  // One kernel: distinct sources across all roots, every root's output.
  static constexpr estimate of(const device_model& m, double n) {
    constexpr element_stats s = [] {
      element_stats r = walk_list<type_list<X...>, type_list<>>::stats;
      r.bytes_written = (0.0 + ... + double(sizeof(value_t<X>)));
      int l[sizeof...(X) + 1] = {live_v<X>..., 0};  // roots one after another, each result kept for its store
      r.live = sethi_ullman(l, int(sizeof...(X)), 0);
      return r;
    }();
    const int regs = register_estimate(s);
    const double bytes = n * (s.bytes_read + s.bytes_written), flops = n * s.flops;
    return {1, bytes, flops, regs, kernel_seconds(m, bytes, flops, regs)};
  }
};
template <class L>
struct sum_kernels;
template <class... K>
struct sum_kernels<type_list<K...>> {
  static constexpr estimate of(const device_model& m, double n) {
    return (estimate{} + ... + kernel_estimate<typename kernel_group<K>::type>::of(m, n));
  }
};
}  // namespace detail

/// Estimate of a whole planned tree: the sum over its distinct kernels, every
/// kernel taken at n elements (exact for elementwise plans without
/// broadcasting; an upper bound otherwise).
template <class Plan>
constexpr estimate plan_estimate(const device_model& m, double n) {
  return detail::sum_kernels<kernels_of_t<Plan>>::of(m, n);
}

}  // namespace fusor::cost
