#pragma once
/// @file core/error.hpp
/// fusor's exception hierarchy. Every error is raised before any kernel writes an
/// output, so outputs are untouched when one is thrown (a CUDA launch failure
/// of a kernel that already ran asynchronously is the exception: device_error). Messages start with "fusor: ",
/// then name the operator, the operand and the shapes involved.
#include <stdexcept>
#include <string>

namespace fusor {

/// Base of every exception fusor throws.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

/// Operand extents that do not broadcast, an output whose extents differ from
/// its expression's, extents whose element count overflows int64.
class shape_error : public error {
 public:
  using error::error;
};

/// A bad argument: null data with non-zero extents, an output that partially
/// overlaps an input, two different views carrying the same identity tag.
class argument_error : public error {
 public:
  using error::error;
};

/// A valid request fusor cannot serve here (a dtype or layout a kernel lacks).
class unsupported_error : public error {
 public:
  using error::error;
};

/// Memory that could not be allocated for a temporary, prepared weights or a
/// workspace (host: operator new failed; device: cudaMallocAsync returned
/// cudaErrorMemoryAllocation). The message names the op and the bytes asked
/// for. run() allocates everything a plan needs before its first kernel
/// writes, so outputs are untouched when it is thrown.
class allocation_error : public error {
 public:
  using error::error;
};

/// A CUDA failure: no device, a launch error (named by kernel), host memory
/// given to the CUDA executor or device memory to the host executor.
class device_error : public error {
 public:
  using error::error;
};

}  // namespace fusor
