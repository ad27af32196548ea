#pragma once
/// @file exec/host_packets.hpp
/// The host's inner loop for the elementwise family: the group's expression
/// trees evaluated on packs of W elements (core/pack.hpp), so every op runs
/// as SIMD instructions (transcendental ones through SLEEF's vector
/// functions, ops/math.hpp) instead of once per element.
///
/// Same values as the one-element-per-thread algorithm of the device
/// (kernels/elementwise.hpp), bit for bit: lanes are independent and each
/// lane computes what the scalar code computes (ops/math.hpp's packs agree
/// with its scalars). Each pack's sources are loaded and all its outputs
/// computed before any store, as kernels/elementwise.hpp does per element,
/// so an output may alias an input exactly (in place).
///
/// Access: contiguous operands (the kernel's contiguous and vectorized
/// paths) load W consecutive elements; any other layout (broadcasts,
/// transposes, slices) walks runs along the last dim: per run one dot of the
/// multi-index with each operand's strides, then a unit-stride operand loads
/// W consecutive elements, a stride-0 one (a per-channel parameter) one
/// element for all lanes, any other gathers base + j * stride; a last dim
/// shorter than W gathers each lane through its multi-index, stepped once
/// per element (no division). Ranges of host_flat_rows_min rows or more,
/// dense across rows in every operand but per-position parameters (NHWC's
/// [C]), are walked flat instead, the parameters read from a per-position
/// buffer (exec/host_layout.hpp). A tail shorter than W repeats its last
/// element in the unused lanes and stores only the lanes it has. Along a
/// run, subtrees that read only sources constant along it (batch_norm's
/// per-channel scale over NCHW) are evaluated once per run
/// (exec/run_invariant.hpp), with the same bits.
///
/// nvcc translation units keep the per-element loop on the host (the same
/// bits; nvcc's front end is not asked to compile the packs).
#include <fusor/exec/host_layout.hpp>
#include <fusor/exec/run_invariant.hpp>
#include <fusor/kernels/elementwise.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

