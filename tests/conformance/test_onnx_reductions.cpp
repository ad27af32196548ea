// ONNX conformance of the reduction family: every case of ReduceSum,
// ReduceMean, ReduceMax, ReduceMin, ReduceSumSquare, ReduceL2, ReduceProd,
// ReduceL1, ReduceLogSum, ReduceLogSumExp (the last four imported from the onnx
// package), Softmax, LogSoftmax, LayerNormalization, RMSNormalization,
// InstanceNormalization, GroupNormalization and LpNormalization in tests/data/onnx, on host() (fused)
// and unfused(), compared with numpy.isclose(rtol, atol of the case,
// equal_nan) like the elementwise driver.
//
//  - Inputs are viewed at rank 4 (ONNX shape left-padded with 1s); axes are
//    shifted accordingly. Reductions always run with keepdims at rank 4: the
//    reduced dims have extent 1, so the data equals the keepdims=0 layout and
//    only the expected SHAPE differs; that shape is computed here from the
//    ONNX rules and compared with the expected file's shape.
//    (keepdims = false at a lower static rank is tested in tests/host.)
//  - LayerNormalization: Y by fusor::layer_norm, and the optional outputs
//    Mean and InvStdDev by layer_norm_mean / layer_norm_inv_std_dev.
//  - Each run must launch exactly one kernel (host and unfused alike: the
//    reduction reads the views directly).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"
#include "support/onnx_views.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;
constexpr int kRank = 4;

fusor::dextents<kRank> padded(const std::vector<i64>& s) { return ft::padded_extents<kRank>(s); }

int norm_axis(i64 a, std::size_t r) {
  const i64 n = a < 0 ? a + i64(r) : a;
  if (n < 0 || n >= i64(r)) throw std::runtime_error("axis out of range");
  return int(n);
}

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

const std::vector<std::string> op_types = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare",
                                           "ReduceL2", "Softmax", "LogSoftmax", "LayerNormalization",
                                           "InstanceNormalization", "ReduceProd", "ReduceL1", "ReduceLogSum",
                                           "GroupNormalization", "ReduceLogSumExp", "RMSNormalization", "LpNormalization"};

// Contiguous bools (std::vector<bool> has no data()).
struct bool_buffer {
  std::unique_ptr<bool[]> p;
  std::size_t n = 0;
  bool_buffer() = default;
  bool_buffer(std::size_t count, bool v) { assign(count, v); }
  bool_buffer(const std::vector<bool>& v) : bool_buffer(v.size(), false) {
    for (std::size_t i = 0; i < n; ++i) p[i] = v[i];
  }
  bool_buffer(const bool_buffer& o) : bool_buffer(o.n, false) { std::copy(o.p.get(), o.p.get() + n, p.get()); }
  bool_buffer& operator=(const bool_buffer& o) { return *this = bool_buffer(o); }
  bool_buffer& operator=(bool_buffer&&) = default;
  void assign(std::size_t count, bool v) {
    p = std::make_unique<bool[]>(count > 0 ? count : 1);
    n = count;
    std::fill(p.get(), p.get() + n, v);
  }
  bool* data() { return p.get(); }
  const bool* data() const { return p.get(); }
  std::size_t size() const { return n; }
  bool operator[](std::size_t i) const { return p[i]; }
};
template <class T>
using buffer_t = std::conditional_t<std::is_same_v<T, bool>, bool_buffer, std::vector<T>>;

