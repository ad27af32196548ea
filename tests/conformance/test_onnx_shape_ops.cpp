// ONNX conformance of the shape ops (issue 21, item 1): every Transpose,
// Slice, Squeeze, Unsqueeze, Expand, Reshape and Flatten case in
// tests/data/onnx (imported from the onnx package by
// tools/import_onnx_node_cases.py), compared exactly (a shape op moves
// elements, no arithmetic), with the expected shape compared with the
// shape fusor gives.
//
// Each case runs three ways: the op on the input view, materialized by
// run() (one copy kernel) on host(); the op on an expression, x * 1
// (pushed down to the view: an index map inside the consumer's kernel, one
// kernel, and x * 1 keeps -0 and NaN bits) on host() and on unfused().
//
// ONNX's list inputs map to fusor's one-axis calls: Slice's starts / ends
// / axes / steps are one slice per axis; Unsqueeze's axes (positions in the
// output) are inserted in ascending order, Squeeze's removed in descending
// order. Reshape: fusor's shape is literal (0 is an extent of 0, as NumPy
// and ONNX's allowzero = 1); for allowzero = 0 this harness copies x's
// extent into a 0 entry first, as ONNX's reference does. -1 goes to fusor.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

// Calls f(std::integral_constant<int, R>) for R == r, one of Ranks (the
// inputs of these cases have rank 2 to 4, the results 1 to 6).
template <int... Ranks, class F>
void with_rank(std::size_t r, F&& f) {
  const bool found = ((r == std::size_t(Ranks) ? (f(std::integral_constant<int, Ranks>{}), true) : false) || ...);
  if (!found) FAIL("rank " << r << " not handled by this test");
}

template <int R>
fusor::shape<R> to_shape(const std::vector<i64>& v) {
  REQUIRE(v.size() == std::size_t(R));
  fusor::shape<R> s{};
  for (int d = 0; d < R; ++d) s[std::size_t(d)] = v[std::size_t(d)];
  return s;
}

template <int R>
std::vector<i64> to_vector(const fusor::shape<R>& s) {
  return std::vector<i64>(s.begin(), s.end());
}

// `op(v)` on the view x and on the expression x * 1; the results compared
// with the case's expected output.
template <int RIn, class Op>
void check(const std::vector<float>& xv, const std::vector<i64>& xshape, const ft::npy_array& want, const Op& op) {
  const auto x = fusor::host_view(xv.data(), fusor::dextents<RIn>(to_shape<RIn>(xshape)));
  const auto on_view = op(x);
  const auto on_expr = op(x * 1.0f);
  using V = decltype(on_view);
  constexpr int ROut = int(V::extents_type::rank());
  const fusor::shape<ROut> s = fusor::shape_of(on_view);
  CHECK(to_vector<ROut>(s) == want.shape);
  CHECK(to_vector<ROut>(fusor::shape_of(on_expr)) == want.shape);
  const std::vector<float> w = want.as<float>();
  i64 count = 1;
  for (const i64 e : s) count *= e;
  REQUIRE(w.size() == std::size_t(count));
  std::vector<float> got_v(w.size(), -99.0f), got_h = got_v, got_u = got_v;
  const auto out = [&](std::vector<float>& b) { return fusor::host_view(b.data(), fusor::dextents<ROut>(s)); };
  fusor::run(out(got_v), on_view, fusor::host());
  CHECK(fusor::run(out(got_h), on_expr, fusor::host()).kernels == 1);
  CHECK(fusor::run(out(got_u), on_expr, fusor::unfused()).kernels == 1);
  const auto same = [&](const std::vector<float>& g) {
    return std::equal(g.begin(), g.end(), w.begin(), [](float a, float b) {
      return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
    });
  };
  CHECK(same(got_v));
  CHECK(same(got_h));
  CHECK(same(got_u));
}

// Unsqueeze by axes a[i], a[i + 1], ... (ascending, normalized to the output rank).
template <std::size_t K, class E>
auto unsqueeze_sorted(const E& e, const std::vector<i64>& a, std::size_t i = 0) {
  if constexpr (K == 0) return e;
  else return unsqueeze_sorted<K - 1>(fusor::unsqueeze(e, int(a[i])), a, i + 1);
}

