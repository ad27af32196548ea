// ONNX conformance of Resize (modes nearest and linear): every case in
// tests/data/onnx (imported from the onnx package by
// tools/import_onnx_node_cases.py; the cubic, antialias and
// tf_crop_and_resize cases are not imported: tests/conformance/README.md)
// on host() (fused) and unfused(), compared with numpy.isclose(rtol, atol of
// the case) like the other drivers.
//
//  - scales / sizes (with the axes attribute) map onto resize_params; N and
//    C must keep their extents. keep_aspect_ratio_policy not_larger /
//    not_smaller is computed here as ONNX's reference does (one scale, the
//    min / max of the sizes' ratios, and sizes round(scale * extent), half
//    to even) and passed as both size and scale.
//  - Each run launches exactly one kernel; the expected shape is compared
//    with the shape fusor infers.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <algorithm>
#include <cfenv>
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
    if (key != "mode" && key != "coordinate_transformation_mode" && key != "nearest_mode" && key != "axes" &&
        key != "keep_aspect_ratio_policy")
      FAIL("attribute " << key << " not handled");
  const auto named = c.named_inputs(0);
  const ft::npy_array& xa = named.at(n.inputs.at(0));
  REQUIRE(xa.dtype == ft::npy_dtype::f32);
  REQUIRE(xa.shape.size() == 4);
  const std::vector<float> xv = xa.as<float>();
  std::vector<i64> axes = n.attr_ints("axes", {0, 1, 2, 3});
  for (auto& a : axes) a = a < 0 ? a + 4 : a;
  double scale[4] = {1, 1, 1, 1};
  i64 size[4] = {xa.shape[0], xa.shape[1], xa.shape[2], xa.shape[3]};
  bool have_scales = false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const auto s = named.at(n.inputs[2]).as<float>();
    REQUIRE(s.size() == axes.size());
    for (std::size_t k = 0; k < axes.size(); ++k) scale[axes[k]] = s[k];
    have_scales = true;
  }
  bool have_sizes = false;
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
    const auto s = named.at(n.inputs[3]).as<i64>();
    REQUIRE(s.size() == axes.size());
    for (std::size_t k = 0; k < axes.size(); ++k) size[axes[k]] = s[k];
    have_sizes = true;
  }
  REQUIRE(have_scales != have_sizes);
  fusor::resize_params p;
  const std::string policy = n.attr_s("keep_aspect_ratio_policy", "stretch");
  if (have_scales) {
    REQUIRE((scale[0] == 1 && scale[1] == 1));
    p.scale[0] = scale[2], p.scale[1] = scale[3];
  } else if (policy == "stretch") {
    REQUIRE((size[0] == xa.shape[0] && size[1] == xa.shape[1]));
    p.size[0] = size[2], p.size[1] = size[3];
  } else {
    double s = policy == "not_larger" ? 1e300 : 0;
    for (i64 a : axes) {
      const double r = double(size[a]) / double(xa.shape[std::size_t(a)]);
      s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
    }
    std::fesetround(FE_TONEAREST);
    for (int d = 0; d < 2; ++d) {
      const bool on = std::find(axes.begin(), axes.end(), i64(2 + d)) != axes.end();
      p.scale[d] = on ? s : 1.0;
      p.size[d] = on ? i64(std::nearbyint(s * double(xa.shape[std::size_t(2 + d)]))) : xa.shape[std::size_t(2 + d)];
    }
  }
  const std::string mode = n.attr_s("mode", "nearest");
  REQUIRE((mode == "nearest" || mode == "linear"));
  p.mode = mode == "linear" ? fusor::resize_mode::linear : fusor::resize_mode::nearest;
  const std::string ct = n.attr_s("coordinate_transformation_mode", "half_pixel");
  p.coordinates = ct == "half_pixel_symmetric"   ? fusor::resize_coordinates::half_pixel_symmetric
                  : ct == "pytorch_half_pixel" ? fusor::resize_coordinates::pytorch_half_pixel
                  : ct == "align_corners"      ? fusor::resize_coordinates::align_corners
                  : ct == "asymmetric"         ? fusor::resize_coordinates::asymmetric
                                               : fusor::resize_coordinates::half_pixel;
  REQUIRE((ct == "half_pixel" || ct == "half_pixel_symmetric" || ct == "pytorch_half_pixel" || ct == "align_corners" ||
           ct == "asymmetric"));
  const std::string nm = n.attr_s("nearest_mode", "round_prefer_floor");
  p.rounding = nm == "round_prefer_ceil" ? fusor::resize_rounding::round_prefer_ceil
               : nm == "floor"           ? fusor::resize_rounding::floor
               : nm == "ceil"            ? fusor::resize_rounding::ceil
                                         : fusor::resize_rounding::round_prefer_floor;

  const ft::npy_array want = c.set_outputs(0).at(0);
  const std::vector<float> w = want.as<float>();
  const auto x = fusor::host_view(xv.data(), xa.shape[0], xa.shape[1], xa.shape[2], xa.shape[3]);
  const auto e = fusor::resize(x, p);
  const auto s = fusor::shape_of(e);
  CHECK(std::vector<i64>{s[0], s[1], s[2], s[3]} == want.shape);
  REQUIRE(std::size_t(s[0] * s[1] * s[2] * s[3]) == w.size());
  std::vector<float> got_h(w.size(), -99.0f), got_u(w.size(), -99.0f);
  CHECK(fusor::run(fusor::host_view(got_h.data(), s[0], s[1], s[2], s[3]), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(fusor::host_view(got_u.data(), s[0], s[1], s[2], s[3]), e, fusor::unfused()).kernels == 1);
  std::size_t bad_h = 0, bad_u = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    bad_h += close(got_h[i], w[i], c.rtol, c.atol) ? 0 : 1;
    bad_u += close(got_u[i], w[i], c.rtol, c.atol) ? 0 : 1;
    if (!close(got_h[i], w[i], c.rtol, c.atol) && bad_h <= 3) UNSCOPED_INFO("at " << i << ": got " << got_h[i] << ", want " << w[i]);
  }
  CHECK(bad_h == 0);
  CHECK(bad_u == 0);
}
}  // namespace

TEST_CASE("ONNX Resize (nearest, linear) on host() and unfused()", "[conformance][onnx][resize]") {
  const auto names = ft::onnx_cases_of({"Resize"});
  for (const auto& name : names) DYNAMIC_SECTION(name) { run_case(name); }
  CHECK(names.size() == 22);  // index.json today: every imported Resize case
}
