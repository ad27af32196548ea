#pragma once
/// @file ops/registry.hpp
/// The op registry: every public op of fusor, one line each, in X-macro
/// tables. The C++ headers build the unary, binary and reduction factories
/// from these tables (ops/functions.hpp, ops/reduction.hpp), and the tools
/// read the same lines (tools/op_registry.py parses this file):
///
///  - the elementwise fuzzer draws its ops from the unary, attribute and
///    binary tables (tests/fuzz/gen_fuzz_cases.py; exclusions listed there
///    with their reasons);
///  - the operand-diagnostics test calls every op with a non-expression
///    operand and expects its `fusor: <name>:` line
///    (tests/fail/check_diagnostics.py --registry);
///  - the ONNX index classifies a case by the family of the op that
///    implements its op_type (tools/onnx_index.py).
///
/// So adding an op means adding its line here (and its tag, kernel and
/// tests, docs/contributing.md); nothing in those three tools is edited.
///
/// Columns. ONNX: the ONNX op_type(s) the op implements, `|`-separated, ""
/// when none. Result (elementwise): `same` (the operands' promoted dtype),
/// `floating` (f32 for integer inputs), `boolean`; tests/static/test_registry.cpp
/// checks each against the op tag. Family: the kernel family that runs the
/// op (elementwise, reduction = the row family incl. window and index ops,
/// normalization, contraction, attention, shape = an index map, no kernel).
/// Misuse: a call with a non-expression operand (names from
/// tests/fail/operand_diagnostics.cpp: buf is a std::vector<float>, ptr a
/// float*, x [4, 8], w [8, 8], img [1, 2, 4, 4], kernel [2, 2, 3, 3], qkv
/// [1, 2, 4, 8], vec [2] are host views); "" where another line covers it.
/// Math of each op: the op tags (ops/elementwise.hpp, ops/comparison.hpp,
/// ops/reducers.hpp and the op's own header).

/// Unary elementwise ops: X(name, ONNX, result). `fusor::name(x)`.
#define FUSOR_UNARY_OPS(X)                  \
  X(neg, "Neg", same)                       \
  X(abs, "Abs", same)                       \
  X(square, "", same)                       \
  X(exp, "Exp", floating)                   \
  X(log, "Log", floating)                   \
  X(sqrt, "Sqrt", floating)                 \
  X(rsqrt, "", floating)                    \
  X(reciprocal, "Reciprocal", floating)     \
  X(tanh, "Tanh", floating)                 \
  X(sigmoid, "Sigmoid", floating)           \
  X(erf, "Erf", floating)                   \
  X(relu, "Relu", same)                     \
  X(silu, "", floating)                     \
  X(hardswish, "HardSwish", floating)       \
  X(softplus, "Softplus", floating)         \
  X(softsign, "Softsign", floating)         \
  X(gelu_tanh, "", floating)                \
  X(sin, "Sin", floating)                   \
  X(cos, "Cos", floating)                   \
  X(tan, "Tan", floating)                   \
  X(asin, "Asin", floating)                 \
  X(acos, "Acos", floating)                 \
  X(atan, "Atan", floating)                 \
  X(sinh, "Sinh", floating)                 \
  X(cosh, "Cosh", floating)                 \
  X(asinh, "Asinh", floating)               \
  X(acosh, "Acosh", floating)               \
  X(atanh, "Atanh", floating)               \
  X(floor, "Floor", floating)               \
  X(ceil, "Ceil", floating)                 \
  X(round, "Round", floating)               \
  X(sign, "Sign", same)                     \
  X(isnan, "IsNaN", boolean)                \
  X(isinf, "IsInf", boolean)                \
  X(logical_not, "Not", boolean)            \
  X(bitwise_not, "BitwiseNot", same)

