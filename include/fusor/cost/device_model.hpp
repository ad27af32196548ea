#pragma once
/// @file cost/device_model.hpp
/// The device models moved to core/ (core/device_model.hpp) so that the
/// kernels' tuning values (kernels/tuning/) can be keyed by them; this header
/// keeps `#include <fusor/cost/device_model.hpp>` working.
#include <fusor/core/device_model.hpp>
