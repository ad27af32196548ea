# Must-not-compile tests: each file must fail to compile with fusor's message.
fusor_fail_test(fail/static_shapes_do_not_broadcast.cpp
  "fusor: operand extents do not broadcast.*|operands_do_not_broadcast<fusor::op::add, cuda::std::__4::extents<long int, 2, 3>")
fusor_fail_test(fail/device_view_on_host_executor.cpp "fusor: run: a view's memory space does not match the executor")
fusor_fail_test(fail/cuda_executor_without_nvcc.cpp "fusor: run\\(cuda\\(stream\\)\\): CUDA kernels can only be launched from a translation unit compiled by nvcc")
fusor_fail_test(fail/output_rank_mismatch.cpp "fusor: run: an output view's rank differs")
fusor_fail_test(fail/output_rank_of_root_shape_op.cpp "fusor: run: an output view's rank differs")
fusor_fail_test(fail/operand_not_an_expression.cpp "fusor: relu: an operand is not a fusor expression")
fusor_fail_test(fail/binary_operand_not_an_expression.cpp "fusor: max: an operand is not a fusor expression")
fusor_fail_test(fail/not_a_dtype.cpp "fusor: tensor_view: element type is not a fusor dtype")
fusor_fail_test(fail/rule_interface.cpp "fusor: a fusion rule does not fit the rule interface")
fusor_fail_test(fail/output_rank0_for_rank1.cpp "fusor: run: an output view.s rank differs")
# Contractions (docs/contractions.md): the message names the op; for static
# extents that cannot match, the diagnostic template shows both extents.
fusor_fail_test(fail/matmul_static_inner_mismatch.cpp
  "contraction_extents_mismatch<fusor::op::matmul, fusor::diagnostic::inner_dimension, [^>]*extents<long int, 4, 7>, [^>]*extents<long int, 8, 5> >.*fusor: contraction: static extents do not match: matmul")
fusor_fail_test(fail/linear_static_inner_mismatch.cpp
  "contraction_extents_mismatch<fusor::op::linear, fusor::diagnostic::inner_dimension, .*fusor: contraction: static extents do not match: linear")
