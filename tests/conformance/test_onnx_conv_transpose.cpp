// ONNX conformance of ConvTranspose: every imported case in tests/data/onnx
// (from the onnx package by tools/import_onnx_node_cases.py: the 2-D cases
// with strides, pads, output_padding, output_shape, dilations, groups and
// auto_pad SAME_UPPER, and the 1-D case run as 2-D over [N, C, 1, L]; the
// 3-D case is not imported: tests/conformance/README.md) on host() (fused)
// and unfused(), compared with numpy.isclose(rtol, atol of the case) like
// the other drivers. The expected shape is compared with the shape fusor
// infers; each run launches one kernel.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  for (const auto& [key, v] : n.attributes.items())
    if (key != "strides" && key != "pads" && key != "output_padding" && key != "output_shape" && key != "dilations" &&
        key != "group" && key != "auto_pad" && key != "kernel_shape")
      FAIL("attribute " << key << " not handled");
  const auto named = c.named_inputs(0);
  const ft::npy_array& xa = named.at(n.inputs.at(0));
  const ft::npy_array& wa = named.at(n.inputs.at(1));
  REQUIRE((xa.dtype == ft::npy_dtype::f32 && wa.dtype == ft::npy_dtype::f32));
  const bool one_d = xa.shape.size() == 3;
  REQUIRE((xa.shape.size() == 4 || one_d));
  // 1-D: [N, C, L] as [N, C, 1, L]; each attribute's single spatial value goes to W
  const auto spatial = [&](const char* key, i64 fill) {
    std::vector<i64> v = n.attr_ints(key, {});
    if (v.empty()) return v;
    if (!one_d) return v;
    if (v.size() == 1) return std::vector<i64>{fill, v[0]};
    return std::vector<i64>{fill, v[0], fill, v[1]};  // pads: begin, end
  };
  const auto xs = one_d ? std::vector<i64>{xa.shape[0], xa.shape[1], 1, xa.shape[2]} : xa.shape;
  const auto wsh = one_d ? std::vector<i64>{wa.shape[0], wa.shape[1], 1, wa.shape[2]} : wa.shape;
  fusor::conv_transpose2d_params p;
  if (auto v = spatial("strides", 1); !v.empty()) p.stride[0] = v[0], p.stride[1] = v[1];
  if (auto v = spatial("dilations", 1); !v.empty()) p.dilation[0] = v[0], p.dilation[1] = v[1];
  if (auto v = spatial("output_padding", 0); !v.empty()) p.output_padding[0] = v[0], p.output_padding[1] = v[1];
  if (auto v = spatial("output_shape", 1); !v.empty()) p.output_size[0] = v[0], p.output_size[1] = v[1];
  if (auto v = spatial("pads", 0); !v.empty()) {
    REQUIRE(v.size() == 4);
    for (int k = 0; k < 4; ++k) p.padding[k] = v[std::size_t(k)];
  }
  if (auto v = n.attr_ints("kernel_shape", {}); !v.empty()) CHECK(v == std::vector<i64>(wa.shape.begin() + 2, wa.shape.end()));
  p.groups = n.attr_i("group", 1);
  const std::string ap = n.attr_s("auto_pad", "NOTSET");
  REQUIRE((ap == "NOTSET" || ap == "SAME_UPPER" || ap == "SAME_LOWER" || ap == "VALID"));
  p.auto_pad = ap == "SAME_UPPER"   ? fusor::auto_pad_mode::same_upper
               : ap == "SAME_LOWER" ? fusor::auto_pad_mode::same_lower
               : ap == "VALID"      ? fusor::auto_pad_mode::valid
                                    : fusor::auto_pad_mode::notset;
  const std::vector<float> xv = xa.as<float>(), wv = wa.as<float>();
  std::vector<float> bv;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) bv = named.at(n.inputs[2]).as<float>();
  REQUIRE(bv.empty());  // no imported case has a bias (the host tests cover it)
  const auto x = fusor::host_view(xv.data(), xs[0], xs[1], xs[2], xs[3]);
  const auto w = fusor::host_view(wv.data(), wsh[0], wsh[1], wsh[2], wsh[3]);
  const auto e = fusor::conv_transpose2d(x, w, p);
  const ft::npy_array want = c.set_outputs(0).at(0);
  const std::vector<float> wnt = want.as<float>();
  const auto s = fusor::shape_of(e);
  const std::vector<i64> got_shape = one_d ? std::vector<i64>{s[0], s[1], s[3]} : std::vector<i64>{s[0], s[1], s[2], s[3]};
  CHECK(got_shape == want.shape);
  REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3]) == wnt.size());
  std::vector<float> got_h(wnt.size(), -99.0f), got_u(wnt.size(), -99.0f);
  CHECK(fusor::run(fusor::host_view(got_h.data(), s[0], s[1], s[2], s[3]), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), s[0], s[1], s[2], s[3]), e, fusor::unfused()).kernels == 1);
  std::size_t bad_h = 0, bad_u = 0;
  for (std::size_t i = 0; i < wnt.size(); ++i) {
    bad_h += close(got_h[i], wnt[i], c.rtol, c.atol) ? 0 : 1;
    bad_u += close(got_u[i], wnt[i], c.rtol, c.atol) ? 0 : 1;
    if (!close(got_h[i], wnt[i], c.rtol, c.atol) && bad_h <= 3) UNSCOPED_INFO("at " << i << ": got " << got_h[i] << ", want " << wnt[i]);
  }
  CHECK(bad_h == 0);
  CHECK(bad_u == 0);
}
}  // namespace

TEST_CASE("ONNX ConvTranspose (2-D, and 1-D as 2-D) on host() and unfused()", "[conformance][onnx][conv_transpose]") {
  const auto names = ft::onnx_cases_of({"ConvTranspose"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 10);  // index.json today: every imported ConvTranspose case
}
