// Fusion must never change a bit: the fused host executor (host()) and the
// unfused reference (unfused(): every op its own kernel, temporaries in compute
// precision) give bitwise identical results on every input (NaN compared as
// "both NaN"), for every shape, layout, alignment and dtype; and canonical
// rewrites (x * sigmoid(x) -> silu, the GELU formulas -> gelu) give the bits of
// the formula they replace. Kernel counts reported by run() match the
// compile-time kernel_count / unfused_kernel_count.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

using namespace fusor::literals;

namespace {

using fusor::index_t;
using std::int32_t;
using std::int64_t;
using std::uint16_t;
using std::uint32_t;

const float fnan = std::numeric_limits<float>::quiet_NaN();
const float finf = std::numeric_limits<float>::infinity();
constexpr float sentinel = -12345.5f;

/// Same bits, or both NaN.
template <class T>
bool same_bits(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (std::isnan(a) && std::isnan(b)) return true;
  } else if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    uint16_t u, v;
    std::memcpy(&u, static_cast<const void*>(&a), 2);
    std::memcpy(&v, static_cast<const void*>(&b), 2);
    const uint16_t e = std::is_same_v<T, __half> ? 0x7c00 : 0x7f80;
    const bool nu = (u & e) == e && (u & ~e & 0x7fff), nv = (v & e) == e && (v & ~e & 0x7fff);
    if (nu && nv) return true;
  }
  return std::memcmp(static_cast<const void*>(&a), static_cast<const void*>(&b), sizeof(T)) == 0;
}

template <class T>
double as_double(const T& v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) return double(float(v));
  else return double(v);
}

/// Number of elements that differ (beyond "both NaN"); reports the first few.
template <class T>
int count_mismatches(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same_bits(got[i], want[i]) && bad++ < 5)
      FAIL_CHECK(what << ": element " << i << " is " << as_double(got[i]) << ", expected " << as_double(want[i]));
  return bad;
}

/// n floats, mostly uniform in [-lim, lim], with NaN, +-Inf, +-0, denormals
/// and large values mixed in (~8%).
std::vector<float> random_floats(std::size_t n, unsigned seed, float lim = 8.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-lim, lim);
  std::uniform_int_distribution<int> pick(0, 99);
  const float specials[] = {fnan, finf, -finf, 0.0f, -0.0f, 1e-40f, -1e-40f, 1e30f, -1e30f, FLT_MAX};
  std::vector<float> v(n);
  for (auto& x : v) {
    const int p = pick(gen);
    x = p < 8 ? specials[p % 10] : (p == 8 ? specials[8 + p % 2] : d(gen));
  }
  if (n > 0) v[0] = fnan;
  if (n > 1) v[1] = -0.0f;
  if (n > 2) v[2] = 1e-40f;
  if (n > 3) v[3] = -finf;
  return v;
}

template <class T>
std::vector<T> convert(const std::vector<float>& v) {
  std::vector<T> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = T(v[i]);
  return r;
}

/// Kernel count of E under executor Ex's planning policy (host() plans for
/// its own device model, so that is what its launches must match).
template <class E, class Ex>
constexpr int planned_kernels() {
  return fusor::kernel_count<E, typename Ex::policy>;
}

/// Runs e into two fresh buffers with host() and unfused(), requires bitwise
/// equal results, checks both launch counts, and returns the fused result.
/// make_out(ptr) builds the output view over a buffer of `buffer` elements.
/// (When the fused plan is chosen at run time, kernel_count does not exist:
/// the fused run must then launch no more kernels than the unfused one.)
template <class T, class E, class MakeOut>
std::vector<T> fused_vs_unfused(const E& e, std::size_t buffer, MakeOut make_out, const std::string& what) {
  std::vector<T> f(buffer, T(sentinel)), u(buffer, T(sentinel));
  const fusor::run_result rf = fusor::run(make_out(f.data()), e, fusor::host());
  const fusor::run_result ru = fusor::run(make_out(u.data()), e, fusor::unfused());
  INFO(what);
  CHECK(count_mismatches(f, u, what + " (host vs unfused)") == 0);
  if constexpr (fusor::plan_is_dynamic_v<E, fusor::host_executor::policy>) {
    CHECK(rf.kernels <= ru.kernels);
  } else {
    CHECK(rf.kernels == std::size_t(planned_kernels<E, fusor::host_executor>()));
  }
  CHECK(ru.kernels == std::size_t(fusor::unfused_kernel_count<E>));
  return f;
}

float relu_f(float v) { return (v > 0 || std::isnan(v)) ? v : 0.0f; }
// The scalar references use the host's math (fusor::math: SLEEF's 1-ulp
// functions when fusor is built with SLEEF, else the C library): the fused
// kernels must compute exactly this formula, bit for bit; the functions'
// own accuracy is checked against float64 in test_ops.cpp.
float sigmoid_f(float v) { return 1.0f / (1.0f + fusor::math::exp(-v)); }

}  // namespace

// ===========================================================================
// Long chains on 1-D inputs of many sizes
// ===========================================================================

TEST_CASE("fusion: a 13-op f32 chain is bitwise the unfused result and the scalar formula", "[host][fusion]") {
  for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(4), std::size_t(5), std::size_t(1023),
                        std::size_t(1025), std::size_t(32768), std::size_t(32769), std::size_t(100003)}) {
    auto a = random_floats(n, 1), b = random_floats(n, 2), c = random_floats(n, 3);
    const auto x = fusor::host_view(a.data(), n), y = fusor::host_view(b.data(), n), z = fusor::host_view(c.data(), n);
    // relu(x*2 + y) - sigmoid(z)*0.5 + exp(-|x|) / (1 + y*y)
    const auto e = fusor::relu(x * 2.0f + y) - fusor::sigmoid(z) * 0.5_c + fusor::exp(-fusor::abs(x)) / (1.0f + y * y);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e)> == 13);
    const auto got = fused_vs_unfused<float>(e, n, [n](float* p) { return fusor::host_view(p, n); },
                                             "chain n=" + std::to_string(n));
    // same operations in the same order in plain C++ (built with -ffp-contract=off)
    std::vector<float> want(n);
    for (std::size_t i = 0; i < n; ++i)
      want[i] = (relu_f(a[i] * 2.0f + b[i]) - sigmoid_f(c[i]) * 0.5f) + fusor::math::exp(-std::fabs(a[i])) / (1.0f + b[i] * b[i]);
    CHECK(count_mismatches(got, want, "chain vs scalar formula, n=" + std::to_string(n)) == 0);
  }
}

