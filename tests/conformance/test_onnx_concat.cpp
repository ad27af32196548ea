// ONNX conformance of Concat (opset 13): every case in tests/data/onnx
// (imported from the onnx package by tools/import_onnx_node_cases.py: two
// float32 inputs of rank 1 to 3, every axis, negative axes) on host()
// (fused) and unfused(), compared exactly (concat copies elements: no
// arithmetic). The expected shape is compared with the shape fusor infers;
// each run launches one kernel.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

template <int R>
auto view_of(const float* p, const std::vector<i64>& shape) {
  cuda::std::array<i64, R> e{};
  std::copy(shape.begin(), shape.end(), e.begin());
  return fusor::host_view(p, fusor::dextents<R>(e));
}

template <int R>
void check_concat(const ft::onnx_case& c, const ft::onnx_node& n) {
  const auto named = c.named_inputs(0);
  REQUIRE(n.inputs.size() == 2);
  const ft::npy_array& aa = named.at(n.inputs[0]);
  const ft::npy_array& ba = named.at(n.inputs[1]);
  REQUIRE((aa.dtype == ft::npy_dtype::f32 && ba.dtype == ft::npy_dtype::f32));
  const std::vector<float> av = aa.as<float>(), bv = ba.as<float>();
  const auto e = fusor::concat(int(n.attr_i("axis", 0)), view_of<R>(av.data(), aa.shape), view_of<R>(bv.data(), ba.shape));
  const ft::npy_array want = c.set_outputs(0).at(0);
  const std::vector<float> w = want.as<float>();
  const auto s = fusor::shape_of(e);
  CHECK(std::vector<i64>(s.begin(), s.end()) == want.shape);
  std::vector<float> got_h(w.size(), -99.0f), got_u(w.size(), -99.0f);
  CHECK(fusor::run(fusor::host_view(got_h.data(), fusor::dextents<R>(s)), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), fusor::dextents<R>(s)), e, fusor::unfused()).kernels == 1);
  CHECK(got_h == w);
  CHECK(got_u == w);
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "axis") FAIL("attribute " << key << " not handled");
  const std::size_t rank = c.named_inputs(0).at(n.inputs.at(0)).shape.size();
  if (rank == 1) check_concat<1>(c, n);
  else if (rank == 2) check_concat<2>(c, n);
  else if (rank == 3) check_concat<3>(c, n);
  else FAIL("rank " << rank << " not handled");
}
}  // namespace

TEST_CASE("ONNX Concat on host() and unfused()", "[conformance][onnx][concat]") {
  const auto names = ft::onnx_cases_of({"Concat"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 12);  // index.json today: every imported Concat case
}
