// ONNX conformance of CumSum: every case in tests/data/onnx (imported from
// the onnx package by tools/import_onnx_node_cases.py; float64 and int32
// data, the axis as an input tensor) on host() (fused) and unfused(). The
// sums run in order in the data's type, as NumPy's cumsum: compared exactly.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

fusor::dextents<2> padded(const std::vector<i64>& s) {
  REQUIRE(s.size() <= 2);
  cuda::std::array<i64, 2> e{1, 1};
  std::copy(s.begin(), s.end(), e.begin() + (2 - i64(s.size())));
  return fusor::dextents<2>(e);
}

template <class T>
void check_cumsum(const ft::onnx_case& c, const ft::onnx_node& n) {
  const auto named = c.named_inputs(0);
  const ft::npy_array& xa = named.at(n.inputs.at(0));
  const std::vector<T> xv = xa.as<T>();
  const i64 r = i64(xa.shape.size());
  i64 axis = named.at(n.inputs.at(1)).as<i64>().at(0);
  if (axis < 0) axis += r;
  const bool exclusive = n.attr_i("exclusive", 0) != 0, reverse = n.attr_i("reverse", 0) != 0;
  const auto e = fusor::cumsum(fusor::host_view(xv.data(), padded(xa.shape)), int(axis + (2 - r)), exclusive, reverse);
  const ft::npy_array want = c.set_outputs(0).at(0);
  CHECK(want.shape == xa.shape);
  std::vector<T> got_h(xv.size(), T(-99)), got_u(xv.size(), T(-99));
  CHECK(fusor::run(fusor::host_view(got_h.data(), padded(xa.shape)), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), padded(xa.shape)), e, fusor::unfused()).kernels == 1);
  CHECK(got_h == want.as<T>());
  CHECK(got_u == want.as<T>());
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "exclusive" && key != "reverse") FAIL("attribute " << key << " not handled");
  const auto dtype = c.named_inputs(0).at(n.inputs.at(0)).dtype;
  if (dtype == ft::npy_dtype::f64) check_cumsum<double>(c, n);
  else if (dtype == ft::npy_dtype::i32) check_cumsum<std::int32_t>(c, n);
  else FAIL("dtype " << ft::npy_dtype_name(dtype) << " not handled");
}
}  // namespace

TEST_CASE("ONNX CumSum on host() and unfused()", "[conformance][onnx][cumsum]") {
  const auto names = ft::onnx_cases_of({"CumSum"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 9);  // index.json today: every CumSum case
}