TEST_CASE("fusion: chains of activations, where, pow, clip and ints match unfused", "[host][fusion]") {
  const std::size_t n = 4099;
  auto a = random_floats(n, 11), b = random_floats(n, 12), c = random_floats(n, 13);
  const auto x = fusor::host_view(a.data(), n), y = fusor::host_view(b.data(), n), z = fusor::host_view(c.data(), n);
  auto out1 = [n](auto* p) { return fusor::host_view(p, n); };

  // tanh(gelu(x) * y + 1) * softplus(z) - clip(x, -1, 1) + hardswish(y) / (celu(z, 2) - 3)
  const auto e1 = fusor::tanh(fusor::gelu(x) * y + 1.0_c) * fusor::softplus(z) - fusor::clip(x, -1.0f, 1.0f) +
                  fusor::hardswish(y) / (fusor::celu(z, 2.0f) - 3.0f);
  fused_vs_unfused<float>(e1, n, out1, "activations");

  std::unique_ptr<bool[]> cond(new bool[n]);
  for (std::size_t i = 0; i < n; ++i) cond[i] = (i * 7) % 3 == 0;
  const auto cv = fusor::host_view(cond.get(), n);
  // where(c, leaky_relu(x), elu(y)) + pow(|z|, 1.5) * rsqrt(|x| + 1e-3) - max(min(x, y), z)
  const auto e2 = fusor::where(cv, fusor::leaky_relu(x, 0.1f), fusor::elu(y)) +
                  fusor::pow(fusor::abs(z), 1.5f) * fusor::rsqrt(fusor::abs(x) + 1e-3f) -
                  fusor::max(fusor::min(x, y), z);
  fused_vs_unfused<float>(e2, n, out1, "where/pow/minmax");

  // selu, thresholded_relu, hardsigmoid, prelu, softsign, gelu_tanh, erf, log, sqrt, reciprocal
  const auto e3 = fusor::selu(x) * fusor::thresholded_relu(y, 0.5f) + fusor::hardsigmoid(z, 0.3f, 0.4f) -
                  fusor::prelu(x, y) * fusor::softsign(z) + fusor::gelu_tanh(y) * fusor::erf(x) +
                  fusor::log(fusor::sqrt(fusor::abs(z)) + 1.0f) * fusor::reciprocal(y);
  fused_vs_unfused<float>(e3, n, out1, "more activations");

  // integer chain: (i * 3 + 7) / 2 - |i| % ... then mixed with f32
  std::vector<int32_t> ia(n), ib(n);
  std::mt19937 gen(5);
  std::uniform_int_distribution<int32_t> di(INT32_MIN, INT32_MAX);
  for (std::size_t i = 0; i < n; ++i) ia[i] = di(gen), ib[i] = (i % 5 == 0) ? 0 : di(gen) % 1000;
  const auto xi = fusor::host_view(ia.data(), n), yi = fusor::host_view(ib.data(), n);
  const auto e4 = fusor::max((xi * 3 + 7) / yi - fusor::abs(yi) * -xi, fusor::relu(yi) + 1);
  STATIC_REQUIRE(std::is_same_v<fusor::value_t<decltype(e4)>, int32_t>);
  fused_vs_unfused<int32_t>(e4, n, out1, "int32 chain");
  const auto e5 = fusor::sigmoid(xi * 0.5 + x) * (yi / 3) + fusor::exp(yi * 1e-3);
  STATIC_REQUIRE(std::is_same_v<fusor::value_t<decltype(e5)>, float>);
  fused_vs_unfused<float>(e5, n, out1, "int/f32 mixed chain");
  // int64 and f64
  std::vector<int64_t> la(ia.begin(), ia.end());
  std::vector<double> da(a.begin(), a.end());
  const auto xl = fusor::host_view(la.data(), n);
  const auto xd = fusor::host_view(da.data(), n);
  const auto e6 = fusor::log(fusor::sqrt(fusor::abs(xd)) + 1.0) * xd - fusor::erf(xd) + xl * 3 / (xi + 1);
  STATIC_REQUIRE(std::is_same_v<fusor::value_t<decltype(e6)>, double>);
  fused_vs_unfused<double>(e6, n, out1, "f64/i64 chain");
}

TEST_CASE("fusion: f16 and bf16 chains (f32 compute, one rounding on store)", "[host][fusion][half]") {
  for (std::size_t n : {std::size_t(5), std::size_t(1031), std::size_t(40000)}) {
    const auto fa = random_floats(n, 21, 4.0f), fb = random_floats(n, 22, 4.0f);
    auto ha = convert<__half>(fa), hb = convert<__half>(fb);
    auto ba = convert<__nv_bfloat16>(fa), bb = convert<__nv_bfloat16>(fb);
    const auto xh = fusor::host_view(ha.data(), n), yh = fusor::host_view(hb.data(), n);
    const auto xb = fusor::host_view(ba.data(), n), yb = fusor::host_view(bb.data(), n);
    auto out = [n](auto* p) { return fusor::host_view(p, n); };
    const auto e = fusor::silu(xh) * yh + fusor::hardswish(xh) - 0.25_c * fusor::softsign(yh) + fusor::tanh(yh * xh);
    fused_vs_unfused<__half>(e, n, out, "f16 chain -> f16, n=" + std::to_string(n));
    fused_vs_unfused<float>(e, n, out, "f16 chain -> f32, n=" + std::to_string(n));
    const auto eb = fusor::gelu(xb) * yb - fusor::sigmoid(yb) * 0.5 + fusor::exp(xb * -0.5f) + xh;
    fused_vs_unfused<__nv_bfloat16>(eb, n, out, "bf16 chain -> bf16, n=" + std::to_string(n));
    fused_vs_unfused<__half>(eb, n, out, "bf16 chain -> f16, n=" + std::to_string(n));
    // f32 data into a f16 output: rounded once at the store
    auto f32 = fusor::host_view(const_cast<float*>(fa.data()), n);
    const auto got = fused_vs_unfused<__half>(f32 * 3.0f - 1.0f, n, out, "f32 -> f16");
    for (std::size_t i = 0; i < n; ++i) {
      INFO("i = " << i);
      CHECK(same_bits(got[i], __half(fa[i] * 3.0f - 1.0f)));
    }
  }
}

TEST_CASE("fusion: empty tensors run without touching memory", "[host][fusion]") {
  std::vector<float> a(4, 1.0f), b(4, 2.0f), o(4, sentinel);
  for (auto ex_unfused : {false, true}) {
    INFO((ex_unfused ? "unfused" : "host"));
    const auto e = fusor::relu(fusor::host_view(a.data(), 0) * 2.0f + fusor::host_view(b.data(), 0));
    const auto r = ex_unfused ? fusor::run(fusor::host_view(o.data(), 0), e, fusor::unfused())
                              : fusor::run(fusor::host_view(o.data(), 0), e, fusor::host());
    CHECK(r.kernels == std::size_t(ex_unfused ? fusor::unfused_kernel_count<decltype(e)> : fusor::kernel_count<decltype(e)>));
    // 0 x 5 and 5 x 0 matrices, a broadcast row of 5, and null data (allowed with no elements)
    const auto e2 = fusor::exp(fusor::host_view(a.data(), 0, 4)) + fusor::host_view(b.data(), 4);
    const auto e3 = fusor::host_view(static_cast<float*>(nullptr), 3, 0) * 2.0f;
    if (ex_unfused) {
      fusor::run(fusor::host_view(o.data(), 0, 4), e2, fusor::unfused());
      fusor::run(fusor::host_view(static_cast<float*>(nullptr), 3, 0), e3, fusor::unfused());
    } else {
      fusor::run(fusor::host_view(o.data(), 0, 4), e2, fusor::host());
      fusor::run(fusor::host_view(static_cast<float*>(nullptr), 3, 0), e3, fusor::host());
    }
    for (float v : o) CHECK(v == sentinel);
  }
}

// ===========================================================================
// Broadcasting, strides, alignment
// ===========================================================================

