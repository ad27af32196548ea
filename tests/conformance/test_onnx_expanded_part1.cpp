// The second half of onnx_expanded_cases.inc (see test_onnx_expanded.cpp).
#define FUSOR_EXPANDED_PART 1
#include "onnx_expanded_harness.hpp"

#include "onnx_expanded_cases.inc"
