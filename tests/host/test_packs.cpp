// Host packs (core/pack.hpp, ops/math.hpp, exec/host_packets.hpp,
// kernels/parts/host_rows.hpp): every lane of a pack computes exactly what
// the scalar code computes, bit for bit (NaN payloads aside: any NaN equals
// any NaN), for every op functor that takes packs and every math function;
// the host's row reductions in packs agree with float64 within the bound of
// their pairwise order and give fused == unfused bit for bit.
//
// Built three times by tests/CMakeLists.txt: at the compiler's default
// instruction set (SSE2: 4 lanes), with -march=x86-64-v3 (AVX2 + FMA: 8 lanes,
// SLEEF's FMA family) and, where this machine runs it, -march=x86-64-v4
// (AVX-512: 16 lanes).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int W = fusor::host_pack_lanes;
using fusor::pack;

template <class T>
bool same(T a, T b) {
  if (a != a && b != b) return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Inputs: signed zeros, infinities, NaN, denormals, the extremes, values
// around the ops' thresholds (0, +-1, 20 for softplus, +-88 for exp), then
// random bit patterns and random values in [-10, 10].
template <class T>
std::vector<T> inputs(std::size_t n, unsigned seed) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),        T(-0.0),     L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
                      -L::denorm_min(), L::min(), L::max(),      L::lowest(),    T(1),           T(-1),
                      T(0.5),      T(-0.5),     T(20),         T(20.5),        T(88.5),        T(-88.5),
                      T(-104),     T(3),        T(-3),         T(1e-7),        T(-1e-7),       T(6)};
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-10, 10);
  while (v.size() < n) {
    if (v.size() % 2) {
      using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      const U b = U(g());
      T x;
      std::memcpy(&x, &b, sizeof(T));
      v.push_back(x);
    } else {
      v.push_back(T(u(g)));
    }
  }
  v.resize(n / W * W);
  return v;
}

template <class T>
pack<T, W> pack_at(const std::vector<T>& v, std::size_t i) {
  pack<T, W> p;
  for (int l = 0; l < W; ++l) p.v[l] = v[i + std::size_t(l)];
  return p;
}

// op(pack) lane l == op(scalar) for every input and every operand position.
template <class T, class Op>
int unary_mismatches(const Op& op, const std::vector<T>& in, std::string& first) {
  int bad = 0;
  for (std::size_t i = 0; i < in.size(); i += W) {
    const pack<T, W> r = op(pack_at(in, i));
    for (int l = 0; l < W; ++l) {
      const T want = op(in[i + std::size_t(l)]);
      if (!same(T(r.v[l]), want)) {
        if (bad++ == 0) first = std::to_string(double(in[i + std::size_t(l)])) + ": " + std::to_string(double(r.v[l])) +
                                " vs " + std::to_string(double(want));
      }
    }
  }
  return bad;
}
template <class T, class Op>
int binary_mismatches(const Op& op, const std::vector<T>& a, const std::vector<T>& b, std::string& first) {
  int bad = 0;
  for (std::size_t i = 0; i < a.size(); i += W) {
    const pack<T, W> r = op(pack_at(a, i), pack_at(b, i));
    for (int l = 0; l < W; ++l) {
      const T want = op(a[i + std::size_t(l)], b[i + std::size_t(l)]);
      if (!same(T(r.v[l]), want)) {
        if (bad++ == 0) first = std::to_string(double(a[i + std::size_t(l)])) + ", " +
                                std::to_string(double(b[i + std::size_t(l)])) + ": " + std::to_string(double(r.v[l])) +
                                " vs " + std::to_string(double(want));
      }
    }
  }
  return bad;
}