TEST_CASE("fusion: broadcasting (row, column, [1], [1, 1], rank 0, stride-0 views, static extents)", "[host][fusion]") {
  constexpr index_t m = 37, n = 53;
  const auto A = random_floats(m * n, 31), row = random_floats(n, 32), col = random_floats(m, 33);
  std::vector<float> Am = A, rowm = row, colm = col;
  float one = 1.75f, rank0 = -0.5f;
  const auto X = fusor::host_view(Am.data(), m, n);
  const auto R = fusor::host_view(rowm.data(), n);          // [n]
  const auto R1 = fusor::host_view(rowm.data(), 1, n);      // [1, n]
  const auto C = fusor::host_view(colm.data(), m, 1);       // [m, 1]
  const auto S1 = fusor::host_view(&one, 1);                // [1]
  const auto S11 = fusor::host_view(&one, 1, 1);            // [1, 1]
  const auto S0 = fusor::host_view(&rank0, fusor::extents<>{});  // rank 0
  // explicit stride-0 views: the row repeated down the rows, the column across the columns
  const auto Rb = fusor::host_view(rowm.data(), fusor::extents<fusor::dyn, fusor::dyn>(m, n), fusor::shape<2>{0, 1});
  const auto Cb = fusor::host_view(colm.data(), fusor::extents<fusor::dyn, fusor::dyn>(m, n), fusor::shape<2>{1, 0});
  // static extents
  const auto Xs = fusor::host_view(Am.data(), fusor::extents<37, fusor::dyn>(n));
  const auto Rs = fusor::host_view(rowm.data(), fusor::extents<53>{});

  auto out = [](float* p) { return fusor::host_view(p, m, n); };
  auto check = [&](const auto& e, auto ref, const char* what) {
    const auto got = fused_vs_unfused<float>(e, std::size_t(m * n), out, what);
    std::vector<float> want(m * n);
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) want[i * n + j] = ref(i, j);
    CHECK(count_mismatches(got, want, what) == 0);
  };
  check(X + R * 2.0f, [&](index_t i, index_t j) { return A[i * n + j] + row[j] * 2.0f; }, "matrix + row [n]");
  check(fusor::relu(R1) - X, [&](index_t i, index_t j) { return relu_f(row[j]) - A[i * n + j]; }, "row [1, n]");
  check(X * C + S1, [&](index_t i, index_t j) { return A[i * n + j] * col[i] + one; }, "column [m, 1] and [1]");
  check(R1 * C - S11, [&](index_t i, index_t j) { return row[j] * col[i] - one; }, "outer [1, n] x [m, 1]");
  check(fusor::max(X, S0) / S0, [&](index_t i, index_t j) {
          const float v = A[i * n + j];
          return (std::isnan(v) ? v : (v > rank0 ? v : rank0)) / rank0;
        }, "rank-0 view");
  check(Rb + Cb * X, [&](index_t i, index_t j) { return row[j] + col[i] * A[i * n + j]; }, "stride-0 views");
  check(fusor::sigmoid(Rb) * S1, [&](index_t, index_t j) { return sigmoid_f(row[j]) * one; }, "stride-0 view only");
  check(Xs - Rs, [&](index_t i, index_t j) { return A[i * n + j] - row[j]; }, "static extents");
  STATIC_REQUIRE(std::is_same_v<fusor::static_extents_t<decltype(Xs - Rs)>, fusor::extents<37, 53>>);
  // a rank-0 output of a rank-0 expression
  float o0 = sentinel;
  fusor::run(fusor::host_view(&o0, fusor::extents<>{}), S0 * 4.0f + 1.0f, fusor::host());
  CHECK(o0 == -1.0f);
  // rank 3: [2, 1, n] + [3, 1] -> [2, 3, n]
  std::vector<float> o3(2 * 3 * n), u3(2 * 3 * n);
  const auto T = fusor::host_view(Am.data(), 2, 1, n);
  const auto K = fusor::host_view(colm.data(), 3, 1);
  const auto e3 = T * K + 1.0f;
  fusor::run(fusor::host_view(o3.data(), 2, 3, n), e3, fusor::host());
  fusor::run(fusor::host_view(u3.data(), 2, 3, n), e3, fusor::unfused());
  CHECK(count_mismatches(o3, u3, "rank 3") == 0);
  for (index_t p = 0; p < 2; ++p)
    for (index_t q = 0; q < 3; ++q)
      for (index_t j = 0; j < n; ++j) CHECK(same_bits(o3[(p * 3 + q) * n + j], A[p * n + j] * col[q] + 1.0f));
}

TEST_CASE("fusion: transposed, sliced and strided views, and strided outputs", "[host][fusion]") {
  constexpr index_t m = 29, n = 41, ld = 48;
  const auto At = random_floats(n * m, 41);    // stored [n, m]: read transposed as [m, n]
  const auto B = random_floats(m * ld, 42);    // [m, ld]: read the first n columns of each row
  std::vector<float> Atm = At, Bm = B;
  const auto Xt = fusor::host_view(Atm.data(), fusor::extents<fusor::dyn, fusor::dyn>(m, n), fusor::shape<2>{1, m});
  const auto Ys = fusor::host_view(Bm.data(), fusor::extents<fusor::dyn, fusor::dyn>(m, n), fusor::shape<2>{ld, 1});
  const auto e = fusor::tanh(Xt) * Ys + fusor::relu(Xt - Ys) * 0.5f;
  auto ref = [&](index_t i, index_t j) {
    const float xt = At[j * m + i], ys = B[i * ld + j];
    return fusor::math::tanh(xt) * ys + relu_f(xt - ys) * 0.5f;
  };
  // contiguous output
  const auto got = fused_vs_unfused<float>(e, std::size_t(m * n), [](float* p) { return fusor::host_view(p, m, n); },
                                           "transposed + sliced inputs");
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) CHECK(same_bits(got[i * n + j], ref(i, j)));
  // sliced output (row stride ld): the padding columns stay untouched
  const auto sl = fused_vs_unfused<float>(e, std::size_t(m * ld), [](float* p) {
    return fusor::host_view(p, fusor::extents<fusor::dyn, fusor::dyn>(m, n), fusor::shape<2>{ld, 1});
  }, "sliced output");
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < ld; ++j) {
      if (j < n) CHECK(same_bits(sl[i * ld + j], ref(i, j)));
      else CHECK(sl[i * ld + j] == sentinel);
    }
  // transposed output
  const auto tr = fused_vs_unfused<float>(e, std::size_t(m * n), [](float* p) {
    return fusor::host_view(p, fusor::extents<fusor::dyn, fusor::dyn>(m, n), fusor::shape<2>{1, m});
  }, "transposed output");
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) CHECK(same_bits(tr[j * m + i], ref(i, j)));
  // 1-D every other element, in and out
  std::vector<float> v = random_floats(2 * 1001, 43), vm = v;
  const auto ev = fusor::host_view(vm.data(), fusor::extents<fusor::dyn>(1001), fusor::shape<1>{2}) * 3.0f;
  const auto st = fused_vs_unfused<float>(ev, 2 * 1001, [](float* p) {
    return fusor::host_view(p, fusor::extents<fusor::dyn>(1001), fusor::shape<1>{2});
  }, "stride-2 vectors");
  for (std::size_t i = 0; i < 2 * 1001; ++i) {
    if (i % 2 == 0) CHECK(same_bits(st[i], v[i] * 3.0f));
    else CHECK(st[i] == sentinel);
  }
}