namespace fusor::exec {

namespace host_packets_detail {

template <class S>
using compute_of_t = decltype(to_compute(cuda::std::declval<typename S::value_type>()));

/// Lanes [0, n) of source s at element offsets off[l] (l >= n repeat lane n - 1).
template <int W, class S>
FUSOR_HOST_INLINE pack<compute_of_t<S>, W> gather(const S& s, const index_t (&off)[W]) {
  pack<compute_of_t<S>, W> p;
  for (int l = 0; l < W; ++l) p.v[l] = to_compute(s.data[off[l]]);
  return p;
}

/// W consecutive elements of s from element i.
template <int W, class S>
FUSOR_HOST_INLINE pack<compute_of_t<S>, W> load(const S& s, index_t i) {
  using C = compute_of_t<S>;
  pack<C, W> p;
  const auto* src = s.data + i;
  if constexpr (std::is_same_v<C, typename S::value_type>) std::memcpy(p.data(), src, sizeof(C) * W);
  else for (int l = 0; l < W; ++l) p.v[l] = to_compute(src[l]);
  return p;
}

/// Lanes [0, n) of r (a pack or a scalar, broadcast) stored as T at dst.
template <class T, int W, class X>
FUSOR_HOST_INLINE void store(T* dst, const X& r, int n) {
  if constexpr (is_pack_v<X> && std::is_same_v<typename X::value_type, T>) {
    if (n == W) {
#if FUSOR_PACK_VECTORS
      if constexpr (fusor::detail::vector_storage_v<T, W>) {
        // A store typed as T (memcpy's would alias everything, so the loop
        // would reload every pointer it reads after each store).
        using unaligned __attribute__((vector_size(sizeof(T) * W), aligned(alignof(T)))) = T;
        *reinterpret_cast<unaligned*>(dst) = r.v;
        return;
      }
#endif
      std::memcpy(dst, r.data(), sizeof(T) * W);
      return;
    }
  }
  for (int l = 0; l < n; ++l) dst[l] = from_compute<T>(kernels::lane_of(r, l));
}

}  // namespace host_packets_detail

/// Runs output elements [begin, end) of elementwise kernel k on packs of W
/// lanes (see file comment). begin need not be aligned.
template <int W, int R, class... S, class... Roots, class... O>
void run_packets(const kernels::elementwise_kernel<R, fusor::tuple<S...>, fusor::tuple<Roots...>, fusor::tuple<O...>>& k,
                 index_t begin, index_t end, bool coalesce = true) {
  namespace d = host_packets_detail;
  constexpr std::size_t NO = sizeof...(O);
  // Computes every root on the loaded values, then stores lanes [0, n) of
  // each output: W consecutive elements from `base` when `dense`, else at
  // offsets out_off[K][l].
  const auto eval_store_roots = [&](const auto& roots, const auto& vals, int n, bool dense, index_t base,
                                    const index_t (*out_off)[W]) FUSOR_LAMBDA_INLINE {
    [&]<std::size_t... K>(std::index_sequence<K...>) FUSOR_LAMBDA_INLINE {
      const auto results = fusor::make_tuple(fusor::get<K>(roots).eval(vals)...);
      (
          [&]() FUSOR_LAMBDA_INLINE {
            const auto& o = fusor::get<K>(k.sinks);
            using T = typename std::remove_cvref_t<decltype(o)>::value_type;
            const auto& r = fusor::get<K>(results);
            if (dense) {
              d::store<T, W>(o.data + base, r, n);
            } else {
              for (int l = 0; l < n; ++l) o.data[out_off[K][l]] = from_compute<T>(kernels::lane_of(r, l));
            }
          }(),
          ...);
    }(std::make_index_sequence<NO>{});
  };
  const auto eval_store = [&](const auto& vals, int n, bool dense, index_t base, const index_t (*out_off)[W]) {
    eval_store_roots(k.roots, vals, n, dense, base, out_off);
  };

  if (k.path != kernels::access::strided) {
    index_t i = begin;
    for (; i + W <= end; i += W) {
      const auto vals = fusor::apply([&](const auto&... s) { return fusor::make_tuple(d::load<W>(s, i)...); }, k.sources);
      eval_store(vals, W, true, i, nullptr);
    }
    if (i < end) {
      const int n = int(end - i);
      index_t off[W];
      for (int l = 0; l < W; ++l) off[l] = i + std::min(l, n - 1);
      const auto vals = fusor::apply([&](const auto&... s) { return fusor::make_tuple(d::gather<W>(s, off)...); }, k.sources);
      eval_store(vals, n, true, i, nullptr);
    }
    return;
  }

  // Strided: in runs along the last dim after coalesce_dims (file comment).
  if constexpr (R > 1) {
    if (coalesce) {
      auto merged = k;
      if (coalesce_dims(merged)) {
        return run_packets<W>(merged, begin, end, false);
      }
    }
  }
  using multi_index = typename std::remove_cvref_t<decltype(k)>::multi_index;
  const index_t row_len = R > 0 ? k.extent[R > 0 ? R - 1 : 0] : 1;
  multi_index idx = k.decompose(begin);
  if (R > 0 && row_len >= W) {
    constexpr int last = R > 0 ? R - 1 : 0;
    const auto dot = [&](const auto& stride) {
      index_t o = 0;
      for (int dd = 0; dd < R; ++dd) o += idx[dd] * stride[dd];
      return o;
    };
    // Subtrees reading only sources constant along a run are evaluated once
    // per run (exec/run_invariant.hpp) and read as extra loaded values.
    namespace ri = run_invariant;
    constexpr std::uint64_t mask = ri::source_mask_v<fusor::tuple<S...>>;
    constexpr std::uint64_t row_mask = ri::row_mask_v<fusor::tuple<S...>>;
    constexpr int NS = int(sizeof...(S));
    constexpr int hoisted = ri::count_v<fusor::tuple<Roots...>, mask>;
    const auto roots = ri::rewrite_roots<mask, NS>(k.roots);
    const auto hoisted_trees = ri::collect<mask>(k.roots);
    constexpr int row_hoisted = ri::count_v<std::remove_cvref_t<decltype(roots)>, row_mask>;
    const auto hoisted_values = [&](const index_t* base) {
      const auto scalars = [&]<std::size_t... J>(std::index_sequence<J...>) {
        return fusor::make_tuple(to_compute(fusor::get<J>(k.sources).data[base[J]])...);
      }(std::make_index_sequence<sizeof...(S)>{});
      return std::apply([&](const auto&... h) { return std::make_tuple(h.eval(scalars)...); }, hoisted_trees);
    };
    // The runs, evaluating `eval_roots` on the sources, the run's hoisted
    // values and `extra(p)`: packs for positions [p, p + W) along the last dim.
    const auto run_loop = [&](const auto& eval_roots, const auto& extra) {
      // Each operand's offset of the run's first element: dotted once, then
      // stepped from run to run (a division-free, multiply-free carry).
      index_t src_base[sizeof...(S) > 0 ? sizeof...(S) : 1]{}, out_base[sizeof...(O)]{};
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        ((src_base[J] = dot(fusor::get<J>(k.sources).stride)), ...);
      }(std::make_index_sequence<sizeof...(S)>{});
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((out_base[K] = dot(fusor::get<K>(k.sinks).stride)), ...);
      }(std::make_index_sequence<NO>{});
      const auto step_all = [&](index_t by, int dd) {
        [&]<std::size_t... J>(std::index_sequence<J...>) {
          ((src_base[J] += by * fusor::get<J>(k.sources).stride[dd]), ...);
        }(std::make_index_sequence<sizeof...(S)>{});
        [&]<std::size_t... K>(std::index_sequence<K...>) {
          ((out_base[K] += by * fusor::get<K>(k.sinks).stride[dd]), ...);
        }(std::make_index_sequence<NO>{});
      };
      for (index_t i = begin; i < end;) {
        const index_t run = std::min<index_t>(row_len - idx[last], end - i);
        const index_t first = idx[last];
        // Every output one unit-stride run at the same place: W-wide stores.
        const bool dense = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return ((fusor::get<K>(k.sinks).stride[last] == 1 && out_base[K] == out_base[0]) && ...);
        }(std::make_index_sequence<NO>{});
        // Per run, in registers: the invariant sources broadcast (the loop's
        // stores could alias them, so the compiler would reload them per
        // pack) and the hoisted values (on scalars, at the run's start)
        // broadcast.
        const auto invariant_packs = [&]<std::size_t... J>(std::index_sequence<J...>) {
          const auto one = [&](const auto& src, index_t base) {
            using Src = std::remove_cvref_t<decltype(src)>;
            if constexpr (Src::run_invariant) return pack<d::compute_of_t<Src>, W>(to_compute(src.data[base]));
            else return 0;
          };
          return std::make_tuple(one(fusor::get<J>(k.sources), src_base[J])...);
        }(std::make_index_sequence<sizeof...(S)>{});
        const auto hoisted_packs = std::apply(
            [](const auto&... h) { return std::make_tuple(pack<std::remove_cvref_t<decltype(h)>, W>(h)...); },
            hoisted_values(src_base));
        // The loaded values of the pack at j: the sources (`load(I)`), then
        // the hoisted values, then `extra`.
        const auto values = [&](index_t j, const auto& load) {
          return [&]<std::size_t... J>(std::index_sequence<J...>) {
            return std::apply(
                [&](const auto&... h) { return fusor::make_tuple(load(std::integral_constant<std::size_t, J>{})..., h...); },
                std::tuple_cat(hoisted_packs, extra(first + j)));
          }(std::make_index_sequence<sizeof...(S)>{});
        };
        index_t j = 0;
        // The common case without a branch per pack: every other source and
        // every output unit-stride, full packs.
        const bool unit = dense && [&]<std::size_t... J>(std::index_sequence<J...>) {
          return ((S::run_invariant || fusor::get<J>(k.sources).stride[last] == 1) && ...);
        }(std::make_index_sequence<sizeof...(S)>{});
        if (unit) {
          for (; j + W <= run; j += W) {
            const auto loaded = values(j, [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
              if constexpr (std::tuple_element_t<I, std::tuple<S...>>::run_invariant) return std::get<I>(invariant_packs);
              else return d::load<W>(fusor::get<I>(k.sources), src_base[I] + j);
            });
            eval_store_roots(eval_roots, loaded, W, true, out_base[0] + j, nullptr);
          }
        }
        for (; j < run; j += W) {
          const int n = int(std::min<index_t>(W, run - j));
          const auto loaded = values(j, [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
            const auto& src = fusor::get<I>(k.sources);
            using Src = std::remove_cvref_t<decltype(src)>;
            using C = d::compute_of_t<Src>;
            const index_t base = src_base[I];
            if constexpr (Src::run_invariant) {
              return std::get<I>(invariant_packs);
            } else {
              const index_t step = src.stride[last];
              if (step == 0) return pack<C, W>(to_compute(src.data[base]));
              if (step == 1 && n == W) return d::load<W>(src, base + j);
              index_t off[W];
              for (int l = 0; l < W; ++l) off[l] = base + (j + std::min(l, n - 1)) * step;
              return d::gather<W>(src, off);
            }
          });
          index_t out_off[NO][W];
          if (!dense) {
            [&]<std::size_t... K>(std::index_sequence<K...>) {
              (
                  [&] {
                    const index_t step = fusor::get<K>(k.sinks).stride[last];
                    for (int l = 0; l < W; ++l) out_off[K][l] = out_base[K] + (j + l) * step;
                  }(),
                  ...);
            }(std::make_index_sequence<NO>{});
          }
          eval_store_roots(eval_roots, loaded, n, dense, out_base[0] + j, out_off);
        }
        i += run;
        idx[last] += run;
        step_all(run, last);
        for (int dd = last; dd > 0 && idx[dd] == k.extent[dd]; --dd) {
          idx[dd] = 0;
          step_all(-k.extent[dd], dd);
          ++idx[dd - 1];
          step_all(1, dd - 1);
        }
      }
    };
    // Subtrees over sources constant along every dim but the last (NHWC's
    // per-channel parameters) are computed once per position along the last
    // dim into a periodic buffer (positions [0, W) stored again after the
    // row: W lanes from any position), for rows up to host_row_buffer_max
    // and ranges of two or more. Over operands dense across rows
    // (exec/host_layout.hpp) and many short rows, the range is walked flat,
    // the flagged sources buffered too: no per-row set-up (C = 64: 4 packs).
    if constexpr (row_mask != 0) {
      // Flat needs what is constant along a run to be constant everywhere,
      // and pays for its buffers once rows are short against the range.
      constexpr bool flat_possible = (mask & ~row_mask) == 0;
      const bool flat = flat_possible && end - begin >= host_flat_rows_min * row_len && dense_across_rows(k);
      if (flat || (row_hoisted > 0 && row_len <= host_row_buffer_max && end - begin >= 2 * row_len)) {
        const auto buffer = [&](const auto& tree) {
          const auto at = [&](index_t p, int n) {
            return [&]<std::size_t... J>(std::index_sequence<J...>) {
              const auto one = [&](const auto& src) {
                using Src = std::remove_cvref_t<decltype(src)>;
                using C = d::compute_of_t<Src>;
                if constexpr (!Src::row_invariant) {
                  return pack<C, W>(to_compute(src.data[0]));  // not read by the tree
                } else {
                  index_t off[W];
                  for (int l = 0; l < W; ++l) off[l] = (p + std::min(l, n - 1)) * src.stride[last];
                  return d::gather<W>(src, off);
                }
              };
              return fusor::make_tuple(one(fusor::get<J>(k.sources))...);
            }(std::make_index_sequence<sizeof...(S)>{});
          };
          using V = typename decltype(tree.eval(at(0, W)))::value_type;
          auto b = std::make_unique<V[]>(std::size_t(row_len + W));  // (not a vector: bools)
          for (index_t p = 0; p < row_len; p += W) {
            const int n = int(std::min<index_t>(W, row_len - p));
            const auto r = tree.eval(at(p, n));
            for (int l = 0; l < n; ++l) b[std::size_t(p + l)] = r.v[l];
          }
          std::copy(b.get(), b.get() + W, b.get() + row_len);  // row_len >= W
          return b;
        };
        const auto row_trees = ri::collect<row_mask>(roots);
        const auto make_buffers = [&] {
          return std::apply([&](const auto&... t) { return std::make_tuple(buffer(t)...); }, row_trees);
        };
        // The flagged sources' values per position (flat only; empty otherwise).
        const auto make_source_buffers = [&] {
          return [&]<std::size_t... J>(std::index_sequence<J...>) {
            return std::make_tuple([&] {  // (if constexpr: no buffer code for non-parameters)
              if constexpr (!S::row_invariant) return std::unique_ptr<d::compute_of_t<S>[]>();
              else return flat ? buffer(kernels::k_input<int(J)>{}) : std::unique_ptr<d::compute_of_t<S>[]>();
            }()...);
          }(std::make_index_sequence<sizeof...(S)>{});
        };
        // An allocation failure here (inside an OpenMP region, where an
        // exception would terminate) falls back to the unbuffered loop.
        decltype(make_buffers()) buffers;
        decltype(make_source_buffers()) source_buffers;
        try {
          buffers = make_buffers();
          source_buffers = make_source_buffers();
        } catch (const std::bad_alloc&) {
          run_loop(roots, [](index_t) { return std::tuple<>(); });
          return;
        }
        const auto starts = std::apply([](const auto&... b) { return std::make_tuple(b.get()...); }, buffers);
        // W values of a periodic buffer from position p.
        const auto read = [](const auto* v, index_t p) FUSOR_LAMBDA_INLINE {
          pack<std::remove_cvref_t<decltype(*v)>, W> q;
          std::memcpy(q.data(), v + p, sizeof(q.v[0]) * W);
          return q;
        };
        const auto buffered = [&](index_t p) FUSOR_LAMBDA_INLINE {
          return std::apply([&](const auto*... b) { return std::make_tuple(read(b, p)...); }, starts);
        };
        const auto row_roots = ri::rewrite_roots<row_mask, NS + hoisted>(roots);
        if (flat) {
          index_t base[sizeof...(S) > 0 ? sizeof...(S) : 1]{};
          [&]<std::size_t... J>(std::index_sequence<J...>) {
            ((base[J] = dot(fusor::get<J>(k.sources).stride)), ...);
          }(std::make_index_sequence<sizeof...(S)>{});
          const index_t out = dot(fusor::get<0>(k.sinks).stride);  // every output's, all dense alike
          const auto hoisted_packs = std::apply(  // constant everywhere here
              [](const auto&... h) { return std::make_tuple(pack<std::remove_cvref_t<decltype(h)>, W>(h)...); },
              hoisted_values(base));
          index_t p = idx[last];
          // The pack at i: full (no branch per operand, W-wide stores) or the tail.
          const auto pack_at = [&](index_t i, auto full) FUSOR_LAMBDA_INLINE {
            constexpr bool Full = decltype(full)::value;
            const int n = Full ? W : int(end - begin - i);
            const auto loaded = [&]<std::size_t... J>(std::index_sequence<J...>) {
              const auto one = [&](const auto& src, const auto& values, index_t at) {
                if constexpr (std::remove_cvref_t<decltype(src)>::row_invariant) {
                  return read(values.get(), p);
                } else if constexpr (Full) {
                  return d::load<W>(src, at);
                } else {
                  index_t off[W];
                  for (int l = 0; l < W; ++l) off[l] = at + std::min(l, n - 1);
                  return d::gather<W>(src, off);
                }
              };
              return std::apply([&](const auto&... h) {
                return fusor::make_tuple(one(fusor::get<J>(k.sources), std::get<J>(source_buffers), base[J] + i)..., h...);
              }, std::tuple_cat(hoisted_packs, buffered(p)));
            }(std::make_index_sequence<sizeof...(S)>{});
            eval_store_roots(row_roots, loaded, Full ? W : n, true, out + i, nullptr);
          };
          index_t i = 0;
          for (; i + W <= end - begin; i += W) {
            pack_at(i, std::true_type{});
            p += W;
            if (p >= row_len) p -= row_len;
          }
          if (i < end - begin) pack_at(i, std::false_type{});
          return;
        }
        run_loop(row_roots, [&](index_t p) { return buffered(p); });
        return;
      }
    }
    run_loop(roots, [](index_t) { return std::tuple<>(); });
    return;
  }
  const auto offsets = [](const multi_index (&lanes)[W], const auto& stride, index_t (&off)[W]) {
    for (int l = 0; l < W; ++l) {
      index_t o = 0;
      for (int dd = 0; dd < R; ++dd) o += lanes[l][dd] * stride[dd];
      off[l] = o;
    }
  };
  multi_index lanes[W];
  index_t out_off[NO][W];
  for (index_t i = begin; i < end; i += W) {
    const int n = int(std::min<index_t>(W, end - i));
    for (int l = 0; l < n; ++l) {
      lanes[l] = idx;
      k.advance(idx);
    }
    for (int l = n; l < W; ++l) lanes[l] = lanes[n - 1];
    const auto vals = fusor::apply(
        [&](const auto&... s) {
          const auto one = [&](const auto& src) {
            index_t off[W];
            offsets(lanes, src.stride, off);
            return d::gather<W>(src, off);
          };
          return fusor::make_tuple(one(s)...);
        },
        k.sources);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (offsets(lanes, fusor::get<K>(k.sinks).stride, out_off[K]), ...);
    }(std::make_index_sequence<NO>{});
    eval_store(vals, n, false, 0, out_off);
  }
}

/// Runs elements [begin, end) of the elementwise kernel k on the host: packs
/// in host translation units, the device's per-element loop under nvcc.
template <class K>
void run_host_range(const K& k, index_t begin, index_t end) {
#if FUSOR_HOST_PACKETS
  run_packets<host_pack_lanes>(k, begin, end);
#else
  k.run_range(begin, end);
#endif
}

}  // namespace fusor::exec
