// ONNX conformance of OneHot: every case in tests/data/onnx (imported from
// the onnx package by tools/import_onnx_node_cases.py; the bfloat16-values
// case is not imported: the .npy reader has no bfloat16) on host() (fused)
// and unfused(), compared exactly. depth and values (off, on) are input
// tensors; the indices are int64 or float32 (truncated, as ONNX says).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

template <class T, class I>
void check_one_hot(const ft::onnx_case& c, const ft::onnx_node& n) {
  const auto named = c.named_inputs(0);
  const ft::npy_array& ia = named.at(n.inputs.at(0));
  REQUIRE(ia.shape.size() <= 2);
  const std::vector<I> iv = ia.as<I>();
  const double depth = named.at(n.inputs.at(1)).as<double>().at(0);
  const std::vector<double> values = named.at(n.inputs.at(2)).as<double>();
  const i64 axis = n.attr_i("axis", -1);
  // indices viewed at rank 2 ([1, L] for a 1-D input): the axis of the rank-3 result shifts by one then
  cuda::std::array<i64, 2> e{1, 1};
  std::copy(ia.shape.begin(), ia.shape.end(), e.begin() + (2 - i64(ia.shape.size())));
  const int ax = int(axis < 0 ? axis : axis + (2 - i64(ia.shape.size())));
  const auto ind = fusor::host_view(iv.data(), fusor::dextents<2>(e));
  const auto oh = fusor::one_hot<T>(ind, i64(depth), ax, values.at(0), values.at(1));
  const ft::npy_array want = c.set_outputs(0).at(0);
  const std::vector<T> w = want.as<T>();
  const auto s = fusor::shape_of(oh);
  REQUIRE(std::size_t(s[0] * s[1] * s[2]) == w.size());
  std::vector<T> got_h(w.size(), T(-99)), got_u(w.size(), T(-99));
  CHECK(fusor::run(fusor::host_view(got_h.data(), s[0], s[1], s[2]), oh, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), s[0], s[1], s[2]), oh, fusor::unfused()).kernels == 1);
  CHECK(got_h == w);
  CHECK(got_u == w);
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "axis") FAIL("attribute " << key << " not handled");
  const auto named = c.named_inputs(0);
  const auto idt = named.at(n.inputs.at(0)).dtype, vdt = named.at(n.inputs.at(2)).dtype;
  if (vdt == ft::npy_dtype::f32 && idt == ft::npy_dtype::i64) check_one_hot<float, i64>(c, n);
  else if (vdt == ft::npy_dtype::f32 && idt == ft::npy_dtype::f32) check_one_hot<float, float>(c, n);
  else if (vdt == ft::npy_dtype::i32 && idt == ft::npy_dtype::i64) check_one_hot<std::int32_t, i64>(c, n);
  else FAIL("dtypes " << ft::npy_dtype_name(idt) << ", " << ft::npy_dtype_name(vdt) << " not handled");
}
}  // namespace

TEST_CASE("ONNX OneHot on host() and unfused()", "[conformance][onnx][one_hot]") {
  const auto names = ft::onnx_cases_of({"OneHot"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 5);  // index.json today: every imported OneHot case
}