TEST_CASE("fusion: misaligned pointers take the non-vector path and give the same bits", "[host][fusion]") {
  for (std::size_t n : {std::size_t(1023), std::size_t(100003)}) {
    auto a = random_floats(n + 1, 51), b = random_floats(n + 1, 52);
    std::vector<float> aligned_a(a.begin() + 1, a.end()), aligned_b(b.begin() + 1, b.end());
    const auto e_mis = fusor::sigmoid(fusor::host_view(a.data() + 1, n)) * fusor::host_view(b.data() + 1, n) - 1.0f;
    const auto e_al = fusor::sigmoid(fusor::host_view(aligned_a.data(), n)) * fusor::host_view(aligned_b.data(), n) - 1.0f;
    std::vector<float> o_mis(n + 1, sentinel), o_al(n, sentinel), o_un(n + 1, sentinel);
    REQUIRE_NOTHROW(fusor::run(fusor::host_view(o_mis.data() + 1, n), e_mis, fusor::host()));
    fusor::run(fusor::host_view(o_un.data() + 1, n), e_mis, fusor::unfused());
    fusor::run(fusor::host_view(o_al.data(), n), e_al, fusor::host());
    CHECK(o_mis[0] == sentinel);
    CHECK(count_mismatches(std::vector<float>(o_mis.begin() + 1, o_mis.end()), o_al, "misaligned vs aligned") == 0);
    CHECK(count_mismatches(o_mis, o_un, "misaligned host vs unfused") == 0);
    // the access path the binder picks (exec/bind.hpp, internal API)
    using fusor::kernels::access;
    const auto pick = [n](auto out, const auto& e) {
      return fusor::exec::make_elementwise_kernel<1>(fusor::shape<1>{index_t(n)}, std::make_tuple(out), e).path;
    };
    CHECK(pick(fusor::host_view(o_al.data(), n), e_al) == access::vectorized);  // std::vector data is 16-byte aligned
    CHECK(pick(fusor::host_view(o_mis.data() + 1, n), e_mis) == access::contiguous);
    CHECK(pick(fusor::host_view(o_al.data(), n), e_mis) == access::contiguous);  // one misaligned input suffices
  }
  // f16: 2-byte offsets
  const std::size_t n = 4097;
  auto h = convert<__half>(random_floats(n + 1, 53));
  std::vector<__half> o(n + 1), u(n + 1), al(n);
  std::vector<__half> h_al(h.begin() + 1, h.end());
  const auto e = fusor::gelu(fusor::host_view(h.data() + 1, n)) + 1.0f;
  fusor::run(fusor::host_view(o.data() + 1, n), e, fusor::host());
  fusor::run(fusor::host_view(u.data() + 1, n), e, fusor::unfused());
  fusor::run(fusor::host_view(al.data(), n), fusor::gelu(fusor::host_view(h_al.data(), n)) + 1.0f, fusor::host());
  CHECK(count_mismatches(o, u, "f16 misaligned host vs unfused") == 0);
  CHECK(count_mismatches(std::vector<__half>(o.begin() + 1, o.end()), al, "f16 misaligned vs aligned") == 0);
}

// ===========================================================================
// Identity tags, siblings, in-place
// ===========================================================================

TEST_CASE("fusion: an identity-tagged input used several times is loaded once, same bits", "[host][fusion]") {
  const std::size_t n = 2053;
  auto a = random_floats(n, 61);
  const auto x = fusor::host_view(a.data(), n);
  const auto xt = x.with_id<struct tagged_x>();
  const auto et = xt * xt + fusor::relu(xt) * 0.5f - fusor::exp(xt * 0.1f);
  const auto eu = x * x + fusor::relu(x) * 0.5f - fusor::exp(x * 0.1f);
  const auto out = [n](float* p) { return fusor::host_view(p, n); };
  const auto gt = fused_vs_unfused<float>(et, n, out, "tagged");
  const auto gu = fused_vs_unfused<float>(eu, n, out, "untagged");
  CHECK(count_mismatches(gt, gu, "tagged vs untagged") == 0);
  // one kernel source for the tagged tensor, three for the untagged one (exec/bind.hpp, internal API)
  std::vector<float> o(n);
  const auto kt = fusor::exec::make_elementwise_kernel<1>(fusor::shape<1>{index_t(n)}, std::make_tuple(out(o.data())), et);
  const auto ku = fusor::exec::make_elementwise_kernel<1>(fusor::shape<1>{index_t(n)}, std::make_tuple(out(o.data())), eu);
  CHECK(fusor::tuple_size_v<decltype(kt.sources)> == 1);
  CHECK(fusor::tuple_size_v<decltype(ku.sources)> == 4);
  // fusor::tag<Id>(v) is the same as v.with_id<Id>()
  STATIC_REQUIRE(std::is_same_v<decltype(fusor::tag<struct tagged_x>(x)), std::remove_cvref_t<decltype(xt)>>);
}

TEST_CASE("fusion: siblings run as one kernel and equal separate runs", "[host][fusion]") {
  for (std::size_t n : {std::size_t(7), std::size_t(1024), std::size_t(70001)}) {
    auto a = random_floats(n, 71), c = random_floats(n, 72);
    const auto x = fusor::host_view(a.data(), n).with_id<struct sib_x>();
    const auto z = fusor::host_view(c.data(), n);
    const auto s = fusor::siblings(fusor::silu(x), fusor::sigmoid(x) * z);
    std::vector<float> f1(n, sentinel), f2(n, sentinel), u1(n, sentinel), u2(n, sentinel), s1(n), s2(n);
    const auto rf = fusor::run(fusor::outputs(fusor::host_view(f1.data(), n), fusor::host_view(f2.data(), n)), s,
                               fusor::host());
    const auto ru = fusor::run(fusor::outputs(fusor::host_view(u1.data(), n), fusor::host_view(u2.data(), n)), s,
                               fusor::unfused());
    fusor::run(fusor::host_view(s1.data(), n), fusor::silu(x), fusor::host());
    fusor::run(fusor::host_view(s2.data(), n), fusor::sigmoid(x) * z, fusor::host());
    CHECK(rf.kernels == 1);
    CHECK(rf.kernels == std::size_t(planned_kernels<decltype(s), fusor::host_executor>()));
    CHECK(ru.kernels == std::size_t(fusor::unfused_kernel_count<decltype(s)>));
    CHECK(ru.kernels > rf.kernels);
    CHECK(count_mismatches(f1, s1, "sibling 0 vs separate run") == 0);
    CHECK(count_mismatches(f2, s2, "sibling 1 vs separate run") == 0);
    CHECK(count_mismatches(f1, u1, "sibling 0 host vs unfused") == 0);
    CHECK(count_mismatches(f2, u2, "sibling 1 host vs unfused") == 0);
  }
  // three siblings with different output dtypes and a broadcast operand
  const std::size_t m = 9, n = 17;
  auto a = random_floats(m * n, 73), r = random_floats(n, 74);
  const auto x = fusor::host_view(a.data(), m, n).with_id<struct sib_m>();
  const auto row = fusor::host_view(r.data(), n);
  std::vector<float> o1(m * n);
  std::vector<__half> o2(m * n);
  std::vector<double> o3(m * n);
  const auto s = fusor::siblings(x + row, fusor::tanh(x), fusor::relu(x) * row);
  const auto rr = fusor::run(fusor::outputs(fusor::host_view(o1.data(), m, n), fusor::host_view(o2.data(), m, n),
                                            fusor::host_view(o3.data(), m, n)), s, fusor::host());
  CHECK(rr.kernels == 1);
  for (std::size_t i = 0; i < m * n; ++i) {
    CHECK(same_bits(o1[i], a[i] + r[i % n]));
    CHECK(same_bits(o2[i], __half(fusor::math::tanh(a[i]))));
    CHECK(same_bits(o3[i], double(relu_f(a[i]) * r[i % n])));
  }
}

