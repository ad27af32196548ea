// Shared machinery of the differential fuzzers (fuzz_elementwise, fuzz_blocks):
// dtypes, the random generator, value mixes, layouts, buffers, gathering
// results and checking that nothing outside the outputs was written, value
// and layout text for reports. Declared in fuzz_support.hpp.
#include "fuzz_support.hpp"

#include <cuda_bf16.h>

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

// ===================================================================== basics
const char* dt_name(dt t) {
  switch (t) {
    case dt::f32: return "f32";
    case dt::f16: return "f16";
    case dt::i32: return "i32";
    case dt::i64: return "i64";
    case dt::f64: return "f64";
    case dt::boolean: return "bool";
    case dt::bf16: return "bf16";
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
    case dt::bf16: return 2;
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

void registry::add(int id, case_fn f, const char* info, reference_fn ref, bool host_one_kernel) {
  if (int(cases.size()) <= id) cases.resize(std::size_t(id) + 1);
  cases[std::size_t(id)] = {id, f, info, ref, host_one_kernel};
}

// ===================================================================== values

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

namespace {
const float inf = std::numeric_limits<float>::infinity();
}  // namespace

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

std::uint16_t draw_bf16_bits(rng& r, const value_profile& p) {
  if (r.chance(p.special_rate * 0.3)) {
    // NaNs (quiet, negative, payload), +-Inf, +-0, denormals, +-max, 1 and its neighbour
    static const std::uint16_t table[] = {0x7fc0, 0xffc0, 0x7fc1, 0x7f81, 0x7f80, 0xff80, 0x0000, 0x8000,
                                          0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0x3f7f};
    return table[r.below(sizeof(table) / sizeof(table[0]))];
  }
  return __nv_bfloat16_raw(__float2bfloat16_rn(draw_float(r, p))).x;
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

void fill(rng& r, buffer& b) { fill(r, b, draw_profile(r)); }

void fill(rng& r, buffer& b, const value_profile& p) {
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
      case dt::bf16: {
        const std::uint16_t v = draw_bf16_bits(r, p);
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


void* data_of(draw& d, const view_layout& l) {
  if (l.null_data) return nullptr;
  return d.buffers[std::size_t(l.buffer)].mem + std::size_t(l.offset) * dt_size(d.buffers[std::size_t(l.buffer)].type);
}

void restore(draw& d) {
  for (auto& b : d.buffers)
    if (b.mem) std::memcpy(b.mem, b.pristine.data(), b.pristine.size());
}

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
  if (t == dt::bf16) {
    std::uint16_t u;
    std::memcpy(&u, p, 2);
    return (u & 0x7f80) == 0x7f80 && (u & 0x007f) != 0;
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
    case dt::bf16: {
      std::uint16_t u;
      std::memcpy(&u, p, 2);
      const std::uint32_t w = std::uint32_t(u) << 16;
      std::snprintf(buf, sizeof buf, "%.4g (0x%04x)", double(bits_f(w)), unsigned(u));
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
}  // namespace fz
