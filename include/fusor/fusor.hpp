#pragma once
/// @file fusor.hpp
/// Umbrella header: everything a user needs.
///
///   #include <fusor/fusor.hpp>
///   auto x = fusor::host_view(px, n), y = fusor::host_view(py, n);
///   fusor::run(fusor::host_view(pout, n), fusor::relu(x * 2.0f + y), fusor::host());
#include <fusor/version.hpp>
#include <fusor/config.hpp>
#include <fusor/expr/view_ops.hpp>
#include <fusor/ops/shape_ops.hpp>
#include <fusor/ops/functions.hpp>
#include <fusor/ops/instance_norm.hpp>
#include <fusor/ops/pooling.hpp>
#include <fusor/ops/group_norm.hpp>
#include <fusor/ops/arg_reduce.hpp>
#include <fusor/ops/gather.hpp>
#include <fusor/ops/resize.hpp>
#include <fusor/ops/cumsum.hpp>
#include <fusor/ops/one_hot.hpp>
#include <fusor/ops/pad.hpp>
#include <fusor/ops/concat.hpp>
#include <fusor/ops/conv_transpose.hpp>
#include <fusor/ops/topk.hpp>
#include <fusor/ops/layer_norm_stats.hpp>
#include <fusor/ops/lp_normalization.hpp>
#include <fusor/canon/canonicalize.hpp>
#include <fusor/plan/plan.hpp>
#include <fusor/inspect/explain.hpp>
#include <fusor/inspect/dot.hpp>
#include <fusor/exec/run.hpp>
#include <fusor/inspect/kernels_planned.hpp>