TEST_CASE("fusion: exact in-place aliasing (out == input) is allowed and correct", "[host][fusion]") {
  for (std::size_t n : {std::size_t(5), std::size_t(1025), std::size_t(100003)}) {
    for (bool unfused : {false, true}) {
      INFO("n = " << n << (unfused ? ", unfused" : ", host"));
      const auto a = random_floats(n, 81), b = random_floats(n, 82);
      std::vector<float> x = a, y = b, want(n);
      const auto xv = fusor::host_view(x.data(), n), yv = fusor::host_view(y.data(), n);
      const auto e = fusor::relu(xv) * 2.0f + yv - fusor::exp(xv * 0.25f);
      std::vector<float> copy = a;
      const auto ec = fusor::relu(fusor::host_view(copy.data(), n)) * 2.0f + yv - fusor::exp(fusor::host_view(copy.data(), n) * 0.25f);
      fusor::run(fusor::host_view(want.data(), n), ec, fusor::host());
      if (unfused) fusor::run(xv, e, fusor::unfused());
      else fusor::run(xv, e, fusor::host());
      CHECK(count_mismatches(x, want, "in place") == 0);
    }
  }
  // in place through a transposed view of the same memory and layout, f16
  constexpr index_t m = 13, n = 11;
  auto h = convert<__half>(random_floats(m * n, 83));
  const auto h0 = h;
  const auto ht = fusor::host_view(h.data(), fusor::extents<fusor::dyn, fusor::dyn>(n, m), fusor::shape<2>{1, n});
  fusor::run(ht, fusor::sigmoid(ht) * 3.0f, fusor::host());
  for (index_t i = 0; i < m * n; ++i) CHECK(same_bits(h[i], __half(sigmoid_f(float(h0[i])) * 3.0f)));
  // siblings in one kernel, output 0 in place over the shared input
  std::vector<float> v = random_floats(300, 84), v0 = v, o2(300);
  const auto xv = fusor::host_view(v.data(), 300).with_id<struct inplace_x>();
  fusor::run(fusor::outputs(fusor::host_view(v.data(), 300), fusor::host_view(o2.data(), 300)),
             fusor::siblings(xv * 2.0f, xv + 1.0f), fusor::host());
  for (std::size_t i = 0; i < 300; ++i) {
    CHECK(same_bits(v[i], v0[i] * 2.0f));
    CHECK(same_bits(o2[i], v0[i] + 1.0f));
  }
}

TEST_CASE("fusion: in-place siblings are refused when they run as several kernels", "[host][fusion]") {
  // Regression (found by this suite): exact aliasing of an output with an
  // input was accepted because "each element is read before it is written" -
  // true inside one kernel, but when siblings run as several kernels (the
  // unfused executor, or host() with siblings of different ranks) the first
  // kernel overwrote the input before the second read it (o2 = 2x + z). Now
  // run() throws argument_error before anything is written.
  const std::size_t n = 64;
  std::vector<float> x(n), z(n, 1.0f), o2(n, -7.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = float(i);
  const auto x0 = x;
  const auto xv = fusor::host_view(x.data(), n).with_id<struct seq_x>();
  const auto zv = fusor::host_view(z.data(), n);
  CHECK_THROWS_AS(fusor::run(fusor::outputs(fusor::host_view(x.data(), n), fusor::host_view(o2.data(), n)),
                             fusor::siblings(xv * 2.0f, xv + zv), fusor::unfused()),
                  fusor::argument_error);
  CHECK(x == x0);
  CHECK(o2 == std::vector<float>(n, -7.0f));
  // One kernel computes both outputs: in place is fine.
  fusor::run(fusor::outputs(fusor::host_view(x.data(), n), fusor::host_view(o2.data(), n)),
             fusor::siblings(xv * 2.0f, xv + zv), fusor::host());
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(x[i] == 2.0f * float(i));
    CHECK(o2[i] == float(i) + 1.0f);
  }
  // host(): siblings of different ranks are several kernels too
  std::vector<float> y(4), m(8), o3(8, -7.0f);
  for (int i = 0; i < 4; ++i) y[i] = float(i + 1);
  for (int i = 0; i < 8; ++i) m[i] = 100.0f * float(i);
  const auto y0 = y;
  const auto yv = fusor::host_view(y.data(), 4).with_id<struct seq_y>();
  CHECK_THROWS_WITH(fusor::run(fusor::outputs(fusor::host_view(y.data(), 4), fusor::host_view(o3.data(), 2, 4)),
                               fusor::siblings(yv * 2.0f, yv + fusor::host_view(m.data(), 2, 4)), fusor::host()),
                    Catch::Contains("several kernels"));
  CHECK(y == y0);
}

TEST_CASE("fusion: run_result.kernels matches kernel_count and unfused_kernel_count", "[host][fusion]") {
  const std::size_t n = 100;
  auto a = random_floats(n, 91), b = random_floats(n, 92);
  const auto x = fusor::host_view(a.data(), n), y = fusor::host_view(b.data(), n);
  const auto xt = x.with_id<struct count_x>();
  auto out = [n](float* p) { return fusor::host_view(p, n); };
  const auto e1 = fusor::relu(x);
  const auto e2 = x + y;
  const auto e3 = fusor::exp(x) * 2.0f - fusor::tanh(y) / (x + 1.0_c);
  const auto e4 = xt * fusor::sigmoid(xt) + y;   // silu after canonicalization
  const auto e5 = fusor::relu(fusor::relu(x * y));
  STATIC_REQUIRE(fusor::kernel_count<decltype(e1)> == 1);
  STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e1)> == 1);
  STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e3)> == 6);
  STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e4)> == 2);  // silu, add
  STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e5)> == 2);  // mul, relu
  fused_vs_unfused<float>(e1, n, out, "relu");
  fused_vs_unfused<float>(e2, n, out, "add");
  fused_vs_unfused<float>(e3, n, out, "6 ops");
  fused_vs_unfused<float>(e4, n, out, "x * sigmoid(x) + y");
  fused_vs_unfused<float>(e5, n, out, "relu(relu(x * y))");
  // a user-forced split: materialize(e) gets its own kernel, values unchanged
  const auto e6 = fusor::materialize(fusor::exp(x) * y) + fusor::relu(y);
  STATIC_REQUIRE(fusor::kernel_count<decltype(e6)> == 2);
  const auto g6 = fused_vs_unfused<float>(e6, n, out, "materialize hint");
  const auto g6b = fused_vs_unfused<float>(fusor::exp(x) * y + fusor::relu(y), n, out, "without hint");
  CHECK(count_mismatches(g6, g6b, "materialize hint vs none") == 0);
  // executor launch counters accumulate over runs
  const auto ex = fusor::host();
  std::vector<float> o(n);
  fusor::run(out(o.data()), e3, ex);
  fusor::run(out(o.data()), e5, ex);
  CHECK(ex.launches == 2);
}

