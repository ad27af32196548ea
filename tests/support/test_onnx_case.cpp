// Tests for tests/support/onnx_case.hpp against the committed cases in
// tests/data/onnx (expected values checked with numpy and json.load).
// Catch2 v2; main() lives in another TU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/onnx_case.hpp"

namespace fs = std::filesystem;
using namespace fusor::testing;
using Catch::Matchers::Contains;

TEST_CASE("load_onnx_case reads graph, tolerances and int attributes (LayerNormalization)", "[onnx]") {
  const onnx_case c = load_onnx_case(onnx_data_dir() / "test_layer_normalization_3d_axis1_epsilon");
  CHECK(c.name == "test_layer_normalization_3d_axis1_epsilon");
  CHECK(c.opset == 17);
  CHECK(c.rtol == 1e-3);
  CHECK(c.atol == 1e-7);
  CHECK(c.data_sets == 1);
  CHECK(c.inputs == std::vector<std::string>{"X", "W", "B"});
  CHECK(c.outputs == std::vector<std::string>{"Y", "Mean", "InvStdDev"});
  CHECK(c.initializers.empty());
  const onnx_node& n = c.node();
  CHECK(n.op_type == "LayerNormalization");
  CHECK(n.attr_i("axis", -1) == 1);
  CHECK(n.attr_f("epsilon", 1e-5f) == 0.1f);  // stored as the float32 value 0.10000000149011612
  CHECK(n.attr_i("stash_type", 1) == 1);      // absent: default

  const auto in = c.set_inputs(0);
  REQUIRE(in.size() == 3);
  CHECK(in[0].shape == std::vector<std::int64_t>{2, 3, 5});
  CHECK(in[1].shape == std::vector<std::int64_t>{3, 5});
  const auto out = c.set_outputs(0);
  REQUIRE(out.size() == 3);
  CHECK(out[1].shape == std::vector<std::int64_t>{2, 1, 1});
  CHECK(out[1].as<float>() == std::vector<float>{0.687008261680603f, 0.1987045854330063f});

  CHECK_THROWS_AS(c.set_inputs(1), std::out_of_range);
  CHECK_THROWS_AS(c.set_outputs(-1), std::out_of_range);
}

TEST_CASE("onnx_node reads list and float attributes (Conv, Gemm, Selu)", "[onnx]") {
  const onnx_node conv = load_onnx_case(onnx_data_dir() / "test_conv_with_strides_and_asymmetric_padding").node();
  CHECK(conv.op_type == "Conv");
  CHECK(conv.attr_ints("kernel_shape") == std::vector<std::int64_t>{3, 3});
  CHECK(conv.attr_ints("pads") == std::vector<std::int64_t>{1, 0, 1, 0});
  CHECK(conv.attr_ints("strides") == std::vector<std::int64_t>{2, 2});
  CHECK(conv.attr_ints("dilations", {1, 1}) == std::vector<std::int64_t>{1, 1});  // absent: default
  CHECK(conv.attr_ints("dilations").empty());
  CHECK(conv.attr_s("auto_pad", "NOTSET") == "NOTSET");

  const onnx_node gemm = load_onnx_case(onnx_data_dir() / "test_gemm_all_attributes").node();
  CHECK(gemm.attr_f("alpha", 1.f) == 0.25f);
  CHECK(gemm.attr_f("beta", 1.f) == 0.35f);
  CHECK(gemm.attr_i("transA", 0) == 1);
  CHECK(gemm.attr_i("transB", 0) == 1);

  const onnx_node selu = load_onnx_case(onnx_data_dir() / "test_selu").node();
  CHECK(selu.attr_f("alpha", 0.f) == 2.f);
  CHECK(selu.attr_f("gamma", 0.f) == 3.f);

  // Wrong kinds are errors, not silent conversions.
  CHECK_THROWS_WITH(selu.attr_i("alpha", 0), Contains("Selu") && Contains("'alpha'") && Contains("an integer"));
  CHECK_THROWS_WITH(conv.attr_f("pads", 0.f), Contains("'pads'") && Contains("a number"));
  CHECK_THROWS_WITH(gemm.attr_ints("alpha"), Contains("a list of integers"));
  CHECK_THROWS_WITH(gemm.attr_s("alpha"), Contains("a string"));
}

