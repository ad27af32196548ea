# Must-not-compile tests: each file must fail to compile with fusor's message.
fusor_fail_test(fail/static_shapes_do_not_broadcast.cpp
  "fusor: operand extents do not broadcast.*|operands_do_not_broadcast<fusor::op::add, cuda::std::__4::extents<long int, 2, 3>")
fusor_fail_test(fail/device_view_on_host_executor.cpp "fusor: run: a view's memory space does not match the executor")
fusor_fail_test(fail/cuda_executor_without_nvcc.cpp "fusor: run\\(cuda\\(stream\\)\\): CUDA kernels can only be launched from a translation unit compiled by nvcc")
fusor_fail_test(fail/output_rank_mismatch.cpp "fusor: run: an output view's rank differs")
fusor_fail_test(fail/operand_not_an_expression.cpp "fusor: relu: the operand is not a fusor expression")
fusor_fail_test(fail/binary_operand_not_an_expression.cpp "fusor: max: an operand is not a fusor expression or number")
fusor_fail_test(fail/not_a_dtype.cpp "fusor: tensor_view: element type is not a fusor dtype")
fusor_fail_test(fail/rule_interface.cpp "fusor: a fusion rule does not fit the rule interface")
fusor_fail_test(fail/output_rank0_for_rank1.cpp "fusor: run: an output view.s rank differs")
