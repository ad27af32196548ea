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
// Modes:
//   fuzz_elementwise                    CI: regression seeds + a fixed seed list
//   fuzz_elementwise --draws N          CI with N draws per case (default 100)
//   fuzz_elementwise --seconds N        random seeds until N seconds have passed
//   fuzz_elementwise --seed S --case K  replay one draw verbosely
//   fuzz_elementwise --list             list the cases
// Other flags: --case K (CI/long mode on one case), --inject (perturb one
// fused result: the run must fail), --negative-strides, --master-seed S (long
// mode), --max-failures N, --verbose. Exit status 1 on any mismatch.
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

scalar_table g_scalars{};
statistics g_stats{};

// ===================================================================== basics
const char* dt_name(dt t) {
  switch (t) {
    case dt::f32: return "f32";
    case dt::f16: return "f16";
    case dt::i32: return "i32";
    case dt::i64: return "i64";
    case dt::f64: return "f64";
    case dt::boolean: return "bool";
  }
  return "?";
}
std::size_t dt_size(dt t) {
  switch (t) {
    case dt::f32: return 4;
    case dt::f16: return 2;
    case dt::i32: return 4;
    case dt::i64: return 8;
    case dt::f64: return 8;
    case dt::boolean: return 1;
  }
  return 1;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
rng::rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& w : s) w = x = splitmix64(x);
}
std::uint64_t rng::next() {
  auto rotl = [](std::uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
  const std::uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}
std::uint64_t rng::below(std::uint64_t n) { return n ? next() % n : 0; }
int rng::range(int lo, int hi) { return lo + int(below(std::uint64_t(hi - lo + 1))); }
double rng::unit() { return double(next() >> 11) * 0x1.0p-53; }
bool rng::chance(double p) { return unit() < p; }

std::int64_t view_layout::elements() const {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[std::size_t(d)];
  return n;
}

buffer::buffer(buffer&& o) noexcept
    : type(o.type), count(o.count), mem(o.mem), pristine(std::move(o.pristine)), owner(std::move(o.owner)) {
  o.mem = nullptr;
}
buffer::~buffer() {
  if (mem) ::operator delete(mem, std::align_val_t(64));
}

draw::draw(std::uint64_t s, int k, const char* i) : seed(s), case_id(k), info(i), r(s ^ 0x66757a7a6f72ULL) {}

void registry::add(int id, case_fn f, const char* info) {
  if (int(cases.size()) <= id) cases.resize(std::size_t(id) + 1);
  cases[std::size_t(id)] = {id, f, info};
}

// ===================================================================== values
namespace {

float bits_f(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t f_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

const float inf = std::numeric_limits<float>::infinity();

/// Floats worth hitting: NaNs (quiet, negative, payload, signaling), +-Inf,
/// +-0, denormals, extremes, tiny and huge values, exact small integers, and
/// the thresholds of the ops (softplus 20, exp overflow/underflow, hardswish
/// +-3, thresholded_relu 1, f16 limits).
float special_float(rng& r) {
  static const float table[] = {
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), bits_f(0x7fc01234u),
      bits_f(0x7f800001u), bits_f(0xffa00000u), inf, -inf, 0.0f, -0.0f, 1e-40f, -1e-40f, 1.4e-45f, -1.4e-45f,
      FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, 1e30f, -1e30f, 3e38f, 1e-30f, -1e-30f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f,
      -3.0f, 0.5f, -0.5f, 20.0f, 20.000002f, -20.0f, 88.72f, 88.73f, -87.34f, -103.98f, -104.0f, 6.0f, 1.0000001f,
      0.99999994f, 65504.0f, 65520.0f, -65520.0f, 6e-8f, 5.96e-8f, 1e-5f, 6.1035e-5f, 0.1f, 1e10f, -1e10f, 127.5f};
  return table[r.below(sizeof(table) / sizeof(table[0]))];
}

struct value_profile {
  double special_rate;  ///< fraction of special values
  float scale;          ///< uniform values in [-scale, scale]
  bool integers;        ///< uniform values rounded to integers
};

value_profile draw_profile(rng& r) {
  static const double rates[] = {0.0, 0.03, 0.15, 0.4, 0.9};
  static const float scales[] = {1.0f, 4.0f, 8.0f, 100.0f, 1e-3f, 1e6f};
  return {rates[r.below(5)], scales[r.below(6)], r.chance(0.1)};
}

float draw_float(rng& r, const value_profile& p) {
  if (r.chance(p.special_rate)) return special_float(r);
  float v = float((r.unit() * 2 - 1) * p.scale);
  if (p.integers) v = std::nearbyint(v);
  return v;
}

std::uint16_t draw_half_bits(rng& r, const value_profile& p) {
  if (r.chance(p.special_rate * 0.3)) {
    static const std::uint16_t table[] = {0x7e00, 0xfe00, 0x7e01, 0x7c01, 0x7c00, 0xfc00, 0x0000, 0x8000,
                                          0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3bff};
    return table[r.below(sizeof(table) / sizeof(table[0]))];
  }
  return __half_raw(__float2half_rn(draw_float(r, p))).x;
}

std::int32_t draw_int(rng& r, const value_profile& p) {
  if (r.chance(p.special_rate)) {
    static const std::int32_t table[] = {0, 1, -1, 2, -2, 3, INT32_MIN, INT32_MAX, INT32_MIN + 1, 65536, 46341, -46341,
                                         31, 32, 33, 63, 255, -255, 1 << 30, 7};
    return table[r.below(sizeof(table) / sizeof(table[0]))];
  }
  if (r.chance(0.15)) return std::int32_t(std::uint32_t(r.next()));
  const int lim = p.scale >= 100 ? 100000 : 50;
  return r.range(-lim, lim);
}

void fill(rng& r, buffer& b) {
  const value_profile p = draw_profile(r);
  unsigned char* out = b.pristine.data();
  for (std::size_t i = 0; i < b.count; ++i) {
    switch (b.type) {
      case dt::f32: {
        const float v = draw_float(r, p);
        std::memcpy(out + 4 * i, &v, 4);
        break;
      }
      case dt::f16: {
        const std::uint16_t v = draw_half_bits(r, p);
        std::memcpy(out + 2 * i, &v, 2);
        break;
      }
      case dt::i32: {
        const std::int32_t v = draw_int(r, p);
        std::memcpy(out + 4 * i, &v, 4);
        break;
      }
      case dt::boolean: out[i] = (unsigned char)(r.chance(0.5) ? 1 : 0); break;  // only 0 and 1 are bools
      case dt::i64: {
        const long long v = draw_int(r, p);
        std::memcpy(out + 8 * i, &v, 8);
        break;
      }
      case dt::f64: {
        const double v = draw_float(r, p);
        std::memcpy(out + 8 * i, &v, 8);
        break;
      }
    }
  }
}

void draw_scalars(rng& r) {
  const value_profile p{0.3, 4.0f, false};
  for (auto& v : g_scalars.f) v = r.chance(0.15) ? float(r.range(-3, 3)) : draw_float(r, p);
  static const double doubles[] = {0.1, 1.0 / 3.0, -2.5, 0.7071067811865476, 1e-300, -1e-300, 3.0e38, 1e-8,
                                   1.0000000000000002, 0.6, -0.0, 0.0, 7.0};
  for (auto& v : g_scalars.d) {
    if (r.chance(0.45)) v = doubles[r.below(sizeof(doubles) / sizeof(doubles[0]))];
    else if (r.chance(0.2)) v = double(special_float(r));
    else v = (r.unit() * 2 - 1) * 8.0;
  }
  static const long long ints[] = {0, 1, -1, 2, 3, -7, 31, 32, 1LL << 31, (1LL << 40) + 3, INT64_MIN, INT64_MAX,
                                   -(1LL << 33), 100000};
  for (auto& v : g_scalars.i) v = r.chance(0.5) ? ints[r.below(sizeof(ints) / sizeof(ints[0]))] : r.range(-20, 20);
  for (auto& v : g_scalars.b) v = r.chance(0.5);
}

// ===================================================================== layouts
/// Row-major strides over the dims in `order` (outermost first), each padded
/// by `pad` extra elements with probability pad_p (a sliced view with gaps).
void layout_strides(rng& r, view_layout& l, bool permute, double pad_p) {
  int order[max_rank];
  for (int d = 0; d < l.rank; ++d) order[d] = d;
  if (permute)
    for (int d = l.rank - 1; d > 0; --d) std::swap(order[d], order[r.range(0, d)]);
  std::int64_t acc = 1;
  for (int k = l.rank - 1; k >= 0; --k) {
    const int d = order[k];
    l.strides[std::size_t(d)] = acc;
    const std::int64_t pad = r.chance(pad_p) ? r.range(1, 3) : 0;
    acc *= std::max<std::int64_t>(l.shape[std::size_t(d)], 1) + pad;
  }
}

/// Strides and misalignment of one view; extent-1 dims get arbitrary strides
/// (fusor must never use them).
void draw_layout(rng& r, view_layout& l, bool allow_zero_stride, const options& o, bool dense) {
  if (dense) {
    layout_strides(r, l, false, 0.0);
    l.how = "row-major";
    l.offset = r.chance(0.8) ? 0 : r.range(1, 7);
    return;
  }
  const double p = r.unit();
  if (p < 0.40) {
    layout_strides(r, l, false, 0.0);
    l.how = "row-major";
  } else if (p < 0.58) {
    layout_strides(r, l, true, 0.0);
    l.how = "permuted";
  } else if (p < 0.78) {
    layout_strides(r, l, false, 0.6);
    l.how = "padded";
  } else {
    layout_strides(r, l, true, 0.5);
    l.how = "permuted+padded";
  }
  if (allow_zero_stride && l.rank > 0 && r.chance(0.15)) {
    bool any = false;
    for (int d = 0; d < l.rank; ++d)
      if (l.shape[std::size_t(d)] > 1 && r.chance(0.5)) l.strides[std::size_t(d)] = 0, any = true;
    if (any) l.how += "+zero-stride";
  }
  bool odd = false;
  for (int d = 0; d < l.rank; ++d)
    if (l.shape[std::size_t(d)] == 1 && r.chance(0.3)) {
      static const std::int64_t weird[] = {0, 1, 7, 1000003, 123456789};
      l.strides[std::size_t(d)] = weird[r.below(5)];
      odd = true;
    }
  if (odd) l.how += "+odd-unit-strides";
  std::int64_t neg_span = 0;
  if (o.negative_strides && l.rank > 0 && r.chance(0.25)) {
    for (int d = 0; d < l.rank; ++d)
      if (l.shape[std::size_t(d)] > 1 && r.chance(0.5)) {
        neg_span += (l.shape[std::size_t(d)] - 1) * l.strides[std::size_t(d)];
        l.strides[std::size_t(d)] = -l.strides[std::size_t(d)];
      }
    if (neg_span) l.how += "+reversed";
  }
  l.offset = (r.chance(0.5) ? 0 : r.range(1, 7)) + neg_span;
}

/// Elements a view needs from its buffer start (0 for an empty view).
std::int64_t extent_of(const view_layout& l) {
  if (l.elements() == 0) return 0;
  std::int64_t hi = 0;
  for (int d = 0; d < l.rank; ++d)
    if (l.shape[std::size_t(d)] > 1 && l.strides[std::size_t(d)] > 0)
      hi += (l.shape[std::size_t(d)] - 1) * l.strides[std::size_t(d)];
  return l.offset + hi + 1;
}

int new_buffer(draw& d, dt t, const std::string& owner) {
  buffer b;
  b.type = t;
  b.owner = owner;
  d.buffers.push_back(std::move(b));
  return int(d.buffers.size()) - 1;
}

void allocate(buffer& b, std::size_t count) {
  b.count = count;
  const std::size_t bytes = std::max<std::size_t>(b.bytes(), 1);
  b.mem = static_cast<unsigned char*>(::operator new(bytes, std::align_val_t(64)));
  b.pristine.assign(bytes, 0);
}

std::string dims_text(const dims& v, int rank) {
  std::string s = "[";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(v[std::size_t(d)]);
  return s + "]";
}

}  // namespace

void* data_of(draw& d, const view_layout& l) {
  if (l.null_data) return nullptr;
  return d.buffers[std::size_t(l.buffer)].mem + std::size_t(l.offset) * dt_size(d.buffers[std::size_t(l.buffer)].type);
}

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

void restore(draw& d) {
  for (auto& b : d.buffers)
    if (b.mem) std::memcpy(b.mem, b.pristine.data(), b.pristine.size());
}

// ===================================================================== results
namespace {
/// Calls f(offset) for every element of view l, row-major.
template <class F>
void for_each_offset(const view_layout& l, F&& f) {
  const std::int64_t n = l.elements();
  dims idx{};
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t off = l.offset;
    for (int d = 0; d < l.rank; ++d) off += idx[std::size_t(d)] * l.strides[std::size_t(d)];
    f(off);
    for (int d = l.rank - 1; d >= 0; --d) {
      if (++idx[std::size_t(d)] < l.shape[std::size_t(d)]) break;
      idx[std::size_t(d)] = 0;
    }
  }
}
}  // namespace

