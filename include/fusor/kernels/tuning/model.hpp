#pragma once
/// @file kernels/tuning/model.hpp
/// The device model the kernels' tile and grid constants are chosen for.
///
/// Every tuning value of fusor's kernels (kernels/tuning/<family>.hpp) is a
/// value struct keyed by a device model type (core/device_model.hpp), as CUB
/// keys its tuning policies by architecture (cub/device/dispatch/tuning/
/// tuning_reduce.cuh). The key is a compile-time choice of the build, not of
/// the executor: the host and device passes of nvcc must see the same tile
/// shapes, and a kernel's shared memory is sized by them.
///
/// Define FUSOR_TUNED_MODEL (a type with `static constexpr device_model
/// model`) before including fusor, the same in every translation unit of a
/// program (the kernels are templates; two tunings in one program would break
/// the one-definition rule), to key the values by another model; specialize
/// `fusor::kernels::<family>_tuning_for<your_model>` to give it other values.
/// Default: models::h100_sxm, the model fusor's fused policy plans for
/// (plan/policy.hpp), whose SM array the H200 shares.
#include <fusor/core/device_model.hpp>

#ifndef FUSOR_TUNED_MODEL
#define FUSOR_TUNED_MODEL ::fusor::models::h100_sxm
#endif

namespace fusor::kernels {

/// The model the kernels of this program are tuned for (FUSOR_TUNED_MODEL).
using tuned_model = FUSOR_TUNED_MODEL;

}  // namespace fusor::kernels