/// Binary elementwise ops, operands broadcast (NumPy/ONNX rules):
/// X(name, ONNX, result). `fusor::name(a, b)`.
#define FUSOR_BINARY_OPS(X)                       \
  X(add, "Add", same)                             \
  X(sub, "Sub", same)                             \
  X(mul, "Mul", same)                             \
  X(div, "Div", same)                             \
  X(max, "Max", same)                             \
  X(min, "Min", same)                             \
  X(pow, "Pow", same)                             \
  X(prelu, "PRelu", same)                         \
  X(fmod, "", same)                               \
  X(mod, "Mod", same)                             \
  X(equal, "Equal", boolean)                      \
  X(not_equal, "", boolean)                       \
  X(less, "Less", boolean)                        \
  X(less_equal, "LessOrEqual", boolean)           \
  X(greater, "Greater", boolean)                  \
  X(greater_equal, "GreaterOrEqual", boolean)     \
  X(logical_and, "And", boolean)                  \
  X(logical_or, "Or", boolean)                    \
  X(logical_xor, "Xor", boolean)                  \
  X(bitwise_and, "BitwiseAnd", same)              \
  X(bitwise_or, "BitwiseOr", same)                \
  X(bitwise_xor, "BitwiseXor", same)

/// Unary elementwise ops with float attributes (defaults in ops/functions.hpp):
/// X(name, ONNX, number of attributes). `fusor::name(x, attributes...)`.
#define FUSOR_ATTRIBUTE_OPS(X)               \
  X(leaky_relu, "LeakyRelu", 1)              \
  X(elu, "Elu", 1)                           \
  X(celu, "Celu", 1)                         \
  X(thresholded_relu, "ThresholdedRelu", 1)  \
  X(selu, "Selu", 2)                         \
  X(hardsigmoid, "HardSigmoid", 2)

/// Reductions over axes: X(name, reduce_kind, ONNX).
/// `fusor::name(x, axes = all, keepdims = true, noop_with_empty_axes = false)`.
#define FUSOR_REDUCTION_OPS(X)                 \
  X(sum, sum, "ReduceSum")                     \
  X(mean, mean, "ReduceMean")                  \
  X(max_reduce, max, "ReduceMax")              \
  X(min_reduce, min, "ReduceMin")              \
  X(sum_square, sum_square, "ReduceSumSquare") \
  X(l2_norm, l2, "ReduceL2")                   \
  X(logsumexp, logsumexp, "ReduceLogSumExp")   \
  X(prod, prod, "ReduceProd")                  \
  X(l1_norm, l1, "ReduceL1")                   \
  X(log_sum, log_sum, "ReduceLogSum")