template <class T>
void check_ops() {
  const auto a = inputs<T>(4096, 1), b = inputs<T>(4096, 2);
  std::vector<T> b_rot(b.rbegin(), b.rend());  // other pairings of the specials
  std::string first;
#define FUSOR_CHECK_UNARY(OP)                                  \
  {                                                            \
    first.clear();                                             \
    const int bad = unary_mismatches<T>(OP, a, first);         \
    INFO(#OP << ": first mismatch " << first);                 \
    CHECK(bad == 0);                                           \
  }
#define FUSOR_CHECK_BINARY(OP)                                                         \
  {                                                                                    \
    first.clear();                                                                     \
    const int bad = binary_mismatches<T>(OP, a, b, first) + binary_mismatches<T>(OP, a, b_rot, first) + \
                    binary_mismatches<T>(OP, a, a, first);                             \
    INFO(#OP << ": first mismatch " << first);                                         \
    CHECK(bad == 0);                                                                   \
  }
  namespace op = fusor::op;
  FUSOR_CHECK_BINARY(op::add{})
  FUSOR_CHECK_BINARY(op::sub{})
  FUSOR_CHECK_BINARY(op::mul{})
  FUSOR_CHECK_BINARY(op::div{})
  FUSOR_CHECK_BINARY(op::max{})
  FUSOR_CHECK_BINARY(op::min{})
  FUSOR_CHECK_BINARY(op::prelu{})
  FUSOR_CHECK_BINARY([](auto x, auto y) { return fusor::math::pow(x, y); })
  FUSOR_CHECK_BINARY([](auto x, auto y) { return op::clip{}(x, y, decltype(y)(2)); })
  FUSOR_CHECK_BINARY([](auto x, auto y) { return op::where{}(x > y, x, y); })
  // comparisons (lane masks on packs) through where
  FUSOR_CHECK_BINARY([](auto x, auto y) { return op::where{}(op::less{}(x, y), x, y); })
  FUSOR_CHECK_BINARY([](auto x, auto y) { return op::where{}(op::greater_equal{}(x, y), y, x); })
  FUSOR_CHECK_BINARY([](auto x, auto y) { return op::where{}(op::equal{}(x, y), x, fusor::math::add(y, y)); })
  FUSOR_CHECK_BINARY([](auto x, auto y) { return op::where{}(op::not_equal{}(x, y), x, fusor::math::add(y, y)); })
  FUSOR_CHECK_UNARY(op::neg{})
  FUSOR_CHECK_UNARY(op::square{})
  FUSOR_CHECK_UNARY(op::abs{})
  FUSOR_CHECK_UNARY(op::relu{})
  FUSOR_CHECK_UNARY(op::exp{})
  FUSOR_CHECK_UNARY(op::log{})
  FUSOR_CHECK_UNARY(op::sqrt{})
  FUSOR_CHECK_UNARY(op::rsqrt{})
  FUSOR_CHECK_UNARY(op::reciprocal{})
  FUSOR_CHECK_UNARY(op::tanh{})
  FUSOR_CHECK_UNARY(op::erf{})
  FUSOR_CHECK_UNARY(op::sigmoid{})
  FUSOR_CHECK_UNARY(op::silu{})
  FUSOR_CHECK_UNARY(op::softsign{})
  FUSOR_CHECK_UNARY(op::softplus{})
  FUSOR_CHECK_UNARY(op::hardswish{})
  FUSOR_CHECK_UNARY(op::leaky_relu{})
  FUSOR_CHECK_UNARY(op::elu{})
  FUSOR_CHECK_UNARY(op::selu{})
  FUSOR_CHECK_UNARY(op::celu{})
  FUSOR_CHECK_UNARY(op::hardsigmoid{})
  FUSOR_CHECK_UNARY(op::thresholded_relu{})
  FUSOR_CHECK_UNARY(op::gelu{})
  FUSOR_CHECK_UNARY(op::gelu_of<op::gelu_form::erf_div>{})
  FUSOR_CHECK_UNARY(op::gelu_tanh{})
  FUSOR_CHECK_UNARY(op::sin{})
  FUSOR_CHECK_UNARY(op::cos{})
  FUSOR_CHECK_UNARY(op::tan{})
  FUSOR_CHECK_UNARY(op::asin{})
  FUSOR_CHECK_UNARY(op::acos{})
  FUSOR_CHECK_UNARY(op::atan{})
  FUSOR_CHECK_UNARY(op::sinh{})
  FUSOR_CHECK_UNARY(op::cosh{})
  FUSOR_CHECK_UNARY(op::asinh{})
  FUSOR_CHECK_UNARY(op::acosh{})
  FUSOR_CHECK_UNARY(op::atanh{})
  FUSOR_CHECK_UNARY(op::floor{})
  FUSOR_CHECK_UNARY(op::ceil{})
  FUSOR_CHECK_UNARY(op::round{})
  FUSOR_CHECK_UNARY(op::sign{})
  FUSOR_CHECK_UNARY([](auto x) { return fusor::math::expm1(x); })
  FUSOR_CHECK_UNARY([](auto x) { return fusor::math::log1p(x); })
  FUSOR_CHECK_UNARY([](auto x) { return fusor::math::fabs(x); })
  FUSOR_CHECK_UNARY([](auto x) { return op::batch_norm{}(x, decltype(x)(1.5), decltype(x)(-0.25), decltype(x)(0.125), decltype(x)(2)); })
#undef FUSOR_CHECK_UNARY
#undef FUSOR_CHECK_BINARY
}

}  // namespace

TEST_CASE("packs: every lane of every op equals the scalar op, bit for bit (f32)", "[host][packs]") {
  check_ops<float>();
}

TEST_CASE("packs: every lane of every op equals the scalar op, bit for bit (f64)", "[host][packs]") {
  check_ops<double>();
}

TEST_CASE("packs: SLEEF's vector and scalar variants agree on 2^20 random floats", "[host][packs]") {
  // (the exhaustive check over all 2^32 floats was run once, for exp, log,
  // tanh and erf in both families: ops/vector_math.hpp)
  std::mt19937 g(3);
  std::vector<float> x(std::size_t(1) << 20);
  for (auto& e : x) {
    const std::uint32_t b = g();
    std::memcpy(&e, &b, 4);
  }
  std::string first;
  int bad = 0;
  bad += unary_mismatches<float>([](auto v) { return fusor::math::exp(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::expm1(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::log(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::log1p(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::tanh(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::erf(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::sin(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::cos(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::tan(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::asin(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::acos(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::atan(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::sinh(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::cosh(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::asinh(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::acosh(v); }, x, first);
  bad += unary_mismatches<float>([](auto v) { return fusor::math::atanh(v); }, x, first);
  INFO("first mismatch " << first);
  CHECK(bad == 0);
}

TEST_CASE("packs: elementwise groups of any length, stride and offset equal the scalar formula", "[host][packs]") {
  // lengths around the pack width and the host chunk; a strided, an offset
  // and a broadcast operand: every access path of exec/host_packets.hpp
  for (const fusor::index_t n : {1, 2, W - 1, W, W + 1, 3 * W + 2, 1000, 32769}) {
    const auto a = inputs<float>(std::size_t(2 * n + W), 11);
    std::vector<float> out(std::size_t(n), 0.0f), want(std::size_t(n), 0.0f);
    const auto xs = fusor::host_view(a.data() + 1, n);  // offset: misaligned
    const auto ys = fusor::host_view(a.data(), n);
    fusor::run(fusor::host_view(out.data(), n), fusor::tanh(xs) * 2.0f + fusor::relu(ys), fusor::host());
    for (fusor::index_t i = 0; i < n; ++i)
      want[std::size_t(i)] = fusor::math::tanh(a[std::size_t(i + 1)]) * 2.0f + fusor::op::relu{}(a[std::size_t(i)]);
    int bad = 0;
    for (std::size_t i = 0; i < out.size(); ++i) bad += !same(out[i], want[i]);
    INFO("n = " << n);
    CHECK(bad == 0);
    // every other element (stride 2), and a [n, 1] x [1, 3] broadcast
    std::vector<float> out2(std::size_t(n), 0.0f), out3(std::size_t(3 * n), 0.0f);
    const auto strided = fusor::host_view(a.data(), fusor::dextents<1>(n), fusor::shape<1>{2});
    fusor::run(fusor::host_view(out2.data(), n), fusor::exp(strided), fusor::host());
    bad = 0;
    for (fusor::index_t i = 0; i < n; ++i) bad += !same(out2[std::size_t(i)], fusor::math::exp(a[std::size_t(2 * i)]));
    CHECK(bad == 0);
    const float cols[3] = {0.5f, -1.0f, 2.0f};
    fusor::run(fusor::host_view(out3.data(), n, 3),
               fusor::host_view(a.data(), n, 1) * fusor::host_view(static_cast<const float*>(cols), 1, 3), fusor::host());
    bad = 0;
    for (fusor::index_t i = 0; i < n; ++i)
      for (int j = 0; j < 3; ++j) bad += !same(out3[std::size_t(i * 3 + j)], a[std::size_t(i)] * cols[j]);
    CHECK(bad == 0);
  }
}

TEST_CASE("packs: per-channel subtrees hoisted per run, dims coalesced: bit for bit the scalar formula",
          "[host][packs][run_invariant]") {
  namespace ri = fusor::exec::run_invariant;
  // relu(batch_norm(x)) over NCHW: the parameters arrive as [C, 1, 1] with
  // static 1s, so gamma / sqrt(var + eps) is one value per run along W
  // (exec/run_invariant.hpp) and H, W coalesce into one run.
  const auto kernel_for = [](auto x, const std::vector<float>& p, fusor::index_t C, float* y) {
    const auto bn = fusor::batch_norm_params{fusor::host_view(p.data(), C), fusor::host_view(p.data() + C, C),
                                             fusor::host_view(p.data() + 2 * C, C), fusor::host_view(p.data() + 3 * C, C)};
    const auto e = fusor::relu(fusor::batch_norm(x, bn, 1e-5f));
    const auto s = fusor::shape_of(e);
    return fusor::exec::make_elementwise_kernel<4>(s, std::make_tuple(fusor::host_view(y, s[0], s[1], s[2], s[3])), e);
  };
  {
    std::vector<float> p(12, 1.0f), x(120, 0.0f), y(120);
    using K = decltype(kernel_for(fusor::host_view(x.data(), 2, 3, 4, 5), p, 3, y.data()));
    constexpr auto mask = ri::source_mask_v<decltype(K::sources)>;
    STATIC_REQUIRE(mask == 0b11110);                                // gamma, beta, mean, var; not x
    STATIC_REQUIRE(ri::count_v<decltype(K::roots), mask> == 1);     // gamma / sqrt(var + eps)
    auto k = kernel_for(fusor::host_view(x.data(), 2, 3, 4, 5), p, 3, y.data());
    REQUIRE(fusor::exec::coalesce_dims(k));
    CHECK(k.extent == decltype(k.extent){1, 2, 3, 20});  // H * W merged; C and N not (the parameters step on C)
  }
  {
    // A source whose static last extent is 1 under an output whose last
    // extent is 1 too: coalescing must not make the flagged source's last
    // dim one it steps along (a fuzz_elementwise find: exp(a) was computed
    // once per run of 7 different elements).
    std::vector<float> a(72), b(9), y(49, 0.0f), z(245, 0.0f);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.1f * float(i) - 2.0f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.5f + float(i);
    const auto av = fusor::host_view(static_cast<const float*>(a.data() + 5), fusor::extents<7, 7, 1, 1>(),
                                     fusor::shape<4>{10, 1, 1, 70});
    const auto bv = fusor::host_view(static_cast<const float*>(b.data() + 4), fusor::extents<1, 5>(), fusor::shape<2>{5, 1});
    fusor::run(fusor::host_view(y.data(), 7, 7, 1, 1), fusor::exp(av), fusor::host());
    fusor::run(fusor::host_view(z.data(), 7, 7, 1, 5), fusor::exp(av) + bv, fusor::host());
    int bad = 0;
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 7; ++j) {
        const float e = fusor::math::exp(a[std::size_t(5 + 10 * i + j)]);
        bad += !same(y[std::size_t(7 * i + j)], e);
        for (int w = 0; w < 5; ++w) bad += !same(z[std::size_t(35 * i + 5 * j + w)], e + b[std::size_t(4 + w)]);
      }
    CHECK(bad == 0);
  }
  {
    // NHWC, batch_norm<-1>: the parameters [C] vary along the last dim but
    // are constant along every other (RowInvariant): gamma / sqrt(var + eps)
    // is buffered once per position along C (two or more rows per range).
    const fusor::index_t N = 2, H = 6, Wd = 8;  // 96 rows: a range of 64 or more is walked flat
    // C < and > the pack width, and C not a multiple of it (packs walked
    // flat across rows straddle two rows)
    for (const fusor::index_t C : {5, 40, 24}) {
      const fusor::index_t n = N * H * Wd * C;
      const auto un = static_cast<std::size_t>(n);
      std::vector<float> x(un), p(static_cast<std::size_t>(4 * C)), y(un, 1.0f), z(un, 2.0f);
      std::mt19937 g(11);
      std::uniform_real_distribution<float> u(-3.0f, 3.0f);
      for (auto& v : x) v = u(g);
      for (auto& v : p) v = u(g);
      for (fusor::index_t c = 0; c < C; ++c) p[std::size_t(3 * C + c)] = std::abs(p[std::size_t(3 * C + c)]);
      p[std::size_t(3 * C + 1)] = -1e-5f;  // var + eps = 0
      x[7] = std::numeric_limits<float>::quiet_NaN();
      const auto bn = fusor::batch_norm_params{fusor::host_view(p.data(), C), fusor::host_view(p.data() + C, C),
                                               fusor::host_view(p.data() + 2 * C, C), fusor::host_view(p.data() + 3 * C, C)};
      const auto e = fusor::relu(fusor::batch_norm<-1>(fusor::host_view(x.data(), N, H, Wd, C), bn, 1e-5f));
      const auto k = fusor::exec::make_elementwise_kernel<4>(
          fusor::shape_of(e), std::make_tuple(fusor::host_view(y.data(), N, H, Wd, C)), e);
      using K = std::remove_cvref_t<decltype(k)>;
      STATIC_REQUIRE(ri::source_mask_v<decltype(K::sources)> == 0);     // nothing constant along C
      STATIC_REQUIRE(ri::row_mask_v<decltype(K::sources)> == 0b11110);  // the parameters; not x
      STATIC_REQUIRE(ri::count_v<decltype(K::roots), 0b11110> == 1);     // gamma / sqrt(var + eps)
      // 70 rows and a bit (flat), 25 rows less a bit from mid-row (per row,
      // buffered), the rest (shorter than two rows: per row, unbuffered)
      static_assert(fusor::exec::host_flat_rows_min <= 70);
      fusor::exec::run_packets<W>(k, 0, 70 * C + 7);
      fusor::exec::run_packets<W>(k, 70 * C + 7, n - C - 3);
      fusor::exec::run_packets<W>(k, n - C - 3, n);
      fusor::run(fusor::host_view(z.data(), N, H, Wd, C), e, fusor::unfused());
      const fusor::op::batch_norm op{{}, 1e-5f};
      int bad = 0;
      for (fusor::index_t i = 0; i < n; ++i) {
        const fusor::index_t c = i % C;
        const auto P = [&](int q) { return p[std::size_t(q * C + c)]; };
        bad += !same(y[std::size_t(i)], fusor::op::relu{}(op(x[std::size_t(i)], P(0), P(1), P(2), P(3))));
        bad += !same(y[std::size_t(i)], z[std::size_t(i)]);
      }
      INFO("C = " << C);
      CHECK(bad == 0);
    }
  }
  const fusor::index_t N = 2, C = 5;
  for (const fusor::index_t Wd : {3, 37}) {  // rows shorter than a pack, and rows with a tail
    const fusor::index_t H = 4, n = N * C * H * Wd;
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    std::vector<float> x(std::size_t(2 * n));
    for (auto& v : x) v = u(g);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[40] = std::numeric_limits<float>::infinity();
    x[41] = -0.0f;
    std::vector<float> p(std::size_t(4 * C));  // gamma, beta, mean, var
    for (fusor::index_t c = 0; c < C; ++c) {
      p[std::size_t(c)] = u(g);
      p[std::size_t(C + c)] = u(g);
      p[std::size_t(2 * C + c)] = u(g);
      p[std::size_t(3 * C + c)] = std::abs(u(g));
    }
    p[std::size_t(3 * C + 1)] = -1e-5f;  // var + eps = 0: the scale is +-inf
    p[std::size_t(2)] = 0.0f;            // with gamma = 0:
    p[std::size_t(3 * C + 2)] = -1e-5f;  // 0 / 0 = NaN
    // x as contiguous NCHW, as an NHWC buffer seen as NCHW (transposed), and
    // every other element along W (sliced): each coalesces differently.
    const fusor::index_t nchw[4] = {C * H * Wd, H * Wd, Wd, 1}, nhwc[4] = {H * Wd * C, 1, Wd * C, C},
                         every_other[4] = {2 * C * H * Wd, 2 * H * Wd, 2 * Wd, 2};
    for (const auto* st : {nchw, nhwc, every_other}) {
      const auto xv = fusor::host_view(x.data(), fusor::dextents<4>(N, C, H, Wd), fusor::shape<4>{st[0], st[1], st[2], st[3]});
      std::vector<float> packs(std::size_t(n), 1.0f), twin(std::size_t(n), 2.0f);
      const auto kp = kernel_for(xv, p, C, packs.data());
      const auto kt = kernel_for(xv, p, C, twin.data());
      // the host's packs over two ranges split mid-row (as threads split it),
      // the device algorithm (one element per step) over the whole range
      fusor::exec::run_packets<W>(kp, 0, 77);
      fusor::exec::run_packets<W>(kp, 77, n);
      kt.run_range(0, n);
      int bad = 0, bad_formula = 0;
      const fusor::op::batch_norm bn{{}, 1e-5f};
      for (fusor::index_t i = 0; i < n; ++i) {
        const fusor::index_t w = i % Wd, h = i / Wd % H, c = i / (Wd * H) % C, b = i / (Wd * H * C);
        const float xi = x[std::size_t(b * st[0] + c * st[1] + h * st[2] + w * st[3])];
        const auto P = [&](int k) { return p[std::size_t(k * C + c)]; };
        const float want = fusor::op::relu{}(bn(xi, P(0), P(1), P(2), P(3)));
        bad += !same(packs[std::size_t(i)], twin[std::size_t(i)]);
        bad_formula += !same(packs[std::size_t(i)], want);
      }
      INFO("W = " << Wd << ", strides " << st[0] << " " << st[1] << " " << st[2] << " " << st[3]);
      CHECK(bad == 0);
      CHECK(bad_formula == 0);
    }
  }
}

TEST_CASE("packs: per-position parameters walked flat across short rows, bit for bit the scalar formula",
          "[host][packs]") {
  // x * s + b and exp(x - s) over NHWC with s, b plain [C] views (no subtree
  // to buffer: the flat walk buffers the sources themselves), for C shorter
  // than, equal to and not a multiple of the pack, on ranges starting
  // mid-row; then x sliced along C (not dense across rows: walked per row).
  const fusor::index_t N = 2, H = 8, Wd = 6;  // 96 rows
  for (const fusor::index_t C : {W, 17, 64, 3 * W + 5}) {
    const fusor::index_t n = N * H * Wd * C;
    const auto x = inputs<float>(std::size_t(2 * n), 5);
    const auto pv = inputs<float>(std::size_t(2 * C + 4), 6);
    const auto X = fusor::host_view(x.data(), N, H, Wd, C);
    const auto s = fusor::host_view(pv.data(), C), b = fusor::host_view(pv.data() + C + 3, C);
    const auto e = X * s + b;
    std::vector<float> y(std::size_t(n), 1.0f), z(std::size_t(n), 2.0f);
    const auto k = fusor::exec::make_elementwise_kernel<4>(fusor::shape_of(e),
                                                           std::make_tuple(fusor::host_view(y.data(), N, H, Wd, C)), e);
    CHECK(fusor::exec::dense_across_rows(k));
    // 2 rows and a bit (per row), 70 rows from mid-row (flat), the rest
    // (per row), a tail of one element
    const fusor::index_t cuts[] = {0, 2 * C + 3, 72 * C + 8, n - 1, n};
    static_assert(fusor::exec::host_flat_rows_min <= 70);
    for (int c = 0; c + 1 < 5; ++c) fusor::exec::run_packets<W>(k, cuts[c], cuts[c + 1]);
    fusor::run(fusor::host_view(z.data(), N, H, Wd, C), fusor::exp(X - s), fusor::host());
    int bad = 0;
    for (fusor::index_t i = 0; i < n; ++i) {
      const auto ch = std::size_t(i % C);
      bad += !same(y[std::size_t(i)], x[std::size_t(i)] * pv[ch] + pv[ch + std::size_t(C) + 3]);
      bad += !same(z[std::size_t(i)], fusor::math::exp(x[std::size_t(i)] - pv[ch]));
    }
    INFO("C = " << C);
    CHECK(bad == 0);
    // every other element along C: runs of C / 2 elements, not one flat walk
    const fusor::index_t half = C / 2;
    const auto sliced = fusor::host_view(x.data(), fusor::dextents<4>(N, H, Wd, half), fusor::shape<4>{H * Wd * C, Wd * C, C, 2});
    const auto e2 = sliced * fusor::host_view(pv.data(), half) + fusor::host_view(pv.data() + C, half);
    std::vector<float> y2(std::size_t(N * H * Wd * half), 3.0f);
    const auto k2 = fusor::exec::make_elementwise_kernel<4>(
        fusor::shape_of(e2), std::make_tuple(fusor::host_view(y2.data(), N, H, Wd, half)), e2);
    CHECK(!fusor::exec::dense_across_rows(k2));
    fusor::run(fusor::host_view(y2.data(), N, H, Wd, half), e2, fusor::host());
    bad = 0;
    for (std::size_t i = 0; i < y2.size(); ++i) {
      const auto ch = i % std::size_t(half);
      bad += !same(y2[i], x[(i / std::size_t(half)) * std::size_t(C) + 2 * ch] * pv[ch] + pv[ch + std::size_t(C)]);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("host rows: pack reductions agree with float64, fused == unfused bit for bit", "[host][packs]") {
  // Bound (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2:
  // a sum's error is at most (the longest chain of additions) u sum|x_i|):
  // a leaf of 512 gives each of its 4 W lanes 512 / (4 W) terms, then
  // log2(4 W) merges, then log2(n / 512) levels of the pairwise tree.
  for (const fusor::index_t n : {1, 7, 64, 511, 512, 513, 4099, 65536}) {
    std::vector<float> x(std::size_t(2 * n));
    std::mt19937 g{unsigned(n)};
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& e : x) e = u(g);
    const auto X = fusor::host_view(static_cast<const float*>(x.data()), 2, n);
    std::vector<float> s(2), su(2), m(2);
    fusor::run(fusor::host_view(s.data(), 2), fusor::sum<1>(fusor::relu(X), {1}, false), fusor::host());
    fusor::run(fusor::host_view(su.data(), 2), fusor::sum<1>(fusor::relu(X), {1}, false), fusor::unfused());
    fusor::run(fusor::host_view(m.data(), 2), fusor::max_reduce<1>(X, {1}, false), fusor::host());
    const double chain = 512.0 / (4 * W) + std::log2(4.0 * W) + std::log2(std::max(1.0, double(n) / 512)) + 2;
    for (int r = 0; r < 2; ++r) {
      double ref = 0, mx = -1e30;
      for (fusor::index_t j = 0; j < n; ++j) {
        const double v = x[std::size_t(r * n + j)];
        ref += v > 0 ? v : 0;
        mx = std::max(mx, v);
      }
      INFO("n = " << n << ", row " << r);
      CHECK(std::abs(s[std::size_t(r)] - ref) <= chain * std::ldexp(1.0, -24) * ref);
      CHECK(same(s[std::size_t(r)], su[std::size_t(r)]));
      CHECK(double(m[std::size_t(r)]) == mx);
    }
    // softmax written out == the unfused written form, bit for bit on the host
    struct xid {};
    const auto Xt = X.with_id<xid>();
    const auto mx = fusor::max_reduce<2>(Xt, {1});
    const auto e = fusor::exp(Xt - mx) / fusor::sum<2>(fusor::exp(Xt - mx), {1});
    std::vector<float> f(x.size()), uf(x.size());
    fusor::run(fusor::host_view(f.data(), 2, n), e, fusor::host());
    fusor::run(fusor::host_view(uf.data(), 2, n), e, fusor::unfused());
    int bad = 0;
    for (std::size_t i = 0; i < f.size(); ++i) bad += !same(f[i], uf[i]);
    CHECK(bad == 0);
  }
}

TEST_CASE("host rows: the device twin policy keeps the device's order, within the same bound", "[host][packs]") {
  const fusor::index_t n = 5000;
  std::vector<float> x(std::size_t(3 * n)), a(3), b(3), y1(x.size()), y2(x.size());
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& e : x) e = u(g);
  const auto X = fusor::host_view(static_cast<const float*>(x.data()), 3, n);
  auto twin = fusor::host();
  twin.row_engine = fusor::host_row_engine::device_twin;
  fusor::run(fusor::host_view(a.data(), 3), fusor::mean<1>(X, {1}, false), fusor::host());
  fusor::run(fusor::host_view(b.data(), 3), fusor::mean<1>(X, {1}, false), twin);
  fusor::run(fusor::host_view(y1.data(), 3, n), fusor::layer_norm(X, nullptr, nullptr), fusor::host());
  fusor::run(fusor::host_view(y2.data(), 3, n), fusor::layer_norm(X, nullptr, nullptr), twin);
  for (int r = 0; r < 3; ++r) CHECK(std::abs(a[std::size_t(r)] - b[std::size_t(r)]) <= 1e-7);
  // layer_norm outputs are O(1): a few ulps of the statistics
  double worst = 0;
  for (std::size_t i = 0; i < y1.size(); ++i) worst = std::max(worst, double(std::abs(y1[i] - y2[i])));
  CHECK(worst <= 1e-5);
}
