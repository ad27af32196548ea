// The first half of onnx_expanded_cases.inc (the harness, what is checked and
// why: onnx_expanded_harness.hpp); test_onnx_expanded_part1.cpp runs the
// other half, so that the two compile in parallel.
#define FUSOR_EXPANDED_PART 0
#include "onnx_expanded_harness.hpp"

#include "onnx_expanded_cases.inc"

TEST_CASE("ONNX expanded bodies: every translated case is registered", "[conformance][onnx][expanded]") {
  // onnx_expanded_cases.inc's header states the count; the README lists the skipped ones
  CHECK(expanded_translated == 304);
}
