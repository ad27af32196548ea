// Differential fuzzer: fusor's fused host plan (fusor::host()) against the
// unfused reference (fusor::unfused(): one kernel per op, temporaries in
// compute precision). Results must be bitwise equal (NaN == NaN, any payload).
//
// The expression structures are C++ types generated ahead of time
// (gen_fuzz_cases.py -> fuzz_cases.inc, compiled by fuzz_part*.cpp). Each draw
// is a pure function of (case, 64-bit seed): rank-preserving random extents
// (0 and 1 included), broadcasting (extent 1, missing leading dims, static 1s),
// strides (row-major, transposed, padded, zero-stride broadcast views,
// optionally reversed), misaligned data pointers, inputs sharing memory,
// null data with zero elements, in-place outputs, values with NaN, +-Inf,
// +-0, denormals, huge and tiny numbers, run-time scalars.
//
// This file: the draws (plan_inputs, plan_outputs), the bitwise comparison
// and reports (judge), the suite description for fuzz_cli (elementwise_suite).
// main() is fuzz_main.cpp; fuzz_gpu reuses the draws (fuzz_gpu_*.cu).
#include "fuzz_cli.hpp"
#include "fuzz_support.hpp"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <sstream>
#include <string>

namespace fz {

statistics g_stats{};

// ===================================================================== inputs
void plan_inputs(draw& d, const options& o) {
  rng& r = d.r;
  draw_scalars(r);
  int rmax = 0;
  for (const auto& s : d.spec) rmax = std::max(rmax, s.rank);

  // The broadcast shape all inputs align to (right-aligned).
  dims full{};
  const double p = r.unit();
  d.size_class = p < 0.05 ? "large" : (p < 0.35 ? "tiny" : "small");
  d.dense = r.chance(d.size_class == "large" ? 0.5 : 0.2);
  for (int k = 0; k < rmax; ++k) {
    if (d.size_class == "tiny") full[std::size_t(k)] = r.range(1, 3);
    else full[std::size_t(k)] = r.chance(0.15) ? 1 : r.range(2, rmax <= 2 ? 9 : 6);
  }
  if (rmax > 0 && r.chance(0.07)) {
    full[r.below(std::uint64_t(rmax))] = 0;
    d.size_class += "+zero";
  }
  // static extents pin their dims
  for (const auto& s : d.spec)
    for (int k = 0; k < s.rank; ++k)
      if (s.static_ext[std::size_t(k)] > 1 || s.static_ext[std::size_t(k)] == 0)
        full[std::size_t(rmax - s.rank + k)] = s.static_ext[std::size_t(k)];
  if (d.size_class == "large" && rmax > 0) {
    // two or more host chunks (2^15 elements each): OpenMP and chunk borders
    std::int64_t rest = 1;
    int free_dim = -1;
    for (int k = 0; k < rmax; ++k) {
      bool pinned = false;
      for (const auto& s : d.spec) {
        const int j = k - (rmax - s.rank);
        if (j >= 0 && s.static_ext[std::size_t(j)] != -1) pinned = true;
      }
      if (!pinned && free_dim < 0 && full[std::size_t(k)] != 0) free_dim = k;
      else rest *= full[std::size_t(k)];
    }
    if (free_dim >= 0 && rest > 0) full[std::size_t(free_dim)] = std::max<std::int64_t>(1, r.range(40000, 90000) / rest);
  }

  for (int i = 0; i < 3; ++i) {
    view_layout& l = d.in[i];
    const input_spec& s = d.spec[i];
    l.rank = s.rank;
    for (int k = 0; k < s.rank; ++k) {
      const std::int64_t st = s.static_ext[std::size_t(k)];
      const std::int64_t f = full[std::size_t(rmax - s.rank + k)];
      l.shape[std::size_t(k)] = st >= 0 ? st : (!d.dense && r.chance(0.22) ? 1 : f);
    }
    draw_layout(r, l, true, o, d.dense);
    // share memory with an earlier input of the same dtype (different view)
    int shared = -1;
    if (i > 0 && !d.dense && r.chance(0.1))
      for (int j = 0; j < i; ++j)
        if (d.spec[j].type == s.type && !d.in[j].null_data) shared = j;
    if (l.elements() == 0 && r.chance(0.3)) {
      l.null_data = true;
      l.how += "+null";
    } else if (shared >= 0) {
      // half the time the very same view (two tags, or tagged and untagged, on one tensor)
      bool same = d.in[shared].rank == l.rank && r.chance(0.5);
      for (int k = 0; k < l.rank && same; ++k)
        same = s.static_ext[std::size_t(k)] < 0 || s.static_ext[std::size_t(k)] == d.in[shared].shape[std::size_t(k)];
      if (same) {
        l = d.in[shared];
        l.how += std::string("+same-view-as-") + "abc"[shared];
      } else {
        l.buffer = d.in[shared].buffer;
        l.how += std::string("+shares-memory-with-") + "abc"[shared];
      }
    } else {
      l.buffer = new_buffer(d, s.type, std::string("input ") + "abc"[i]);
    }
  }
  for (std::size_t b = 0; b < d.buffers.size(); ++b) {
    std::int64_t need = 1;
    for (const auto& l : d.in)
      if (l.buffer == int(b) && !l.null_data) need = std::max(need, extent_of(l));
    allocate(d.buffers[b], std::size_t(need));
    fill(r, d.buffers[b]);
  }
}

// ===================================================================== outputs
void plan_outputs(draw& d, const std::vector<dt>& types, const std::vector<std::vector<std::int64_t>>& shapes,
                  bool in_place_ok, const options& o) {
  rng& r = d.r;
  d.out.assign(types.size(), view_layout{});
  d.out_type = types;
  d.out_alias.assign(types.size(), -1);
  for (std::size_t i = 0; i < types.size(); ++i) {
    view_layout& l = d.out[i];
    l.rank = int(shapes[i].size());
    for (int k = 0; k < l.rank; ++k) l.shape[std::size_t(k)] = shapes[i][std::size_t(k)];
    // in place: exactly the view of an input (same memory, shape, strides, element size)
    if (r.chance(0.15) && in_place_ok) {
      for (int j = 0; j < 3; ++j) {
        const view_layout& v = d.in[j];
        if (v.null_data || v.rank != l.rank || dt_size(d.spec[j].type) != dt_size(types[i])) continue;
        bool ok = true;
        for (int k = 0; k < l.rank; ++k)
          ok = ok && v.shape[std::size_t(k)] == l.shape[std::size_t(k)] &&
               (v.strides[std::size_t(k)] != 0 || v.shape[std::size_t(k)] <= 1);
        for (int m = 0; m < 3; ++m)
          if (m != j && d.in[m].buffer == v.buffer && !d.in[m].null_data) ok = false;
        for (std::size_t m = 0; m < i; ++m)
          if (d.out_alias[m] == j) ok = false;
        if (!ok) continue;
        l = v;
        l.how = std::string("in place on input ") + "abc"[j];
        d.out_alias[i] = j;
        break;
      }
      if (d.out_alias[i] >= 0) continue;
    }
    draw_layout(r, l, false, o, d.dense);
    if (l.elements() == 0 && r.chance(0.3)) {
      l.null_data = true;
      l.how += "+null";
      continue;
    }
    l.buffer = new_buffer(d, types[i], "output " + std::to_string(i));
    buffer& b = d.buffers[std::size_t(l.buffer)];
    allocate(b, std::size_t(std::max<std::int64_t>(1, extent_of(l))));
    const unsigned char sentinel = (unsigned char)(r.chance(0.5) ? 0xA5 : (r.chance(0.5) ? 0xFF : 0x00));
    std::fill(b.pristine.begin(), b.pristine.end(), sentinel);
  }
  d.out_ref = d.out;
  if (types.size() > 1)
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (d.out_alias[i] < 0) continue;
      const buffer& src = d.buffers[std::size_t(d.out[i].buffer)];
      const dt t = src.type;
      const std::size_t count = src.count;
      const std::vector<unsigned char> content = src.pristine;
      const int copy = new_buffer(d, t, "reference copy of " + src.owner);
      allocate(d.buffers[std::size_t(copy)], count);
      d.buffers[std::size_t(copy)].pristine = content;
      d.out_ref[i].buffer = copy;
      d.out_ref[i].how += " (reference: a private copy)";
    }
}