// Data set k of case c with x (and every output) of dtype T: float; double
// for the float64 Reduce* cases; bool for ReduceMax / ReduceMin on bool
// (logical or / and).
template <class T>
void run_set(const ft::onnx_case& c, int k) {
  const ft::onnx_node& n = c.node();
  {
    const auto named = c.named_inputs(k);
    const ft::npy_array& xa = named.at(n.inputs.at(0));
    const buffer_t<T> xv = xa.as<T>();
    const std::size_t r = xa.shape.size();
    const auto x = fusor::host_view(xv.data(), padded(xa.shape));
    const ft::npy_array want = c.set_outputs(k).at(0);
    std::vector<i64> out_shape = xa.shape;  // the ONNX output shape
    buffer_t<T> got_h(std::size_t(xa.size()), std::numeric_limits<T>::quiet_NaN()), got_u = got_h;

    auto run_both = [&](const auto& e, const std::vector<i64>& pshape, std::size_t host_kernels = 1,
                        std::size_t unfused_kernels = 1) {
      const auto rh = fusor::run(fusor::host_view(got_h.data(), padded(pshape)), e, fusor::host());
      const auto ru = fusor::run(fusor::host_view(got_u.data(), padded(pshape)), e, fusor::unfused());
      CHECK(rh.kernels == host_kernels);
      CHECK(ru.kernels == unfused_kernels);
    };

    const std::string& op = n.op_type;
    if (op.rfind("Reduce", 0) == 0) {
      for (const auto& [key, v] : n.attributes.items())
        if (key != "axes" && key != "keepdims" && key != "noop_with_empty_axes")
          FAIL("attribute " << key << " not handled");
      std::vector<i64> axes = n.attr_ints("axes");
      if (n.inputs.size() > 1 && !n.inputs[1].empty()) axes = named.at(n.inputs[1]).as<i64>();
      const bool keep = n.attr_i("keepdims", 1) != 0, noop = n.attr_i("noop_with_empty_axes", 0) != 0;
      std::vector<bool> red(r, false);
      if (axes.empty()) red.assign(r, !noop);
      for (i64 a : axes) red[std::size_t(norm_axis(a, r))] = true;
      fusor::axis_list padded_axes;
      std::vector<i64> keep_shape = xa.shape;
      out_shape.clear();
      for (std::size_t d = 0; d < r; ++d) {
        if (red[d]) padded_axes.push(int(d + (kRank - r)));
        if (red[d]) keep_shape[d] = 1;
        if (!red[d] || keep) out_shape.push_back(red[d] ? 1 : xa.shape[d]);
      }
      const bool none = padded_axes.count == 0;  // noop: reduce nothing
      if (none) padded_axes.push(0), keep_shape = xa.shape;  // padded dim 0 has extent 1 (r < 4) or is checked below
      if (none && r == std::size_t(kRank)) FAIL("noop on a rank-4 input is not handled by this test");
      got_h.assign(std::size_t(want.size()), std::numeric_limits<T>::quiet_NaN());
      got_u = got_h;
      if constexpr (std::is_same_v<T, bool>) {
        if (op == "ReduceMax") run_both(fusor::max_reduce(x, padded_axes), keep_shape);
        else if (op == "ReduceMin") run_both(fusor::min_reduce(x, padded_axes), keep_shape);
        else FAIL("op not mapped on bool");
      } else if (op == "ReduceSum") run_both(fusor::sum(x, padded_axes), keep_shape);
      else if (op == "ReduceMean") run_both(fusor::mean(x, padded_axes), keep_shape);
      else if (op == "ReduceMax") run_both(fusor::max_reduce(x, padded_axes), keep_shape);
      else if (op == "ReduceMin") run_both(fusor::min_reduce(x, padded_axes), keep_shape);
      else if (op == "ReduceSumSquare") run_both(fusor::sum_square(x, padded_axes), keep_shape);
      else if (op == "ReduceL2") run_both(fusor::l2_norm(x, padded_axes), keep_shape);
      else if (op == "ReduceProd") run_both(fusor::prod(x, padded_axes), keep_shape);
      else if (op == "ReduceL1") run_both(fusor::l1_norm(x, padded_axes), keep_shape);
      else if (op == "ReduceLogSum") run_both(fusor::log_sum(x, padded_axes), keep_shape);
      else if (op == "ReduceLogSumExp") run_both(fusor::logsumexp(x, padded_axes), keep_shape);
      else FAIL("op not mapped");
    } else if constexpr (!std::is_same_v<T, float>) {
      FAIL("op " << op << " on this dtype not handled by this test");
    } else if (op == "Softmax" || op == "LogSoftmax") {
      for (const auto& [key, v] : n.attributes.items())
        if (key != "axis") FAIL("attribute " << key << " not handled");
      REQUIRE(c.opset >= 13);  // older opsets flatten to 2-D (different semantics)
      const int axis = norm_axis(n.attr_i("axis", -1), r) + int(kRank - r);
      if (op == "Softmax") run_both(fusor::softmax(x, axis), xa.shape);
      else run_both(fusor::log_softmax(x, axis), xa.shape);
    } else if (op == "LpNormalization") {
      for (const auto& [key, v] : n.attributes.items())
        if (key != "axis" && key != "p") FAIL("attribute " << key << " not handled");
      const int axis = norm_axis(n.attr_i("axis", -1), r) + int(kRank - r);
      // the norm, then where(norm == 0, 0, x / norm) (the norm shared by
      // value: 2 kernels; unfused: the norm twice, ==, /, where)
      if (n.attr_i("p", 2) == 1) run_both(fusor::lp_normalization<1>(x, axis), xa.shape, 2, 5);
      else if (n.attr_i("p", 2) == 2) run_both(fusor::lp_normalization<2>(x, axis), xa.shape, 2, 5);
      else FAIL("p other than 1 or 2");
    } else if (op == "LayerNormalization") {
      for (const auto& [key, v] : n.attributes.items())
        if (key != "axis" && key != "epsilon") FAIL("attribute " << key << " not handled");
      const int axis = norm_axis(n.attr_i("axis", -1), r) + int(kRank - r);
      const float eps = n.attr_f("epsilon", 1e-5f);
      const ft::npy_array& ga = named.at(n.inputs.at(1));
      const std::vector<float> gv = ga.as<float>();
      const auto g = fusor::host_view(gv.data(), padded(ga.shape));
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        const ft::npy_array& ba = named.at(n.inputs[2]);
        const std::vector<float> bv = ba.as<float>();
        run_both(fusor::layer_norm(x, g, fusor::host_view(bv.data(), padded(ba.shape)), axis, eps), xa.shape);
      } else {
        run_both(fusor::layer_norm(x, g, nullptr, axis, eps), xa.shape);
      }
      // the optional outputs Mean and InvStdDev (keepdims shape), with the case's tolerances
      const auto outs = c.set_outputs(k);
      for (std::size_t o = 1; o < n.outputs.size() && o < 3; ++o) {
        if (n.outputs[o].empty()) continue;
        const ft::npy_array& ws = outs.at(o);
        const std::vector<float> wv = ws.as<float>();
        std::vector<float> sh(wv.size(), -99.0f), su(wv.size(), -99.0f);
        auto stat_shape = padded(ws.shape);
        cuda::std::array<i64, kRank> se{};
        for (int d = 0; d < kRank; ++d) se[std::size_t(d)] = stat_shape.extent(std::size_t(d));
        const auto view = [&](std::vector<float>& v) { return fusor::host_view(v.data(), fusor::dextents<kRank>(se)); };
        if (o == 1) {
          CHECK(fusor::run(view(sh), fusor::layer_norm_mean(x, axis), fusor::host()).kernels == 1);
          CHECK(fusor::run(view(su), fusor::layer_norm_mean(x, axis), fusor::unfused()).kernels == 1);
        } else {
          CHECK(fusor::run(view(sh), fusor::layer_norm_inv_std_dev(x, axis, eps), fusor::host()).kernels == 1);
          CHECK(fusor::run(view(su), fusor::layer_norm_inv_std_dev(x, axis, eps), fusor::unfused()).kernels == 1);
        }
        std::size_t bad = 0;
        for (std::size_t i = 0; i < wv.size(); ++i) bad += (close(sh[i], wv[i], c.rtol, c.atol) && close(su[i], wv[i], c.rtol, c.atol)) ? 0 : 1;
        CAPTURE(o);
        CHECK(bad == 0);
      }
    } else if (op == "RMSNormalization") {  // opset 23: scale broadcast over the normalized dims
      for (const auto& [key, v] : n.attributes.items())
        if (key != "axis" && key != "epsilon" && key != "stash_type") FAIL("attribute " << key << " not handled");
      REQUIRE(n.attr_i("stash_type", 1) == 1);  // fp32 statistics, as fusor computes them
      const int axis = norm_axis(n.attr_i("axis", -1), r) + int(kRank - r);
      const float eps = n.attr_f("epsilon", 1e-5f);
      const ft::npy_array& ga = named.at(n.inputs.at(1));
      const std::vector<float> gv = ga.as<float>();
      run_both(fusor::rms_norm(x, fusor::host_view(gv.data(), padded(ga.shape)), eps, axis), xa.shape);
    } else if (op == "InstanceNormalization") {
      for (const auto& [key, v] : n.attributes.items())
        if (key != "epsilon") FAIL("attribute " << key << " not handled");
      REQUIRE(r == std::size_t(kRank));  // [N, C, H, W]: no padding to rank 4
      const float eps = n.attr_f("epsilon", 1e-5f);
      const std::vector<float> sv = named.at(n.inputs.at(1)).as<float>();
      const std::vector<float> bv = named.at(n.inputs.at(2)).as<float>();
      const auto sc = fusor::host_view(sv.data(), std::int64_t(sv.size()));
      const auto bi = fusor::host_view(bv.data(), std::int64_t(bv.size()));
      run_both(fusor::instance_norm(x, sc, bi, eps), xa.shape);
    } else if (op == "GroupNormalization") {  // opset 21: scale and bias per channel [C]
      for (const auto& [key, v] : n.attributes.items())
        if (key != "epsilon" && key != "num_groups") FAIL("attribute " << key << " not handled");
      REQUIRE(r == std::size_t(kRank));
      const float eps = n.attr_f("epsilon", 1e-5f);
      const std::vector<float> sv = named.at(n.inputs.at(1)).as<float>();
      const std::vector<float> bv = named.at(n.inputs.at(2)).as<float>();
      const auto sc = fusor::host_view(sv.data(), std::int64_t(sv.size()));
      const auto bi = fusor::host_view(bv.data(), std::int64_t(bv.size()));
      run_both(fusor::group_norm(x, n.attr_i("num_groups", 1), sc, bi, eps), xa.shape);
    } else {
      FAIL("op " << op << " not mapped");
    }

    CHECK(out_shape == want.shape);
    const std::vector<T> w = want.as<T>();
    REQUIRE(w.size() == got_h.size());
    std::size_t bad_h = 0, bad_u = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      bad_h += close(got_h[i], w[i], c.rtol, c.atol) ? 0 : 1;
      bad_u += close(got_u[i], w[i], c.rtol, c.atol) ? 0 : 1;
      if (!close(got_h[i], w[i], c.rtol, c.atol) && bad_h <= 3) UNSCOPED_INFO("at " << i << ": got " << got_h[i] << ", want " << w[i]);
    }
    CHECK(bad_h == 0);
    CHECK(bad_u == 0);
  }
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", op " << n.op_type << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (int k = 0; k < c.data_sets; ++k) {
    const ft::npy_dtype dt = c.named_inputs(k).at(n.inputs.at(0)).dtype;
    if (dt == ft::npy_dtype::f32) run_set<float>(c, k);
    else if (dt == ft::npy_dtype::f64) run_set<double>(c, k);
    else if (dt == ft::npy_dtype::b1) run_set<bool>(c, k);
    else FAIL("input dtype not handled by this test");
  }
}
}  // namespace

TEST_CASE("ONNX reduction, softmax and layer norm conformance on host() and unfused()", "[conformance][onnx][reduction]") {
  std::size_t count = 0;
  for (const auto& t : op_types) {
    const auto names = ft::onnx_cases_of({t});
    CHECK(!names.empty());
    for (const auto& name : names) {
      ++count;
      DYNAMIC_SECTION(name) { run_case(name); }
    }
  }
  CHECK(count == 12 + 8 + 11 + 10 + 9 + 9 + 7 + 7 + 19 + 2 + 9 + 9 + 5 + 2 + 9 + 19 + 6);  // index.json: every case of these op types
}