void collect(draw& d, const std::vector<view_layout>& outs, run_outcome& r) {
  r.out.assign(outs.size(), {});
  std::vector<std::vector<bool>> written(d.buffers.size());
  for (std::size_t b = 0; b < d.buffers.size(); ++b) written[b].assign(d.buffers[b].count, false);
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const view_layout& l = outs[i];
    if (l.null_data) continue;
    const buffer& b = d.buffers[std::size_t(l.buffer)];
    const std::size_t es = dt_size(b.type);
    for_each_offset(l, [&](std::int64_t off) {
      r.out[i].insert(r.out[i].end(), b.mem + std::size_t(off) * es, b.mem + std::size_t(off + 1) * es);
      written[std::size_t(l.buffer)][std::size_t(off)] = true;
    });
  }
  for (std::size_t bi = 0; bi < d.buffers.size() && r.stray.empty(); ++bi) {
    const buffer& b = d.buffers[bi];
    const std::size_t es = dt_size(b.type);
    for (std::size_t e = 0; e < b.count; ++e) {
      if (written[bi][e]) continue;
      if (std::memcmp(b.mem + e * es, b.pristine.data() + e * es, es) != 0) {
        r.stray = "element " + std::to_string(e) + " of " + b.owner + " (not part of any output view) changed";
        break;
      }
    }
  }
}