namespace {
std::string input_value_at(const draw& d, int i, const dims& idx, int out_rank) {
  const view_layout& l = d.in[i];
  if (l.null_data || l.elements() == 0) return "(empty)";
  std::int64_t off = l.offset;
  for (int k = 0; k < l.rank; ++k) {
    const int od = out_rank - l.rank + k;
    const std::int64_t j = l.shape[std::size_t(k)] == 1 || od < 0 ? 0 : idx[std::size_t(od)];
    off += j * l.strides[std::size_t(k)];
  }
  const buffer& b = d.buffers[std::size_t(l.buffer)];
  return value_text(b.type, b.pristine.data() + std::size_t(off) * dt_size(b.type));
}

void print_draw(const draw& d, const std::string& describe) {
  std::printf("  case %d: %s\n", d.case_id, d.info);
  std::printf("  expression: %s\n", describe.c_str());
  std::printf("  size class: %s\n", d.size_class.c_str());
  for (int i = 0; i < 3; ++i) std::printf("  input %c: %s\n", "abc"[i], layout_text(d, d.in[i], d.spec[i].type).c_str());
  for (std::size_t i = 0; i < d.out.size(); ++i)
  {
    std::printf("  output %zu: %s\n", i, layout_text(d, d.out[i], d.out_type[i]).c_str());
    if (d.out_ref[i].buffer != d.out[i].buffer)
      std::printf("  output %zu of the reference run: %s\n", i, layout_text(d, d.out_ref[i], d.out_type[i]).c_str());
  }
  std::printf("  scalars: sf =");
  for (float v : g_scalars.f) std::printf(" %.9g", double(v));
  std::printf("; sd =");
  for (double v : g_scalars.d) std::printf(" %.17g", v);
  std::printf("; si =");
  for (long long v : g_scalars.i) std::printf(" %lld", v);
  std::printf("; sb =");
  for (bool v : g_scalars.b) std::printf(" %d", int(v));
  std::printf("\n");
}

}  // namespace