/// Every other op, with its own factory: X(name, family, ONNX, misuse).
#define FUSOR_LAYER_OPS(X)                                                                                      \
  X(gelu, elementwise, "Gelu", "gelu(buf)")                                                                     \
  X(clip, elementwise, "Clip", "clip(x, buf, 1.0f)")                                                            \
  X(where, elementwise, "Where", "where(buf, x, 0.0f)")                                                         \
  X(cast, elementwise, "Cast", "cast<float>(buf)")                                                              \
  X(sum, elementwise, "Sum", "sum(x, buf)")                                                                     \
  X(mean, elementwise, "Mean", "mean(buf, x, x)")                                                               \
  X(softmax, normalization, "Softmax", "softmax(buf, -1)")                                                      \
  X(log_softmax, normalization, "LogSoftmax", "log_softmax(buf)")                                               \
  X(layer_norm, normalization, "LayerNormalization", "layer_norm(buf, vec, vec)")                               \
  X(rms_norm, normalization, "RMSNormalization", "rms_norm(x, ptr)")                                            \
  X(batch_norm, normalization, "BatchNormalization", "batch_norm(buf, fusor::batch_norm_params{vec, vec, vec, vec})") \
  X(instance_norm, normalization, "InstanceNormalization", "instance_norm(img, buf, nullptr)")                   \
  X(group_norm, normalization, "GroupNormalization", "group_norm(buf, 2, nullptr, nullptr)")                    \
  X(layer_norm_mean, normalization, "", "layer_norm_mean(buf)")                                                 \
  X(layer_norm_inv_std_dev, normalization, "", "layer_norm_inv_std_dev(ptr, -1, 1e-5f)")                        \
  X(mse_loss, reduction, "", "mse_loss(x, buf)")                                                                \
  X(lp_normalization, normalization, "LpNormalization", "lp_normalization(buf)")                                 \
  X(argmax, reduction, "ArgMax", "argmax(buf, 1)")                                                              \
  X(argmin, reduction, "ArgMin", "argmin(ptr, 1)")                                                              \
  X(max_pool2d, reduction, "MaxPool", "max_pool2d(buf, {.kernel = {2, 2}})")                                    \
  X(max_pool2d_indices, reduction, "", "max_pool2d_indices(ptr, {.kernel = {2, 2}})")                           \
  X(avg_pool2d, reduction, "AveragePool", "avg_pool2d(ptr, {.kernel = {2, 2}})")                                \
  X(global_average_pool, reduction, "GlobalAveragePool", "global_average_pool(buf)")                            \
  X(global_max_pool, reduction, "GlobalMaxPool", "global_max_pool(ptr)")                                        \
  X(gather, reduction, "Gather", "gather(x, buf, 0)")                                                           \
  X(embedding, reduction, "", "embedding(buf, w)")                                                              \
  X(gather_elements, reduction, "GatherElements", "gather_elements(buf, x, 0)")                                 \
  X(resize, reduction, "Resize", "resize(buf, {.scale = {2, 2}})")                                              \
  X(cumsum, reduction, "CumSum", "cumsum(buf, 0)")                                                              \
  X(one_hot, reduction, "OneHot", "one_hot(buf, 3)")                                                            \
  X(pad, reduction, "Pad", "pad(buf, {1, 1})")                                                                  \
  X(concat, reduction, "Concat", "concat(0, x, buf)")                                                           \
  X(topk, reduction, "TopK", "topk(buf, 2)")                                                                    \
  X(topk_indices, reduction, "", "topk_indices(ptr, 2)")                                                        \
  X(matmul, contraction, "MatMul", "matmul(x, buf)")                                                            \
  X(linear, contraction, "", "linear(x, w, buf)")                                                               \
  X(gemm, contraction, "Gemm", "gemm(x, ptr, nullptr, {.trans_b = true})")                                      \
  X(conv2d, contraction, "Conv", "conv2d(img, buf, nullptr, {.padding = {1, 1}})")                              \
  X(depthwise_conv2d, contraction, "", "depthwise_conv2d(buf, kernel)")                                         \
  X(conv_transpose2d, contraction, "ConvTranspose", "conv_transpose2d(img, buf)")                               \
  X(scaled_dot_product_attention, attention, "", "scaled_dot_product_attention(qkv, qkv, buf, {.causal = true})") \
  X(multi_head_attention, attention, "",                                                                        \
    "multi_head_attention(buf, fusor::attention_weights{w, w, w, w, nullptr, nullptr, nullptr, nullptr}, {.heads = 2})") \
  X(transpose, shape, "", "transpose(buf)")                                                                     \
  X(permute, shape, "Transpose", "permute(buf, {1, 0})")                                                        \
  X(slice, shape, "Slice", "slice(ptr, 0, 0, 2)")                                                               \
  X(unsqueeze, shape, "Unsqueeze", "unsqueeze(buf, 0)")                                                         \
  X(squeeze, shape, "Squeeze", "squeeze(buf, 0)")                                                               \
  X(expand, shape, "Expand", "expand(buf, fusor::shape<2>{4, 8})")                                              \
  X(reshape, shape, "Reshape", "reshape(ptr, fusor::shape<1>{32})")                                             \
  X(flatten, shape, "Flatten", "flatten(buf)")