namespace {

bool is_nan(dt t, const unsigned char* p) {
  if (t == dt::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return std::isnan(f);
  }
  if (t == dt::f64) {
    double f;
    std::memcpy(&f, p, 8);
    return std::isnan(f);
  }
  if (t == dt::f16) {
    std::uint16_t u;
    std::memcpy(&u, p, 2);
    return (u & 0x7c00) == 0x7c00 && (u & 0x03ff) != 0;
  }
  return false;
}

std::string value_text(dt t, const unsigned char* p) {
  char buf[96];
  switch (t) {
    case dt::f32: {
      float f;
      std::memcpy(&f, p, 4);
      std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", double(f), f_bits(f));
      break;
    }
    case dt::f16: {
      std::uint16_t u;
      std::memcpy(&u, p, 2);
      __half_raw raw;
      raw.x = u;
      std::snprintf(buf, sizeof buf, "%.6g (0x%04x)", double(__half2float(__half(raw))), unsigned(u));
      break;
    }
    case dt::i32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      std::snprintf(buf, sizeof buf, "%d", v);
      break;
    }
    case dt::i64: {
      long long v;
      std::memcpy(&v, p, 8);
      std::snprintf(buf, sizeof buf, "%lld", v);
      break;
    }
    case dt::f64: {
      double v;
      std::memcpy(&v, p, 8);
      std::snprintf(buf, sizeof buf, "%.17g", v);
      break;
    }
    case dt::boolean: std::snprintf(buf, sizeof buf, "%d", int(*p)); break;
  }
  return buf;
}