bool judge(draw& d, run_outcome& f, run_outcome& u, const std::string& describe, const options& o) {
  if (o.inject && !f.out.empty() && !f.out[0].empty()) {
    // perturb the middle element of output 0 (a NaN becomes 0, anything else flips its lowest bit)
    const std::size_t es = dt_size(d.out_type[0]), n = f.out[0].size() / es;
    unsigned char* p = f.out[0].data() + (n / 2) * es;
    if (is_nan(d.out_type[0], p)) std::memset(p, 0, es);
    else p[0] ^= 1;
  }
  std::string problem;
  std::size_t bad_out = 0, bad_index = 0;
  bool have_index = false;
  if (!f.error.empty() || !u.error.empty()) {
    problem = "exception: fused: " + (f.error.empty() ? std::string("none") : f.error) +
              "; unfused: " + (u.error.empty() ? std::string("none") : u.error);
  } else if (!f.stray.empty() || !u.stray.empty()) {
    problem = "write outside the outputs: fused: " + (f.stray.empty() ? std::string("none") : f.stray) +
              "; unfused: " + (u.stray.empty() ? std::string("none") : u.stray);
  } else {
    for (std::size_t i = 0; i < f.out.size() && problem.empty(); ++i) {
      const dt t = d.out_type[i];
      const std::size_t es = dt_size(t), n = f.out[i].size() / es;
      for (std::size_t k = 0; k < n; ++k) {
        const unsigned char *a = f.out[i].data() + k * es, *b = u.out[i].data() + k * es;
        if (std::memcmp(a, b, es) == 0 || (is_nan(t, a) && is_nan(t, b))) continue;
        problem = "output " + std::to_string(i) + " differs: fused " + value_text(t, a) + ", unfused " + value_text(t, b);
        bad_out = i;
        bad_index = k;
        have_index = true;
        break;
      }
    }
    if (problem.empty() && f.kernels > u.kernels)
      problem = "fused plan launched more kernels (" + std::to_string(f.kernels) + ") than unfused (" +
                std::to_string(u.kernels) + ")";
  }
  const bool ok = problem.empty();
  {
    statistics& st = g_stats;
    ++st.draws;
    long long elements = 0;
    for (const auto& l : d.out) elements += l.elements();
    st.elements += elements;
    st.empty += elements == 0;
    st.large += d.size_class.rfind("large", 0) == 0;
    st.dense += d.dense;
    bool alias = false, copy = false, null = false, shared = false, zero = false;
    for (std::size_t i = 0; i < d.out.size(); ++i) {
      alias = alias || d.out_alias[i] >= 0;
      copy = copy || d.out_ref[i].buffer != d.out[i].buffer;
      null = null || d.out[i].null_data;
    }
    for (int i = 0; i < 3; ++i) {
      null = null || d.in[i].null_data;
      for (int j = 0; j < i; ++j) shared = shared || (!d.in[i].null_data && d.in[i].buffer == d.in[j].buffer);
      for (int k = 0; k < d.in[i].rank; ++k)
        zero = zero || (d.in[i].strides[std::size_t(k)] == 0 && d.in[i].shape[std::size_t(k)] > 1);
    }
    st.in_place += alias;
    st.private_copy += copy;
    st.null_data += null;
    st.shared_memory += shared;
    st.zero_stride += zero;
    st.several_kernels += f.kernels > 1;
  }
  if (!ok || o.verbose) {
    std::printf("%s: case %d seed 0x%016llx (replay: fuzz_elementwise --case %d --seed 0x%016llx)\n",
                ok ? "FUZZ DRAW" : "FUZZ MISMATCH", d.case_id, (unsigned long long)d.seed, d.case_id,
                (unsigned long long)d.seed);
    print_draw(d, describe);
    std::printf("  kernels: fused %zu, unfused %zu\n", f.kernels, u.kernels);
    if (!ok) std::printf("  problem: %s\n", problem.c_str());
    if (have_index) {
      const view_layout& l = d.out[bad_out];
      dims idx{};
      std::size_t rest = bad_index;
      for (int k = l.rank - 1; k >= 0; --k) {
        idx[std::size_t(k)] = std::int64_t(rest % std::size_t(l.shape[std::size_t(k)]));
        rest /= std::size_t(l.shape[std::size_t(k)]);
      }
      std::printf("  first mismatch: output %zu index %s (row-major element %zu); inputs there: a = %s, b = %s, c = %s\n",
                  bad_out, dims_text(idx, l.rank).c_str(), bad_index, input_value_at(d, 0, idx, l.rank).c_str(),
                  input_value_at(d, 1, idx, l.rank).c_str(), input_value_at(d, 2, idx, l.rank).c_str());
    }
    std::fflush(stdout);
  }
  return ok;
}