TEST_CASE("omitted optional inputs and named inputs (Clip, Where)", "[onnx]") {
  const onnx_case clip = load_onnx_case(onnx_data_dir() / "test_clip_default_inbounds");
  CHECK(clip.node().inputs == std::vector<std::string>{"x", "", ""});  // min and max omitted
  CHECK(clip.inputs == std::vector<std::string>{"x"});
  CHECK(clip.set_inputs(0).size() == 1);

  const onnx_case where = load_onnx_case(onnx_data_dir() / "test_where_long_example");
  const auto named = where.named_inputs(0);
  REQUIRE(named.size() == 3);
  CHECK(named.at("condition").dtype == npy_dtype::b1);
  CHECK(named.at("x").as<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(named.at("y").as<std::int64_t>() == std::vector<std::int64_t>{9, 8, 7, 6});
  CHECK(where.set_outputs(0)[0].as<std::int64_t>() == std::vector<std::int64_t>{1, 8, 3, 4});
}

TEST_CASE("every committed case loads, with data matching its graph", "[onnx]") {
  const auto names = onnx_cases_in_family("elementwise");
  CHECK(names.size() == 276);  // tests/data/onnx/README.md: the shared set and the imported cases
  std::size_t total = 0;
  for (const char* family : {"elementwise", "contraction", "reduction", "normalization", "shape"}) {
    for (const auto& name : onnx_cases_in_family(family)) {
      CAPTURE(name);
      const onnx_case c = load_onnx_case(onnx_data_dir() / name);
      CHECK(c.name == name);
      CHECK(c.nodes.size() == 1);
      REQUIRE(c.data_sets >= 1);
      CHECK(c.set_inputs(0).size() == c.inputs.size());
      CHECK(c.set_outputs(0).size() == c.outputs.size());
      ++total;
    }
  }
  CHECK(total == 643);  // every case of index.json
}

TEST_CASE("onnx_cases_of selects by op_type from index.json", "[onnx]") {
  CHECK(onnx_cases_of({"Softmax"}) ==
        std::vector<std::string>{"test_softmax_axis_0", "test_softmax_axis_1", "test_softmax_axis_2",
                                 "test_softmax_default_axis", "test_softmax_example", "test_softmax_large_number",
                                 "test_softmax_negative_axis"});
  CHECK(onnx_cases_of({"Gemm", "MatMul"}).size() == 18);
  CHECK(onnx_cases_of({"Where"}) == std::vector<std::string>{"test_where_example", "test_where_long_example"});
  // An op_type with no case is an error, so a typo cannot make a test vacuous.
  CHECK_THROWS_WITH(onnx_cases_of({"Relu", "Rleu"}), Contains("index.json") && Contains("'Rleu'"));
  CHECK_THROWS_WITH(onnx_cases_in_family("opaque"), Contains("'opaque'"));
}

TEST_CASE("load_onnx_case errors name the file", "[onnx][errors]") {
  const fs::path dir = fs::temp_directory_path() / ("fusor_test_onnx_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  struct cleanup {
    fs::path p;
    ~cleanup() { std::error_code ec; fs::remove_all(p, ec); }
  } guard{dir};
  auto write = [&](const std::string& text) { std::ofstream(dir / "case.json") << text; };

  CHECK_THROWS_WITH(load_onnx_case(dir / "absent"), Contains("absent") && Contains("cannot open"));
  write("{ not json");
  CHECK_THROWS_WITH(load_onnx_case(dir), Contains("case.json") && Contains("invalid JSON"));
  write(R"({"name": "x", "nodes": [], "inputs": [], "outputs": [], "rtol": 0.001, "data_sets": 1})");
  CHECK_THROWS_WITH(load_onnx_case(dir), Contains("case.json") && Contains("atol"));
  // An initializer whose .npy is missing: the message names that file.
  write(R"({"name": "x", "nodes": [], "inputs": [], "outputs": [], "rtol": 0.001, "atol": 0,
            "data_sets": 0, "initializers": ["W"]})");
  CHECK_THROWS_WITH(load_onnx_case(dir), Contains("init_W.npy") && Contains("no such file"));
  // node() on a graph without exactly one node.
  write(R"({"name": "x", "nodes": [], "inputs": [], "outputs": [], "rtol": 0.001, "atol": 0, "data_sets": 0})");
  CHECK_THROWS_WITH(load_onnx_case(dir).node(), Contains("exactly one node"));
}
