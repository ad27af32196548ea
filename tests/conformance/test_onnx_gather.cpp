// ONNX conformance of Gather: every case in tests/data/onnx (imported from
// the onnx package by tools/import_onnx_node_cases.py) on host() (fused)
// and unfused(), values compared exactly (a gather copies them).
//
//  - data is viewed at rank 4 and indices at rank 2 (shapes left-padded with
//    1s, the axis shifted): the result, rank 5, has the ONNX output's data
//    layout; its ONNX shape is computed here from the rules and compared
//    with the expected file's, and the element counts must agree.
//  - Each run launches exactly one kernel.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

template <int R>
fusor::dextents<R> padded(const std::vector<i64>& s) {
  REQUIRE(s.size() <= std::size_t(R));
  cuda::std::array<i64, R> e{};
  e.fill(1);
  std::copy(s.begin(), s.end(), e.begin() + (R - i64(s.size())));
  return fusor::dextents<R>(e);
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "axis") FAIL("attribute " << key << " not handled");
  const auto named = c.named_inputs(0);
  const ft::npy_array& da = named.at(n.inputs.at(0));
  const ft::npy_array& ia = named.at(n.inputs.at(1));
  REQUIRE(da.dtype == ft::npy_dtype::f32);
  REQUIRE(ia.dtype == ft::npy_dtype::i64);
  const std::vector<float> dv = da.as<float>();
  const std::vector<i64> iv = ia.as<i64>();
  const i64 r = i64(da.shape.size());
  i64 axis = n.attr_i("axis", 0);
  if (axis < 0) axis += r;
  std::vector<i64> onnx_shape(da.shape.begin(), da.shape.begin() + axis);
  onnx_shape.insert(onnx_shape.end(), ia.shape.begin(), ia.shape.end());
  onnx_shape.insert(onnx_shape.end(), da.shape.begin() + axis + 1, da.shape.end());
  const ft::npy_array want = c.set_outputs(0).at(0);
  CHECK(onnx_shape == want.shape);
  const std::vector<float> w = want.as<float>();
  const auto e = fusor::gather(fusor::host_view(dv.data(), padded<4>(da.shape)), fusor::host_view(iv.data(), padded<2>(ia.shape)),
                               int(axis + (4 - r)));
  const auto s = fusor::shape_of(e);
  REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3] * s[4]) == w.size());
  std::vector<float> got_h(w.size(), -99.0f), got_u(w.size(), -99.0f);
  const auto out = [&](std::vector<float>& v) { return fusor::host_view(v.data(), s[0], s[1], s[2], s[3], s[4]); };
  CHECK(fusor::run(out(got_h), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(out(got_u), e, fusor::unfused()).kernels == 1);
  CHECK(got_h == w);
  CHECK(got_u == w);
}

// GatherElements: data and indices of one rank (2 in every case), the
// output has the indices' shape.
void run_elements_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "axis") FAIL("attribute " << key << " not handled");
  const auto named = c.named_inputs(0);
  const ft::npy_array& da = named.at(n.inputs.at(0));
  const ft::npy_array& ia = named.at(n.inputs.at(1));
  REQUIRE((da.dtype == ft::npy_dtype::f32 && ia.dtype == ft::npy_dtype::i64));
  REQUIRE((da.shape.size() == 2 && ia.shape.size() == 2));
  const std::vector<float> dv = da.as<float>();
  const std::vector<i64> iv = ia.as<i64>();
  const auto e = fusor::gather_elements(fusor::host_view(dv.data(), da.shape[0], da.shape[1]),
                                        fusor::host_view(iv.data(), ia.shape[0], ia.shape[1]), int(n.attr_i("axis", 0)));
  const ft::npy_array want = c.set_outputs(0).at(0);
  const std::vector<float> w = want.as<float>();
  const auto s = fusor::shape_of(e);
  CHECK(std::vector<i64>{s[0], s[1]} == want.shape);
  std::vector<float> got_h(w.size(), -99.0f), got_u(w.size(), -99.0f);
  CHECK(fusor::run(fusor::host_view(got_h.data(), s[0], s[1]), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), s[0], s[1]), e, fusor::unfused()).kernels == 1);
  CHECK(got_h == w);
  CHECK(got_u == w);
}
}  // namespace

TEST_CASE("ONNX GatherElements on host() and unfused()", "[conformance][onnx][gather]") {
  const auto names = ft::onnx_cases_of({"GatherElements"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_elements_case(name); }
  CHECK(names.size() == 3);  // index.json today: every GatherElements case
}

TEST_CASE("ONNX Gather on host() and unfused()", "[conformance][onnx][gather]") {
  const auto names = ft::onnx_cases_of({"Gather"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 4);  // index.json today: every Gather case
}