void print_elementwise_summary() {
  const statistics& st = g_stats;
  std::printf("fuzz: %lld output elements; draws with: no elements %lld, >= 2 host chunks %lld, dense views %lld, "
              "in-place output %lld (reference on a private copy %lld), null data %lld, inputs sharing memory %lld, "
              "zero-stride inputs %lld, several fused kernels %lld\n",
              st.elements, st.empty, st.large, st.dense, st.in_place, st.private_copy, st.null_data, st.shared_memory,
              st.zero_stride, st.several_kernels);
}

/// The elementwise family for run_cli (100 fixed-seed draws per case). Its
/// regressions: draws that once found a bug in the run-time space (layouts, values,
/// aliasing) of an existing case: run first in CI mode, before the fixed seed
/// list. Add {case, seed, "FZ-n: what it found"} for every such bug (replay
/// with --case K --seed S). Bugs in expression structure (a new case shape)
/// get a TEST_CASE in test_fuzz_regressions.cpp instead. None so far: the
/// bugs found (FZ-1, FZ-2, README.md) are structural.
suite elementwise_suite(const registry& cases) {
  suite s;
  s.name = "elementwise";
  s.cases = &cases;
  s.default_draws = 100;
  s.ci_base = 0x5eedf0550000ULL;
  s.regressions = {};
  s.summary = &print_elementwise_summary;
  return s;
}

}  // namespace fz