// Squeeze by axes a[i], a[i + 1], ... (descending).
template <std::size_t K, class E>
auto squeeze_sorted(const E& e, const std::vector<i64>& a, std::size_t i = 0) {
  if constexpr (K == 0) return e;
  else return squeeze_sorted<K - 1>(fusor::squeeze(e, int(a[i])), a, i + 1);
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", op " << n.op_type << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  const auto named = c.named_inputs(0);
  const ft::npy_array& xa = named.at(n.inputs.at(0));
  REQUIRE(xa.dtype == ft::npy_dtype::f32);
  const std::vector<float> xv = xa.as<float>();
  const std::size_t r = xa.shape.size();
  const ft::npy_array want = c.set_outputs(0).at(0);
  const auto input = [&](std::size_t i) {
    return n.inputs.size() > i && !n.inputs[i].empty() ? named.at(n.inputs[i]).as<i64>() : std::vector<i64>{};
  };
  const std::string& op = n.op_type;
  with_rank<2, 3, 4>(r, [&](auto rin) {
    constexpr int RIn = decltype(rin)::value;
    if (op == "Transpose") {
      std::vector<i64> perm = n.attr_ints("perm");
      if (perm.empty())
        for (int d = RIn - 1; d >= 0; --d) perm.push_back(d);  // default: reversed
      REQUIRE(perm.size() == std::size_t(RIn));
      check<RIn>(xv, xa.shape, want, [&](const auto& e) {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
          return fusor::permute(e, {int(perm[I])...});
        }(std::make_index_sequence<std::size_t(RIn)>{});
      });
    } else if (op == "Slice") {
      const std::vector<i64> starts = input(1), ends = input(2);
      std::vector<i64> axes = input(3), steps = input(4);
      if (axes.empty())
        for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(i64(i));
      if (steps.empty()) steps.assign(starts.size(), 1);
      check<RIn>(xv, xa.shape, want, [&](const auto& e) {
        // one slice per axis; the first turns any view into a strided one,
        // whose slices keep its type
        auto s = fusor::slice(e, int(axes[0]), starts[0], ends[0], steps[0]);
        for (std::size_t i = 1; i < starts.size(); ++i) s = fusor::slice(s, int(axes[i]), starts[i], ends[i], steps[i]);
        return s;
      });
    } else if (op == "Unsqueeze") {
      std::vector<i64> axes = input(1);
      const i64 out_rank = i64(RIn) + i64(axes.size());
      for (auto& a : axes) a = a < 0 ? a + out_rank : a;
      std::sort(axes.begin(), axes.end());
      const auto go = [&](auto k) {
        check<RIn>(xv, xa.shape, want, [&](const auto& e) { return unsqueeze_sorted<decltype(k)::value>(e, axes); });
      };
      if (axes.size() == 1) go(std::integral_constant<std::size_t, 1>{});
      else if (axes.size() == 2) go(std::integral_constant<std::size_t, 2>{});
      else if (axes.size() == 3) go(std::integral_constant<std::size_t, 3>{});
      else FAIL("axes count not handled by this test");
    } else if (op == "Squeeze") {
      std::vector<i64> axes = input(1);
      for (auto& a : axes) a = a < 0 ? a + i64(RIn) : a;
      std::sort(axes.rbegin(), axes.rend());
      if constexpr (RIn >= 2) {
        REQUIRE(axes.size() == 1);
        check<RIn>(xv, xa.shape, want, [&](const auto& e) { return squeeze_sorted<1>(e, axes); });
      } else {
        FAIL("rank 1 not handled by this test");
      }
    } else if (op == "Expand") {
      const std::vector<i64> to = input(1);
      with_rank<1, 2, 3, 4, 5, 6>(to.size(), [&](auto rt) {
        constexpr int RT = decltype(rt)::value;
        if constexpr (RT >= RIn) {
          check<RIn>(xv, xa.shape, want, [&](const auto& e) { return fusor::expand(e, to_shape<RT>(to)); });
        } else {
          FAIL("a shape of lower rank than x is not handled by this test");
        }
      });
    } else if (op == "Reshape") {
      std::vector<i64> to = input(1);
      if (n.attr_i("allowzero", 0) == 0)
        for (std::size_t d = 0; d < to.size(); ++d)
          if (to[d] == 0) to[d] = xa.shape.at(d);  // ONNX: 0 copies x's extent
      with_rank<1, 2, 3, 4, 5, 6>(to.size(), [&](auto rt) {
        constexpr int RT = decltype(rt)::value;
        check<RIn>(xv, xa.shape, want, [&](const auto& e) { return fusor::reshape(e, to_shape<RT>(to)); });
      });
    } else if (op == "Flatten") {
      check<RIn>(xv, xa.shape, want, [&](const auto& e) { return fusor::flatten(e, int(n.attr_i("axis", 1))); });
    } else {
      FAIL("op " << op << " not mapped");
    }
  });
}
}  // namespace

TEST_CASE("ONNX shape-op conformance: views, and expressions in one kernel", "[conformance][onnx][shape_ops]") {
  std::size_t count = 0;
  for (const auto& t : {"Transpose", "Slice", "Squeeze", "Unsqueeze", "Expand", "Reshape", "Flatten"}) {
    const auto names = ft::onnx_cases_of({t});
    CHECK(!names.empty());
    for (const auto& name : names) {
      ++count;
      DYNAMIC_SECTION(name) { run_case(name); }
    }
  }
  CHECK(count == 7 + 8 + 2 + 7 + 2 + 10 + 9);  // index.json: every case of these op types
}
