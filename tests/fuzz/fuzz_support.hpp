#pragma once
// Non-template part of the differential fuzzers: the per-draw random state
// (inputs, outputs, buffers, scalars), layouts, value mixes, gathering results
// and reports (shared by both fuzzers: fuzz_support.cpp), and the elementwise
// fuzzer's draws and comparison (fuzz_main.cpp). The template part that builds
// views and runs fusor is fuzz_driver.hpp (fuzz_blocks_driver.hpp for the
// reduction/contraction/attention fuzzer).
#include <fusor/fusor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace fz {

/// Identity tags of the three inputs in the generated cases.
struct tag_a;
struct tag_b;
struct tag_c;

// ------------------------------------------------------------------ dtypes
enum class dt : std::uint8_t { f32, f16, i32, i64, f64, boolean, bf16 };
const char* dt_name(dt t);
std::size_t dt_size(dt t);
template <class T>
constexpr dt dt_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return dt::f32;
  else if constexpr (std::is_same_v<U, __half>) return dt::f16;
  else if constexpr (std::is_same_v<U, __nv_bfloat16>) return dt::bf16;
  else if constexpr (std::is_same_v<U, std::int32_t>) return dt::i32;
  else if constexpr (std::is_same_v<U, std::int64_t>) return dt::i64;
  else if constexpr (std::is_same_v<U, double>) return dt::f64;
  else {
    static_assert(std::is_same_v<U, bool>, "fuzz: unsupported element type");
    return dt::boolean;
  }
}

// ------------------------------------------------------------------ scalars
/// Run-time scalars of the current draw, read by the generated cases through
/// sf/sd/si/sb (so a case's scalars change from draw to draw).
struct scalar_table {
  float f[8];
  double d[8];
  long long i[8];
  bool b[4];
};
extern scalar_table g_scalars;
inline float sf(int k) { return g_scalars.f[k]; }
inline double sd(int k) { return g_scalars.d[k]; }
inline long long si(int k) { return g_scalars.i[k]; }
inline bool sb(int k) { return g_scalars.b[k]; }

// ------------------------------------------------------------------ random
/// xoshiro256** seeded through splitmix64: a draw is a pure function of its seed.
struct rng {
  std::uint64_t s[4];
  explicit rng(std::uint64_t seed);
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n);  ///< uniform in [0, n)
  int range(int lo, int hi);             ///< uniform in [lo, hi]
  bool chance(double p);
  double unit();  ///< uniform in [0, 1)
};
std::uint64_t splitmix64(std::uint64_t x);

// ------------------------------------------------------------------ config
/// Input view type of a case: element type (maybe const) and fusor::extents.
template <class T, class Extents>
struct in {
  using type = T;
  using extents = Extents;
};
/// The view types one case is instantiated with, and per root the output
/// element type used when that root is floating (integer roots write their own
/// type).
template <class A, class B, class C, class Out0, class Out1 = Out0, class Out2 = Out0>
struct cfg {
  using in0 = A;
  using in1 = B;
  using in2 = C;
  using outs = std::tuple<Out0, Out1, Out2>;
};

inline constexpr int max_rank = 8;
using dims = std::array<std::int64_t, max_rank>;

/// What the driver knows about an input view type.
struct input_spec {
  dt type = dt::f32;
  int rank = 0;
  dims static_ext{};  ///< -1: dynamic
};

/// One view: shape, strides (elements), where its data pointer is.
struct view_layout {
  int rank = 0;
  dims shape{}, strides{};
  std::int64_t offset = 0;  ///< elements from the buffer start to the data pointer
  int buffer = -1;
  bool null_data = false;  ///< data pointer is nullptr (only with zero elements)
  std::string how;         ///< layout kind, for reports
  std::int64_t elements() const;
};

/// Memory owned by a draw; `pristine` is the content every run starts from.
struct buffer {
  dt type = dt::f32;
  std::size_t count = 0;  ///< elements
  unsigned char* mem = nullptr;
  std::vector<unsigned char> pristine;
  std::string owner;
  buffer() = default;
  buffer(const buffer&) = delete;
  buffer(buffer&& o) noexcept;
  ~buffer();
  std::size_t bytes() const { return count * dt_size(type); }
};

/// What the draws exercised (printed after CI and long runs).
struct statistics {
  long long draws = 0, elements = 0, empty = 0, large = 0, dense = 0, in_place = 0, private_copy = 0,
            null_data = 0, shared_memory = 0, zero_stride = 0, several_kernels = 0;
};
extern statistics g_stats;

struct options {
  bool verbose = false;
  bool inject = false;            ///< perturb one fused result (proves the fuzzer can fail)
  bool negative_strides = false;  ///< also draw reversed (negative-stride) views
};

