// ONNX conformance of pooling: every MaxPool, AveragePool, GlobalMaxPool and
// GlobalAveragePool case in tests/data/onnx (imported from the onnx package
// by tools/import_onnx_node_cases.py), on host() (fused) and unfused(),
// compared with numpy.isclose(rtol, atol of the case, equal_nan) like the
// other drivers.
//
//  - 2-D cases run as given; 1-D cases ([N, C, L]) run as 2-D over
//    [N, C, 1, L] with a 1 x k window (the same windows, the same values).
//  - MaxPool's optional second output, Indices (the two
//    test_maxpool_with_argmax_2d_precomputed_* cases, storage_order 0 and 1),
//    runs as max_pool2d_indices and is compared exactly.
//  - 3-D pooling is not supported: those cases are not imported
//    (tests/conformance/README.md).
//  - Each run launches exactly one kernel, and the expected shape is compared
//    with the shape fusor infers.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <cmath>
#include <limits>
#include <cstdint>
#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

/// The ONNX node's attributes as pool2d_params for a rank-r input (r = 3: 1-D).
fusor::pool2d_params params_of(const ft::onnx_node& n, std::size_t r) {
  for (const auto& [key, v] : n.attributes.items())
    if (key != "kernel_shape" && key != "strides" && key != "pads" && key != "dilations" && key != "auto_pad" &&
        key != "ceil_mode" && key != "count_include_pad" && key != "storage_order")
      FAIL("attribute " << key << " not handled");
  const std::size_t s = r - 2;  // spatial dims: 1 or 2
  const auto k = n.attr_ints("kernel_shape");
  const auto st = n.attr_ints("strides", std::vector<i64>(s, 1));
  const auto dl = n.attr_ints("dilations", std::vector<i64>(s, 1));
  const auto pd = n.attr_ints("pads", std::vector<i64>(2 * s, 0));
  REQUIRE(k.size() == s);
  fusor::pool2d_params p;
  if (s == 1) {
    p.kernel[0] = 1, p.kernel[1] = k[0];
    p.stride[1] = st[0], p.dilation[1] = dl[0];
    p.padding[1] = pd[0], p.padding[3] = pd[1];
  } else {
    for (int d = 0; d < 2; ++d) {
      p.kernel[d] = k[std::size_t(d)], p.stride[d] = st[std::size_t(d)], p.dilation[d] = dl[std::size_t(d)];
      p.padding[d] = pd[std::size_t(d)], p.padding[d + 2] = pd[std::size_t(d) + 2];
    }
  }
  const std::string ap = n.attr_s("auto_pad", "NOTSET");
  p.auto_pad = ap == "SAME_UPPER"   ? fusor::auto_pad_mode::same_upper
               : ap == "SAME_LOWER" ? fusor::auto_pad_mode::same_lower
               : ap == "VALID"      ? fusor::auto_pad_mode::valid
                                    : fusor::auto_pad_mode::notset;
  p.ceil_mode = n.attr_i("ceil_mode", 0) != 0;
  p.count_include_pad = n.attr_i("count_include_pad", 0) != 0;
  p.storage_order = int(n.attr_i("storage_order", 0));
  return p;
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", op " << n.op_type << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (int k = 0; k < c.data_sets; ++k) {
    const auto named = c.named_inputs(k);
    const ft::npy_array& xa = named.at(n.inputs.at(0));
    if (xa.dtype == ft::npy_dtype::u8) {  // (test_maxpool_2d_uint8: max keeps uint8, compared exactly)
      REQUIRE(n.op_type == "MaxPool");
      REQUIRE(xa.shape.size() == 4);
      const std::vector<std::uint8_t> xv = xa.as<std::uint8_t>();
      const auto x = fusor::host_view(xv.data(), xa.shape[0], xa.shape[1], xa.shape[2], xa.shape[3]);
      const auto e = fusor::max_pool2d(x, params_of(n, 4));
      const auto s = fusor::shape_of(e);
      const std::vector<std::uint8_t> w = c.set_outputs(k).at(0).as<std::uint8_t>();
      REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3]) == w.size());
      std::vector<std::uint8_t> got_h(w.size(), 7), got_u(w.size(), 7);
      CHECK(fusor::run(fusor::host_view(got_h.data(), s[0], s[1], s[2], s[3]), e, fusor::host()).kernels == 1);
      CHECK(fusor::run(fusor::host_view(got_u.data(), s[0], s[1], s[2], s[3]), e, fusor::unfused()).kernels == 1);
      CHECK(got_h == w);
      CHECK(got_u == w);
      continue;
    }
    REQUIRE(xa.dtype == ft::npy_dtype::f32);
    const std::vector<float> xv = xa.as<float>();
    const std::size_t r = xa.shape.size();
    REQUIRE((r == 3 || r == 4));
    // [N, C, L] as [N, C, 1, L]
    const i64 H = r == 4 ? xa.shape[2] : 1, W = xa.shape[r - 1];
    const auto x = fusor::host_view(xv.data(), xa.shape[0], xa.shape[1], H, W);
    const ft::npy_array want = c.set_outputs(k).at(0);
    const std::vector<float> w = want.as<float>();
    std::vector<float> got_h(w.size(), std::numeric_limits<float>::quiet_NaN()), got_u = got_h;

    auto run_both = [&](const auto& e) {
      const auto s = fusor::shape_of(e);
      std::vector<i64> inferred{s[0], s[1]};
      if (r == 4) inferred.push_back(s[2]);
      else CHECK(s[2] == 1);
      inferred.push_back(s[3]);
      CHECK(inferred == want.shape);
      REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3]) == w.size());
      const auto rh = fusor::run(fusor::host_view(got_h.data(), s[0], s[1], s[2], s[3]), e, fusor::host());
      const auto ru = fusor::run(fusor::host_view(got_u.data(), s[0], s[1], s[2], s[3]), e, fusor::unfused());
      CHECK(rh.kernels == 1);
      CHECK(ru.kernels == 1);
    };

    const std::string& op = n.op_type;
    if (op == "MaxPool" && n.outputs.size() == 2) {  // Y and Indices
      REQUIRE(r == 4);
      const auto ie = fusor::max_pool2d_indices(x, params_of(n, r));
      const auto s = fusor::shape_of(ie);
      const std::vector<i64> wi = c.set_outputs(k).at(1).as<i64>();
      REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3]) == wi.size());
      std::vector<i64> gi_h(wi.size(), -7), gi_u(wi.size(), -7);
      CHECK(fusor::run(fusor::host_view(gi_h.data(), s[0], s[1], s[2], s[3]), ie, fusor::host()).kernels == 1);
      CHECK(fusor::run(fusor::host_view(gi_u.data(), s[0], s[1], s[2], s[3]), ie, fusor::unfused()).kernels == 1);
      CHECK(gi_h == wi);
      CHECK(gi_u == wi);
      fusor::pool2d_params pv = params_of(n, r);
      pv.storage_order = 0;  // (the values do not depend on it)
      run_both(fusor::max_pool2d(x, pv));
    } else if (op == "MaxPool") run_both(fusor::max_pool2d(x, params_of(n, r)));
    else if (op == "AveragePool") run_both(fusor::avg_pool2d(x, params_of(n, r)));
    else if (op == "GlobalMaxPool") run_both(fusor::global_max_pool(x));
    else if (op == "GlobalAveragePool") run_both(fusor::global_average_pool(x));
    else FAIL("op " << op << " not mapped");

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
}  // namespace

TEST_CASE("ONNX MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool on host() and unfused()",
          "[conformance][onnx][pooling]") {
  std::size_t count = 0;
  for (const char* t : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}) {
    const auto names = ft::onnx_cases_of({t});
    CHECK(!names.empty());
    for (const auto& name : names) {
      ++count;
      DYNAMIC_SECTION(name) { run_case(name); }
    }
  }
  CHECK(count == 15 + 14 + 2 + 2);  // index.json today: every case of these op types
}