std::string layout_text(const draw& d, const view_layout& l, dt t) {
  std::ostringstream s;
  s << dt_name(t) << dims_text(l.shape, l.rank) << " strides " << dims_text(l.strides, l.rank) << " ";
  if (l.null_data) {
    s << "data nullptr";
  } else {
    const buffer& b = d.buffers[std::size_t(l.buffer)];
    const auto addr = reinterpret_cast<std::uintptr_t>(b.mem) + std::uintptr_t(l.offset) * dt_size(b.type);
    s << "offset " << l.offset << " (address % 16 = " << addr % 16 << ") in " << b.owner << " (" << b.count
      << " elements)";
  }
  s << " [" << l.how << "]";
  return s.str();
}

/// Value of input i at the output multi-index idx (broadcast, right-aligned).
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

}  // namespace fz

// ===================================================================== main
namespace {

/// Draws that once found a bug in the run-time space (layouts, values,
/// aliasing) of an existing case: run first in CI mode, before the fixed seed
/// list. Add {case, seed, "FZ-n: what it found"} for every such bug (replay
/// with --case K --seed S). Bugs in expression structure (a new case shape)
/// get a TEST_CASE in test_fuzz_regressions.cpp instead. None so far: the
/// bugs found (FZ-1, FZ-2, README.md) are structural.
struct regression {
  int case_id;
  std::uint64_t seed;
  const char* what;
};
const std::vector<regression> regressions = {};

std::uint64_t ci_seed(int case_id, int k) {
  return fz::splitmix64(0x5eedf0550000ULL + std::uint64_t(case_id) * 0x100000ULL + std::uint64_t(k));
}

std::uint64_t parse_u64(const char* s) { return std::strtoull(s, nullptr, 0); }

void usage() {
  std::puts(
      "usage: fuzz_elementwise [--draws N] [--seconds N [--master-seed S]] [--case K] [--seed S]\n"
      "                        [--inject] [--negative-strides] [--max-failures N] [--verbose] [--list]\n"
      "  default            regression draws, then N (100) fixed-seed draws per case\n"
      "  --seconds N        random cases and seeds until N seconds have passed\n"
      "  --case K --seed S  replay one draw (verbose)\n"
      "  --inject           perturb one fused result per draw (must fail)\n"
      "  --negative-strides also draw reversed views (negative strides)");
}

}  // namespace

