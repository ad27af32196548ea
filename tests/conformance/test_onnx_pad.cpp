// ONNX conformance of Pad (opset 19+: modes constant, reflect, edge, wrap;
// the optional constant_value and axes inputs): every case in
// tests/data/onnx (imported from the onnx package by
// tools/import_onnx_node_cases.py) on host() (fused) and unfused(),
// compared exactly (pad copies elements or stores the constant converted
// to x's dtype: no arithmetic). float32 and int32 data; the expected shape
// is compared with the shape fusor infers; each run launches one kernel.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

template <class T>
void check_pad(const ft::onnx_case& c, const ft::onnx_node& n) {
  const auto named = c.named_inputs(0);
  const ft::npy_array& xa = named.at(n.inputs.at(0));
  REQUIRE(xa.shape.size() == 4);
  const std::vector<T> xv = xa.as<T>();
  const std::vector<i64> pads = named.at(n.inputs.at(1)).as<i64>();
  double value = 0;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) value = named.at(n.inputs[2]).as<double>().at(0);
  std::vector<i64> axes;
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) axes = named.at(n.inputs[3]).as<i64>();
  const std::string mode = n.attr_s("mode", "constant");
  const fusor::pad_mode m = mode == "reflect" ? fusor::pad_mode::reflect
                            : mode == "edge"  ? fusor::pad_mode::edge
                            : mode == "wrap"  ? fusor::pad_mode::wrap
                                              : fusor::pad_mode::constant;
  REQUIRE((mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap"));
  const auto x = fusor::host_view(xv.data(), xa.shape[0], xa.shape[1], xa.shape[2], xa.shape[3]);
  const auto e = fusor::pad(x, pads, m, value, axes);
  const ft::npy_array want = c.set_outputs(0).at(0);
  const std::vector<T> w = want.as<T>();
  const auto s = fusor::shape_of(e);
  CHECK(std::vector<i64>{s[0], s[1], s[2], s[3]} == want.shape);
  REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3]) == w.size());
  std::vector<T> got_h(w.size(), T(-99)), got_u(w.size(), T(-99));
  CHECK(fusor::run(fusor::host_view(got_h.data(), s[0], s[1], s[2], s[3]), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), s[0], s[1], s[2], s[3]), e, fusor::unfused()).kernels == 1);
  CHECK(got_h == w);
  CHECK(got_u == w);
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "mode") FAIL("attribute " << key << " not handled");
  const auto dt = c.named_inputs(0).at(n.inputs.at(0)).dtype;
  if (dt == ft::npy_dtype::f32) check_pad<float>(c, n);
  else if (dt == ft::npy_dtype::i32) check_pad<std::int32_t>(c, n);
  else FAIL("dtype " << ft::npy_dtype_name(dt) << " not handled");
}
}  // namespace

TEST_CASE("ONNX Pad (constant, reflect, edge, wrap) on host() and unfused()", "[conformance][onnx][pad]") {
  const auto names = ft::onnx_cases_of({"Pad"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 6);  // index.json today: every imported Pad case
}