TEST_CASE("fusion: shared producers give the same bits whether recomputed or materialized", "[host][fusion]") {
  // sigmoid(x * 0.5) appears three times (provably identical: tagged x, constant 0.5): the planner recomputes it per use or computes it
  // once (its choice; at run time for dynamic extents). Values must not change.
  for (std::size_t n : {std::size_t(16), std::size_t(3000), std::size_t(200000)}) {
    auto a = random_floats(n, 101), b = random_floats(n, 102);
    const auto x = fusor::host_view(a.data(), n).with_id<struct shared_x>();
    const auto y = fusor::host_view(b.data(), n);
    const auto e = fusor::sigmoid(x * 0.5_c) * y + fusor::sigmoid(x * 0.5_c) - fusor::exp(fusor::sigmoid(x * 0.5_c));
    std::vector<float> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      const float s = sigmoid_f(a[i] * 0.5f);
      want[i] = (s * b[i] + s) - fusor::math::exp(s);
    }
    const auto got = fused_vs_unfused<float>(e, n, [n](float* p) { return fusor::host_view(p, n); },
                                             "shared producer n=" + std::to_string(n));
    CHECK(count_mismatches(got, want, "shared producer vs scalar formula") == 0);
  }
  // static extents: the choice is a compile-time constant and matches the launches
  std::vector<float> a = random_floats(64, 103), o(64), u(64);
  const auto xs = fusor::host_view(a.data(), fusor::extents<64>{}).with_id<struct shared_s>();
  const auto es = fusor::tanh(xs + 1.0_c) * fusor::tanh(xs + 1.0_c);
  const auto rs = fusor::run(fusor::host_view(o.data(), fusor::extents<64>{}), es, fusor::host());
  const auto ru = fusor::run(fusor::host_view(u.data(), fusor::extents<64>{}), es, fusor::unfused());
  CHECK(rs.kernels == std::size_t(fusor::kernel_count<decltype(es), fusor::host_policy>));
  CHECK(ru.kernels == std::size_t(fusor::unfused_kernel_count<decltype(es)>));
  CHECK(count_mismatches(o, u, "static shared producer") == 0);
}

// ===========================================================================
// Canonicalization never changes bits
// ===========================================================================

namespace {
/// Evaluates the tagged (recognised) and untagged (not recognised) spellings of
/// one formula on host() and unfused(): all four results must be bitwise equal.
template <class T, class Tagged, class Plain>
void recognition_keeps_bits(const Tagged& tagged, const Plain& plain, std::size_t n, const std::string& what) {
  auto out = [n](T* p) { return fusor::host_view(p, n); };
  const auto a = fused_vs_unfused<T>(tagged, n, out, what + " (recognised)");
  const auto b = fused_vs_unfused<T>(plain, n, out, what + " (as written)");
  CHECK(count_mismatches(a, b, what + ": recognised vs as written") == 0);
  // the recognised form is one op, so unfused runs it as one kernel
  STATIC_REQUIRE(fusor::unfused_kernel_count<Tagged> == 1);
  STATIC_REQUIRE(fusor::unfused_kernel_count<Plain> > 1);
}

template <class Root, class E>
inline constexpr bool root_is = false;
template <class Root, class... A>
inline constexpr bool root_is<Root, fusor::node<Root, A...>> = true;
}  // namespace

TEST_CASE("fusion: x * sigmoid(x) -> silu keeps the bits", "[host][fusion][canon]") {
  const std::size_t n = 5003;
  auto a = random_floats(n, 111, 30.0f);
  const auto x = fusor::host_view(a.data(), n);
  const auto xt = x.with_id<struct silu_x>();
  using T1 = decltype(xt * fusor::sigmoid(xt));
  using T2 = decltype(fusor::sigmoid(xt) * xt);
  STATIC_REQUIRE(root_is<fusor::op::silu, fusor::canonical_t<T1>>);
  STATIC_REQUIRE(root_is<fusor::op::silu, fusor::canonical_t<T2>>);
  STATIC_REQUIRE(!root_is<fusor::op::silu, fusor::canonical_t<decltype(x * fusor::sigmoid(x))>>);
  recognition_keeps_bits<float>(xt * fusor::sigmoid(xt), x * fusor::sigmoid(x), n, "silu f32");
  recognition_keeps_bits<float>(fusor::sigmoid(xt) * xt, fusor::sigmoid(x) * x, n, "silu f32 swapped");
  auto h = convert<__half>(a);
  const auto xh = fusor::host_view(h.data(), n);
  const auto xht = xh.with_id<struct silu_h>();
  recognition_keeps_bits<__half>(xht * fusor::sigmoid(xht), xh * fusor::sigmoid(xh), n, "silu f16");
  // and the recognised value is the formula: x * (1 / (1 + e^-x)) in f32
  std::vector<float> o(n);
  fusor::run(fusor::host_view(o.data(), n), xt * fusor::sigmoid(xt), fusor::host());
  for (std::size_t i = 0; i < n; ++i) CHECK(same_bits(o[i], a[i] * sigmoid_f(a[i])));
}