/// Everything one draw (one seed, one case) uses.
struct draw {
  std::uint64_t seed;
  int case_id;
  const char* info;
  rng r;
  std::vector<buffer> buffers;
  std::vector<view_layout> in = std::vector<view_layout>(3);  ///< the input views (3 for fuzz_elementwise)
  std::vector<input_spec> spec = std::vector<input_spec>(3);
  std::vector<view_layout> out;      ///< outputs of the fused run
  std::vector<view_layout> out_ref;  ///< outputs of the reference run (see plan_outputs)
  std::vector<dt> out_type;
  std::vector<int> out_alias;  ///< input index an output exactly aliases (in place), or -1
  std::string size_class;
  bool dense = false;  ///< every view full-size, row-major (mostly aligned): the vectorized path
  draw(std::uint64_t seed, int case_id, const char* info);
};

// ------------------------------------------------------------------ shared helpers (fuzz_support.cpp)
/// A mix of values for one buffer.
struct value_profile {
  double special_rate;  ///< fraction of special values
  float scale;          ///< uniform values in [-scale, scale]
  bool integers;        ///< uniform values rounded to integers
};
value_profile draw_profile(rng& r);
/// NaNs, infinities, zeros, denormals, extremes and op thresholds.
float special_float(rng& r);
float draw_float(rng& r, const value_profile& p);
/// Fills b.pristine with values of a random profile (or of profile p).
void fill(rng& r, buffer& b);
void fill(rng& r, buffer& b, const value_profile& p);
/// Draws the run-time scalars sf/sd/si/sb.
void draw_scalars(rng& r);
/// Row-major strides over a random dim order (`permute`), dims padded with probability pad_p.
void layout_strides(rng& r, view_layout& l, bool permute, double pad_p);
/// Strides, layout kind and misalignment of one view with its shape set.
void draw_layout(rng& r, view_layout& l, bool allow_zero_stride, const options& o, bool dense);
/// Elements a view needs from its buffer start (0 for an empty view).
std::int64_t extent_of(const view_layout& l);
int new_buffer(draw& d, dt t, const std::string& owner);
/// Allocates `count` elements (64-byte aligned) and a zeroed pristine copy.
void allocate(buffer& b, std::size_t count);
std::string dims_text(const dims& v, int rank);
bool is_nan(dt t, const unsigned char* p);
/// A value in decimal (and hex for floats).
std::string value_text(dt t, const unsigned char* p);
/// dtype, shape, strides, offset, alignment, buffer and layout kind of a view.
std::string layout_text(const draw& d, const view_layout& l, dt t);
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

/// Draws scalars, the broadcast shape, input shapes, layouts, buffers and values.
void plan_inputs(draw& d, const options& o);
/// Draws output layouts for result shapes, or in-place aliases of inputs when
/// `in_place_ok` (the fused plan writes every output from one kernel). The
/// reference run uses the same layouts, except that with several outputs an
/// in-place output gets a private copy of the input's memory: the unfused
/// executor runs siblings as several kernels and so refuses in-place outputs.
void plan_outputs(draw& d, const std::vector<dt>& types, const std::vector<std::vector<std::int64_t>>& shapes,
                  bool in_place_ok, const options& o);
/// Every buffer back to its pristine content.
void restore(draw& d);
/// Typed data pointer of a view (nullptr for null views).
void* data_of(draw& d, const view_layout& l);

/// What one executor produced.
struct run_outcome {
  std::string error;                            ///< exception text, empty if none
  std::vector<std::vector<unsigned char>> out;  ///< each output's elements, row-major
  std::string stray;                            ///< a write outside the outputs, if any
  std::size_t kernels = 0;
};
/// Reads outputs `outs` and checks that nothing outside them changed (after a run).
void collect(draw& d, const std::vector<view_layout>& outs, run_outcome& r);

/// Compares fused and unfused outcomes; prints a report and returns false on
/// any difference. `describe` is fusor::describe(expression).
bool judge(draw& d, run_outcome& fused, run_outcome& unfused, const std::string& describe, const options& o);

struct case_entry;
/// One case: runs a draw for a seed; returns false on a mismatch.
using case_fn = bool (*)(std::uint64_t seed, const case_entry& c, const options& o);
/// The host() run of a planned draw (inputs and outputs drawn) into d.out,
/// collected into r (restores the buffers first): fuzz_gpu's reference, compiled
/// by g++ in the host fuzzers' case translation units.
using reference_fn = void (*)(draw& d, run_outcome& r);
struct case_entry {
  int id = -1;
  case_fn run = nullptr;
  const char* info = "";
  reference_fn host_reference = nullptr;  ///< set by the host case TUs
  bool host_one_kernel = true;            ///< host() writes every output from one kernel (in place allowed)
};
struct registry {
  std::vector<case_entry> cases;
  void add(int id, case_fn f, const char* info, reference_fn ref = nullptr, bool host_one_kernel = true);
};
void register_part0(registry& r);
void register_part1(registry& r);
void register_part2(registry& r);

}  // namespace fz