fusor_fail_test(fail/linear_weight_rank3.cpp "fusor: linear: W must have rank 2")
fusor_fail_test(fail/conv2d_weight_rank3.cpp "fusor: conv2d: the weight w must have rank 4")
fusor_fail_test(fail/transpose_of_rank1.cpp "fusor: transpose: transpose\\(e\\) swaps the last two dims: e needs rank >= 2")
fusor_fail_test(fail/shape_op_of_rank0.cpp "fusor: squeeze: the expression has rank 0 \\(or reads no tensor view\\): no dim to map")
fusor_fail_test(fail/batch_norm_param_2d.cpp "fusor: batch_norm: gamma, beta, running_mean and running_var must be 1-D views")
# Normalizations and run() misuse (issue #8, errors audit).
fusor_fail_test(fail/batch_norm_channel_axis_out_of_range.cpp "fusor: batch_norm: the channel axis is out of range for x's rank")
fusor_fail_test(fail/instance_norm_rank2.cpp "fusor: instance_norm: x must be \\[N, C, spatial...\\] \\(rank >= 3\\)")
fusor_fail_test(fail/max_pool2d_rank3.cpp "fusor: max_pool2d / avg_pool2d: x must be \\[N, C, H, W\\] or \\[N, H, W, C\\] \\(rank 4\\)")
fusor_fail_test(fail/group_norm_rank2.cpp "fusor: group_norm: x must be \\[N, C, spatial...\\] \\(rank >= 3\\)")
fusor_fail_test(fail/gather_float_indices.cpp "fusor: gather: indices must be integers \\(int32 or int64\\)")
fusor_fail_test(fail/resize_rank3.cpp "fusor: resize: x must be \\[N, C, H, W\\] or \\[N, H, W, C\\] \\(rank 4\\)")
fusor_fail_test(fail/conv_transpose2d_rank3.cpp "fusor: conv_transpose2d: x must be \\[N, C_in, H, W\\] \\(rank 4\\)")
fusor_fail_test(fail/topk_largest_as_axis.cpp "fusor: topk: the 3rd argument is the axis")
fusor_fail_test(fail/layer_norm_inv_std_dev_eps_as_axis.cpp "fusor: layer_norm_inv_std_dev: the 2nd argument is the axis")
fusor_fail_test(fail/concat_mixed_dtypes.cpp "fusor: concat: every input must have the same dtype")
fusor_fail_test(fail/concat_axis_last.cpp "fusor: concat: an operand is not a fusor expression; concat\\(axis, xs...\\): the axis \\(an integer\\) comes first")
fusor_fail_test(fail/layer_norm_gamma_rank3_for_rank2.cpp "fusor: layer_norm: gamma or beta has a higher rank than x")
fusor_fail_test(fail/output_view_const.cpp "fusor: run: an output view must not be const")
fusor_fail_test(fail/siblings_output_count.cpp "fusor: run: the number of outputs differs from the number of expressions")
# layer_norm and rms_norm take axis and eps in opposite orders (ONNX / PyTorch
# conventions): passing one for the other is a compile error, not a silent axis.
fusor_fail_test(fail/layer_norm_eps_as_axis.cpp "fusor: layer_norm\\(x, gamma, beta, axis, eps\\): the 4th argument is the axis")
fusor_fail_test(fail/rms_norm_axis_as_eps.cpp "fusor: rms_norm\\(x, gamma, eps, axis\\): the 3rd argument is eps")
# Every public factory, run() and the inspection functions given something
# that is not a fusor expression: one `fusor: <op>:` static_assert per marked
# line of operand_diagnostics.cpp, never "no matching function"
# (check_diagnostics.py compiles the file and maps messages to lines; with
# g++ and, when CUDA is enabled, with nvcc's EDG front end).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME fail.operand_diagnostics
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/fail/check_diagnostics.py --registry ${CMAKE_CXX_COMPILER}
      ${CMAKE_CURRENT_SOURCE_DIR}/fail/operand_diagnostics.cpp -I${PROJECT_SOURCE_DIR}/include
      "-I$<JOIN:$<TARGET_PROPERTY:fusor::cuda_headers,INTERFACE_INCLUDE_DIRECTORIES>,;-I>"
    COMMAND_EXPAND_LISTS)
  set_tests_properties(fail.operand_diagnostics PROPERTIES LABELS static)
  if(FUSOR_HAS_CUDA)
    add_test(NAME fail.operand_diagnostics.nvcc
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/fail/check_diagnostics.py --registry ${CMAKE_CUDA_COMPILER}
        ${CMAKE_CURRENT_SOURCE_DIR}/fail/operand_diagnostics.cpp -I${PROJECT_SOURCE_DIR}/include)
    set_tests_properties(fail.operand_diagnostics.nvcc PROPERTIES LABELS static)
  endif()
endif()
if(Python3_Interpreter_FOUND)
  add_test(NAME fail.troubleshooting
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/fail/check_troubleshooting.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(fail.troubleshooting PROPERTIES LABELS static)
endif()
# Reductions, softmax and norms take inputs of rank <= 8 (issue 24: listed in troubleshooting.md).
fusor_fail_test(fail/reduction_rank9.cpp "fusor: reductions support rank <= 8")
# `_c` takes decimal literals only (a hexadecimal one was read as another number).
fusor_fail_test(fail/constant_literal_hex.cpp "fusor: _c: write the constant in decimal")
# ... and integers beyond int64, floating values beyond double.
fusor_fail_test(fail/constant_literal_int64_range.cpp "fusor: _c: an integer constant must fit in int64")
fusor_fail_test(fail/constant_literal_double_range.cpp "fusor: _c: the constant is outside the range of double")
