// ONNX conformance of TopK (opset 11): every imported case in
// tests/data/onnx (from the onnx package by tools/import_onnx_node_cases.py)
// on host() (fused) and
// unfused(): both outputs, Values and Indices, compared exactly (topk
// copies elements; the order is ONNX's, ties by the lower index). float32,
// int64 and uint64 data of rank 1 or 2; k is the case's input tensor. Values and
// indices run as siblings: two kernels.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

template <class T>
void check_topk(const ft::onnx_case& c, const ft::onnx_node& n) {
  const auto named = c.named_inputs(0);
  const ft::npy_array& xa = named.at(n.inputs.at(0));
  const i64 k = named.at(n.inputs.at(1)).as<i64>().at(0);
  const std::vector<T> xv = xa.as<T>();
  const int axis = int(n.attr_i("axis", -1));
  const bool largest = n.attr_i("largest", 1) != 0;
  REQUIRE(n.attr_i("sorted", 1) == 1);
  // rank 1 viewed as [1, L] (the axis shifts by one)
  const bool one = xa.shape.size() == 1;
  REQUIRE((one || xa.shape.size() == 2));
  const i64 rows = one ? 1 : xa.shape[0], cols = one ? xa.shape[0] : xa.shape[1];
  const int ax = one ? (axis < 0 ? axis : axis + 1) : axis;
  const auto x = fusor::host_view(xv.data(), rows, cols);
  const auto outs = c.set_outputs(0);
  const std::vector<T> wv = outs.at(0).template as<T>();
  const std::vector<i64> wi = outs.at(1).template as<i64>();
  const auto s = fusor::shape_of(fusor::topk(x, k, ax, largest));
  REQUIRE(std::size_t(s[0] * s[1]) == wv.size());
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    std::vector<T> gv(wv.size(), T(-99));
    std::vector<i64> gi(wi.size(), -99);
    const auto outv = fusor::outputs(fusor::host_view(gv.data(), s[0], s[1]), fusor::host_view(gi.data(), s[0], s[1]));
    const auto e = fusor::siblings(fusor::topk(x, k, ax, largest), fusor::topk_indices(x, k, ax, largest));
    const auto r = fused ? fusor::run(outv, e, fusor::host()) : fusor::run(outv, e, fusor::unfused());
    CHECK(r.kernels == 2);
    CHECK(gv == wv);
    CHECK(gi == wi);
  }
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "axis" && key != "largest" && key != "sorted") FAIL("attribute " << key << " not handled");
  const auto dt = c.named_inputs(0).at(n.inputs.at(0)).dtype;
  if (dt == ft::npy_dtype::f32) check_topk<float>(c, n);
  else if (dt == ft::npy_dtype::i64) check_topk<i64>(c, n);
  else if (dt == ft::npy_dtype::u64) check_topk<std::uint64_t>(c, n);
  else FAIL("dtype " << ft::npy_dtype_name(dt) << " not handled");
}
}  // namespace

TEST_CASE("ONNX TopK (values and indices) on host() and unfused()", "[conformance][onnx][topk]") {
  const auto names = ft::onnx_cases_of({"TopK"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 7);  // index.json today: every imported TopK case
}