TEST_CASE("fusion: the GELU formulas -> gelu / gelu_tanh keep the bits", "[host][fusion][canon]") {
  const std::size_t n = 5003;
  auto a = random_floats(n, 121, 10.0f);
  const auto x = fusor::host_view(a.data(), n);
  const auto xt = x.with_id<struct gelu_x>();
  const auto erf_mul_t = 0.5_c * xt * (1.0_c + fusor::erf(xt * 0.7071067811865476_c));
  const auto erf_mul = 0.5_c * x * (1.0_c + fusor::erf(x * 0.7071067811865476_c));
  const auto erf_div_t = 0.5_c * xt * (1.0_c + fusor::erf(xt / 1.4142135623730951_c));
  const auto erf_div = 0.5_c * x * (1.0_c + fusor::erf(x / 1.4142135623730951_c));
  const auto tanh_t = 0.5_c * xt * (1.0_c + fusor::tanh(0.7978845608028654_c * (xt + 0.044715_c * (xt * xt * xt))));
  const auto tanh_p = 0.5_c * x * (1.0_c + fusor::tanh(0.7978845608028654_c * (x + 0.044715_c * (x * x * x))));
  STATIC_REQUIRE(root_is<fusor::op::gelu, fusor::canonical_t<decltype(erf_mul_t)>>);
  STATIC_REQUIRE(root_is<fusor::op::gelu_of<fusor::op::gelu_form::erf_div>, fusor::canonical_t<decltype(erf_div_t)>>);
  STATIC_REQUIRE(root_is<fusor::op::gelu_tanh, fusor::canonical_t<decltype(tanh_t)>>);
  recognition_keeps_bits<float>(erf_mul_t, erf_mul, n, "gelu erf (x * 1/sqrt2) f32");
  recognition_keeps_bits<float>(erf_div_t, erf_div, n, "gelu erf (x / sqrt2) f32");
  recognition_keeps_bits<float>(tanh_t, tanh_p, n, "gelu tanh f32");
  // fusor::gelu(x) is the recognised erf form
  std::vector<float> g(n), w(n);
  fusor::run(fusor::host_view(g.data(), n), fusor::gelu(x), fusor::host());
  fusor::run(fusor::host_view(w.data(), n), erf_mul, fusor::unfused());
  CHECK(count_mismatches(g, w, "gelu(x) vs formula") == 0);
  for (std::size_t i = 0; i < n; ++i)
    CHECK(same_bits(g[i], (0.5f * a[i]) * (1.0f + fusor::math::erf(a[i] * float(0.7071067811865476)))));
  // f64 and f16 operands
  std::vector<double> d(a.begin(), a.end());
  const auto xd = fusor::host_view(d.data(), n);
  const auto xdt = xd.with_id<struct gelu_d>();
  recognition_keeps_bits<double>(0.5_c * xdt * (1.0_c + fusor::erf(xdt * 0.7071067811865476_c)),
                                 0.5_c * xd * (1.0_c + fusor::erf(xd * 0.7071067811865476_c)), n, "gelu erf f64");
  recognition_keeps_bits<double>(
      0.5_c * xdt * (1.0_c + fusor::tanh(0.7978845608028654_c * (xdt + 0.044715_c * (xdt * xdt * xdt)))),
      0.5_c * xd * (1.0_c + fusor::tanh(0.7978845608028654_c * (xd + 0.044715_c * (xd * xd * xd)))), n,
      "gelu tanh f64");
  auto h = convert<__half>(a);
  const auto xh = fusor::host_view(h.data(), n);
  const auto xht = xh.with_id<struct gelu_h>();
  recognition_keeps_bits<__half>(0.5_c * xht * (1.0_c + fusor::erf(xht * 0.7071067811865476_c)),
                                 0.5_c * xh * (1.0_c + fusor::erf(xh * 0.7071067811865476_c)), n, "gelu erf f16");
}

TEST_CASE("fusion: identity rewrites (x*1, x/1, x-0, x+(-0), relu(relu(x))) keep the bits", "[host][fusion][canon]") {
  const std::size_t n = 999;
  auto a = random_floats(n, 131);
  const auto x = fusor::host_view(a.data(), n);
  auto out = [n](float* p) { return fusor::host_view(p, n); };
  const auto ref = fused_vs_unfused<float>(fusor::tanh(x), n, out, "tanh(x)");
  const auto e1 = fusor::tanh(x * 1.0_c);
  const auto e2 = fusor::tanh(x / 1.0_c);
  const auto e3 = fusor::tanh(x - 0.0_c);
  const auto e4 = fusor::tanh(x + -0.0_c);
  STATIC_REQUIRE(std::is_same_v<fusor::canonical_t<decltype(e1)>, decltype(fusor::tanh(x))>);
  STATIC_REQUIRE(std::is_same_v<fusor::canonical_t<decltype(e2)>, decltype(fusor::tanh(x))>);
  STATIC_REQUIRE(std::is_same_v<fusor::canonical_t<decltype(e3)>, decltype(fusor::tanh(x))>);
  STATIC_REQUIRE(std::is_same_v<fusor::canonical_t<decltype(e4)>, decltype(fusor::tanh(x))>);
  CHECK(count_mismatches(fused_vs_unfused<float>(e1, n, out, "x*1"), ref, "tanh(x*1)") == 0);
  CHECK(count_mismatches(fused_vs_unfused<float>(e2, n, out, "x/1"), ref, "tanh(x/1)") == 0);
  CHECK(count_mismatches(fused_vs_unfused<float>(e3, n, out, "x-0"), ref, "tanh(x-0)") == 0);
  CHECK(count_mismatches(fused_vs_unfused<float>(e4, n, out, "x+(-0)"), ref, "tanh(x+(-0))") == 0);
  const auto rr = fused_vs_unfused<float>(fusor::relu(fusor::relu(x)) * 3.0f, n, out, "relu(relu(x))");
  CHECK(count_mismatches(rr, fused_vs_unfused<float>(fusor::relu(x) * 3.0f, n, out, "relu(x)"), "relu idempotent") == 0);
  // x + 0 is NOT rewritten (-0 + 0 = +0): the value keeps the IEEE sum
  const auto e5 = fusor::tanh(x + 0.0_c);
  STATIC_REQUIRE(!std::is_same_v<fusor::canonical_t<decltype(e5)>, decltype(fusor::tanh(x))>);
  const auto g5 = fused_vs_unfused<float>(e5, n, out, "x+0");
  REQUIRE(std::signbit(a[1]));  // random_floats puts -0.0 at index 1
  CHECK(a[1] == 0.0f);
  CHECK(!std::signbit(g5[1]));  // tanh(-0 + 0) = tanh(+0) = +0, while tanh(-0) = -0
  CHECK(std::signbit(ref[1]));
  // x * 1 over an int tensor is f32 and is not rewritten away
  std::vector<int32_t> ia = {1, -2, 3};
  const auto xi = fusor::host_view(ia.data(), 3);
  STATIC_REQUIRE(std::is_same_v<fusor::value_t<fusor::canonical_t<decltype(fusor::relu(xi * 1.0_c))>>, float>);
}

TEST_CASE("fusion: an expression that canonicalizes to a bare view is a copy", "[host][fusion][canon]") {
  // x * 1, x / 1, x - 0, x + (-0) are rewritten to x itself; run() then copies x.
  const std::size_t n = 1001;
  const auto a = random_floats(n, 141);
  std::vector<float> am = a;
  const auto x = fusor::host_view(am.data(), n);
  STATIC_REQUIRE(std::is_same_v<fusor::canonical_t<decltype(x * 1.0_c)>, std::remove_cvref_t<decltype(x)>>);
  for (bool unfused : {false, true}) {
    INFO((unfused ? "unfused" : "host"));
    std::vector<float> o(n, sentinel), h(n, sentinel);
    std::vector<__half> oh(n);
    if (unfused) {
      fusor::run(fusor::host_view(o.data(), n), x * 1.0_c, fusor::unfused());
      fusor::run(fusor::host_view(h.data(), n), x, fusor::unfused());
      fusor::run(fusor::host_view(oh.data(), n), x - 0.0_c, fusor::unfused());
    } else {
      fusor::run(fusor::host_view(o.data(), n), x * 1.0_c, fusor::host());
      fusor::run(fusor::host_view(h.data(), n), x, fusor::host());
      fusor::run(fusor::host_view(oh.data(), n), x - 0.0_c, fusor::host());
    }
    CHECK(count_mismatches(o, a, "x * 1") == 0);
    CHECK(count_mismatches(h, a, "bare x") == 0);
    CHECK(count_mismatches(oh, convert<__half>(a), "x - 0 into f16") == 0);
  }
}