int main(int argc, char** argv) {
  fz::registry reg;
  fz::register_part0(reg);
  fz::register_part1(reg);
  fz::register_part2(reg);

  fz::options opt;
  int draws = 100, only_case = -1, max_failures = 10;
  double seconds = 0;
  bool have_seed = false, list = false, have_master = false;
  std::uint64_t seed = 0, master = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--draws") draws = std::atoi(value());
    else if (a == "--seconds") seconds = std::atof(value());
    else if (a == "--case") only_case = std::atoi(value());
    else if (a == "--seed") seed = parse_u64(value()), have_seed = true;
    else if (a == "--master-seed") master = parse_u64(value()), have_master = true;
    else if (a == "--max-failures") max_failures = std::atoi(value());
    else if (a == "--inject") opt.inject = true;
    else if (a == "--negative-strides") opt.negative_strides = true;
    else if (a == "--verbose") opt.verbose = true;
    else if (a == "--list") list = true;
    else {
      usage();
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  const int ncases = int(reg.cases.size());
  for (int k = 0; k < ncases; ++k)
    if (!reg.cases[std::size_t(k)].run) {
      std::printf("fuzz: case %d is not registered (fuzz_part*.cpp out of date?)\n", k);
      return 2;
    }
  if (list) {
    for (const auto& c : reg.cases) std::printf("case %d: %s\n", c.id, c.info);
    return 0;
  }
  if (only_case >= ncases) {
    std::printf("fuzz: no case %d (%d cases)\n", only_case, ncases);
    return 2;
  }

  auto run_one = [&](int k, std::uint64_t s) {
    const auto& c = reg.cases[std::size_t(k)];
    return c.run(s, k, c.info, opt);
  };

  if (have_seed) {  // replay
    if (only_case < 0) {
      std::puts("fuzz: --seed needs --case");
      return 2;
    }
    opt.verbose = true;
    const bool ok = run_one(only_case, seed);
    std::printf("%s\n", ok ? "replay: fused == unfused" : "replay: MISMATCH");
    return ok ? 0 : 1;
  }

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  long long total = 0, failures = 0;
  std::vector<int> failed_cases;

  auto record = [&](int k, bool ok) {
    ++total;
    if (!ok) {
      ++failures;
      if (std::find(failed_cases.begin(), failed_cases.end(), k) == failed_cases.end()) failed_cases.push_back(k);
    }
    return failures < max_failures;
  };

  if (seconds > 0) {
    if (!have_master) master = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("fuzz: long mode, %.0f s, master seed 0x%016llx\n", seconds, (unsigned long long)master);
    fz::rng pick(master);
    while (elapsed() < seconds) {
      const int k = only_case >= 0 ? only_case : int(pick.below(std::uint64_t(ncases)));
      if (!record(k, run_one(k, pick.next()))) break;
    }
  } else {
    bool go = true;
    for (const auto& g : regressions) {
      if (!go) break;
      if (g.case_id >= ncases || (only_case >= 0 && g.case_id != only_case)) continue;
      go = record(g.case_id, run_one(g.case_id, g.seed));
    }
    for (int k = 0; k < ncases && go; ++k) {
      if (only_case >= 0 && k != only_case) continue;
      for (int j = 0; j < draws && go; ++j) go = record(k, run_one(k, ci_seed(k, j)));
    }
  }
  std::printf("fuzz: %lld draws over %d case(s) in %.2f s: %lld mismatch(es)", total, only_case >= 0 ? 1 : ncases,
              elapsed(), failures);
  if (!failed_cases.empty()) {
    std::printf(" in case(s)");
    for (int k : failed_cases) std::printf(" %d", k);
  }
  std::printf("\n");
  const fz::statistics& st = fz::g_stats;
  std::printf("fuzz: %lld output elements; draws with: no elements %lld, >= 2 host chunks %lld, dense views %lld, "
              "in-place output %lld (reference on a private copy %lld), null data %lld, inputs sharing memory %lld, "
              "zero-stride inputs %lld, several fused kernels %lld\n",
              st.elements, st.empty, st.large, st.dense, st.in_place, st.private_copy, st.null_data, st.shared_memory,
              st.zero_stride, st.several_kernels);
  return failures ? 1 : 0;
}
