// ONNX conformance of ArgMax and ArgMin: every case in tests/data/onnx
// (imported from the onnx package by tools/import_onnx_node_cases.py) on
// host() (fused) and unfused(), int64 indices compared exactly.
//
//  - Inputs are viewed at rank 4 (the ONNX shape left-padded with 1s), the
//    axis shifted accordingly; the result is computed with keepdims at rank
//    4 (the data equals the keepdims = 0 layout) and the ONNX output shape is
//    computed here from the rules and compared with the expected file's.
//  - Each run launches exactly one kernel.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"
#include "support/onnx_views.hpp"

#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;
constexpr int kRank = 4;

fusor::dextents<kRank> padded(const std::vector<i64>& s) { return ft::padded_extents<kRank>(s); }

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", op " << n.op_type << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "axis" && key != "keepdims" && key != "select_last_index") FAIL("attribute " << key << " not handled");
  for (int k = 0; k < c.data_sets; ++k) {
    const auto named = c.named_inputs(k);
    const ft::npy_array& xa = named.at(n.inputs.at(0));
    REQUIRE(xa.dtype == ft::npy_dtype::f32);
    const std::vector<float> xv = xa.as<float>();
    const i64 r = i64(xa.shape.size());
    i64 axis = n.attr_i("axis", 0);
    if (axis < 0) axis += r;
    const bool keep = n.attr_i("keepdims", 1) != 0, last = n.attr_i("select_last_index", 0) != 0;
    std::vector<i64> keep_shape = xa.shape, out_shape;
    keep_shape[std::size_t(axis)] = 1;
    for (i64 d = 0; d < r; ++d)
      if (d != axis || keep) out_shape.push_back(d == axis ? 1 : xa.shape[std::size_t(d)]);
    const ft::npy_array want = c.set_outputs(k).at(0);
    CHECK(out_shape == want.shape);
    const std::vector<i64> w = want.as<i64>();
    const auto x = fusor::host_view(xv.data(), padded(xa.shape));
    const int paxis = int(axis + (kRank - r));
    std::vector<i64> got_h(w.size(), -99), got_u(w.size(), -99);
    if (n.op_type == "ArgMax") {
      const auto m = fusor::argmax(x, paxis, true, last);
      CHECK(fusor::run(fusor::host_view(got_h.data(), padded(keep_shape)), m, fusor::host()).kernels == 1);
      CHECK(fusor::run(fusor::host_view(got_u.data(), padded(keep_shape)), m, fusor::unfused()).kernels == 1);
    } else {
      REQUIRE(n.op_type == "ArgMin");
      const auto m = fusor::argmin(x, paxis, true, last);
      CHECK(fusor::run(fusor::host_view(got_h.data(), padded(keep_shape)), m, fusor::host()).kernels == 1);
      CHECK(fusor::run(fusor::host_view(got_u.data(), padded(keep_shape)), m, fusor::unfused()).kernels == 1);
    }
    CHECK(got_h == w);
    CHECK(got_u == w);
  }
}
}  // namespace

TEST_CASE("ONNX ArgMax and ArgMin on host() and unfused()", "[conformance][onnx][arg_reduce]") {
  std::size_t count = 0;
  for (const char* t : {"ArgMax", "ArgMin"}) {
    const auto names = ft::onnx_cases_of({t});
    CHECK(!names.empty());
    for (const auto& name : names) {
      ++count;
      DYNAMIC_SECTION(name) { run_case(name); }
    }
  }
  CHECK(count == 16 + 16);  // index.json today: every case of these op types
}