TEST_CASE("fusion: kernel_count counts the copy of a bare-view expression", "[host][fusion][canon]") {
  // Regression, fixed (was a library bug: minor; plan/plan.hpp kernel_count / unfused_kernel_count vs
  // exec/run.hpp run_all): an expression whose canonical form is a bare view
  // (x, or x * 1.0_c) plans to no group, so kernel_count is 0, but run()
  // copies it through a one-op identity kernel and reports kernels == 1.
  // Repro: run(out, x * 1.0_c, host()).kernels == 1 while
  // kernel_count<decltype(x * 1.0_c)> == 0 (same for unfused_kernel_count).
  // Suggested fix: plan a bare root as group<single_op, identity(x)> so the
  // plan type and the launches agree (or document kernel_count as "0 = copy").
  const std::size_t n = 16;
  std::vector<float> a(n, 1.0f), o(n);
  const auto x = fusor::host_view(a.data(), n);
  const auto rf = fusor::run(fusor::host_view(o.data(), n), x * 1.0_c, fusor::host());
  const auto ru = fusor::run(fusor::host_view(o.data(), n), x * 1.0_c, fusor::unfused());
  CHECK(rf.kernels == std::size_t(fusor::kernel_count<decltype(x * 1.0_c)>));
  CHECK(ru.kernels == std::size_t(fusor::unfused_kernel_count<decltype(x * 1.0_c)>));
}

// ------------------------------------------------------------------ tagged expressions
// fusor::tag<Id>(e) names an expression's value: an expensive producer used
// twice (here a softmax and a layer_norm, whose attributes stop sharing by
// type) is computed once. Values are those of the untagged expression
// (bitwise: the same kernels, fewer of them).
TEST_CASE("fusion: a tagged expression is computed once; its occurrences must be one value", "[fusion][tag]") {
  struct XT;
  struct WT;
  struct ST;
  struct HT;
  const index_t M = 5, K = 8;
  auto random_values = [gen = std::mt19937(17)](index_t n) mutable {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& e : v) e = u(gen);
    return v;
  };
  const auto x = random_values(M * K), w = random_values(K * K), g = random_values(K), b = random_values(K);
  const auto X = fusor::host_view(static_cast<const float*>(x.data()), M, K).with_id<XT>();
  const auto W = fusor::host_view(static_cast<const float*>(w.data()), K, K).with_id<WT>();
  const auto G = fusor::host_view(static_cast<const float*>(g.data()), K);
  const auto B = fusor::host_view(static_cast<const float*>(b.data()), K);
  using hp = fusor::host_policy;

  const auto untagged = fusor::softmax(X, -1) + fusor::linear(fusor::softmax(X, -1), W);
  const auto s = fusor::tag<ST>(fusor::softmax(X, -1));
  const auto tagged = s + fusor::linear(s, W);
  // untagged: the two softmaxes are one value when they read the same X
  // with the same axis (checked at run time, recognize/shared_by_value.hpp):
  // kernel_count counts the written form (3), the run launches 2
  STATIC_REQUIRE(fusor::kernel_count<decltype(untagged), hp> == 3);
  STATIC_REQUIRE(fusor::kernel_count<decltype(tagged), hp> == 2);
  STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(tagged)> == 4);  // softmax, tag, linear, add
  const auto h = fusor::tag<HT>(fusor::layer_norm(X, G, B, -1, 1e-5f));
  const auto ffn = fusor::layer_norm(h + fusor::linear(fusor::gelu(fusor::linear(h, W)), W), G, B, -1, 1e-5f);
  // 4 kernels tagged or not: untagged, the GEMM recomputes the layer_norm
  // while loading A (norm_linear) besides the norm's own kernel for the
  // residual; tagged, the norm runs once and both read its result.
  STATIC_REQUIRE(fusor::kernel_count<decltype(ffn), hp> == 4);

  std::vector<float> a(std::size_t(M * K)), c(std::size_t(M * K)), ref(std::size_t(M * K));
  const auto out_a = fusor::host_view(a.data(), M, K), out_c = fusor::host_view(c.data(), M, K);
  SECTION("softmax shared by a GEMM and its epilogue") {
    CHECK(fusor::run(out_a, tagged, fusor::host()).kernels == 2);
    CHECK(fusor::run(out_c, untagged, fusor::host()).kernels == 2);
    CHECK(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) == 0);
    CHECK(fusor::run(fusor::host_view(ref.data(), M, K), tagged, fusor::unfused()).kernels == 4);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - ref[i]) <= 1e-5f * (1.0f + std::fabs(ref[i])));
  }
  SECTION("a layer_norm shared by a residual and a GEMM prologue") {
    const auto r = fusor::run(out_a, ffn, fusor::host());
    CHECK(r.kernels == std::size_t(fusor::kernel_count<decltype(ffn), hp>));
    fusor::run(fusor::host_view(ref.data(), M, K), ffn, fusor::unfused());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - ref[i]) <= 1e-4f * (1.0f + std::fabs(ref[i])));
  }
  SECTION("a tagged GEMM read by a row reduction and by the root's epilogue runs once") {
    struct LT;
    const auto t = fusor::tag<LT>(fusor::linear(X, W));
    const auto e = t + fusor::layer_norm(t, nullptr, nullptr, -1, 1e-5f);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e), hp> == 2);  // the GEMM (tag as its epilogue), the row kernel
    CHECK(fusor::run(out_a, e, fusor::host()).kernels == 2);
    fusor::run(fusor::host_view(ref.data(), M, K), e, fusor::unfused());
    CHECK(std::memcmp(a.data(), ref.data(), a.size() * sizeof(float)) == 0);
  }
  SECTION("two separately built occurrences of one tag are one value (op padding is not compared)") {
    struct NT;
    auto make = [&] { return fusor::tag<NT>(fusor::layer_norm(X, G, B, -1, 1e-5f)); };  // int, float, bools: padding
    const auto e = make() + fusor::softmax(make(), -1);
    CHECK_NOTHROW(fusor::run(out_a, e, fusor::host()));
    CHECK_NOTHROW(fusor::run(out_c, e, fusor::unfused()));
  }
  SECTION("one tag on two different values is an argument_error; nothing written") {
    std::fill(a.begin(), a.end(), -7.0f);
    const auto before = a;
    struct BT;
    const auto other_axis = fusor::tag<BT>(fusor::softmax(X, -1)) + fusor::tag<BT>(fusor::softmax(X, 0));
    CHECK_THROWS_AS(fusor::run(out_a, other_axis, fusor::host()), fusor::argument_error);
    CHECK_THROWS_WITH(fusor::run(out_a, other_axis, fusor::host()),
                      Catch::Contains("two occurrences of the tagged expression tag(softmax(") &&
                          Catch::Contains("different op attributes"));
    const auto X2 = fusor::host_view(static_cast<const float*>(w.data()), M, K);  // another tensor, untagged
    const auto other_tensor = fusor::tag<BT>(fusor::softmax(X2, -1)) + fusor::tag<BT>(fusor::softmax(X2, -1) * 1.0f);
    CHECK_THROWS_WITH(fusor::run(out_a, other_tensor, fusor::unfused()), Catch::Contains("names two different expressions"));
    const auto X3 = fusor::host_view(static_cast<const float*>(x.data()) + 1, M, K);
    const auto shifted = fusor::tag<BT>(fusor::softmax(X2, -1)) + fusor::tag<BT>(fusor::softmax(X3, -1));
    CHECK_THROWS_WITH(fusor::run(out_a, shifted, fusor::host()), Catch::Contains("read different tensors"));
    CHECK(a == before);
  }
}
