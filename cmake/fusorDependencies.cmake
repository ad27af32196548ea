# What fusor's headers need from outside, as imported targets.
#
# This file runs in two places: in fusor's own configure (top-level
# CMakeLists.txt), and, installed next to fusorConfig.cmake, in every project
# that calls find_package(fusor). So it must not depend on fusor's source tree.
#
# - CUDA toolkit headers (required even for host-only use: cuda_fp16.h,
#   cuda_bf16.h and CCCL's cuda/std + CUB). FindCUDAToolkit works without
#   enabling the CUDA language, so plain g++ consumers can use fusor.
# (No Boost: the Boost.Hana decision of issue 16 and its numbers are in
# docs/architecture.md, "Boost.Hana".)
# - OpenMP (optional): the host executor parallelizes with it when available.
# - OpenBLAS (optional): the host GEMM engine under fused prologues and
#   epilogues (exec/host_gemm.hpp); without it the host runs fusor's own
#   tile loops. FUSOR_USE_OPENBLAS=OFF ignores an installed OpenBLAS.

# Loaded by fusorConfig.cmake, which has already run find_dependency (so that
# a missing dependency makes find_package(fusor) fail politely instead of
# aborting the consumer's configure). In fusor's own build, missing is fatal.
if(NOT CMAKE_FIND_PACKAGE_NAME STREQUAL "fusor")
  find_package(CUDAToolkit REQUIRED)
  find_package(OpenMP COMPONENTS CXX)
endif()

# CUDA 13 moved CCCL from <toolkit>/include into <toolkit>/include/cccl, and
# CMake < 3.31's CUDA::toolkit does not know about it. nvcc adds it on its own,
# host compilers do not. Older toolkits have no such folder: nothing to add.
# An imported target, not absolute paths on fusor_deps, so that the installed
# package looks the toolkit up again on the consumer's machine.
if(NOT TARGET fusor::cuda_headers)
  add_library(fusor::cuda_headers INTERFACE IMPORTED)
  set(_fusor_cccl_dirs "")
  foreach(_fusor_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    if(IS_DIRECTORY "${_fusor_dir}/cccl")
      list(APPEND _fusor_cccl_dirs "${_fusor_dir}/cccl")
    endif()
  endforeach()
  # CCCL first: if a toolkit ever ships both copies, the cccl/ one is current.
  target_include_directories(fusor::cuda_headers SYSTEM INTERFACE ${_fusor_cccl_dirs})
  target_link_libraries(fusor::cuda_headers INTERFACE CUDA::toolkit)
  unset(_fusor_cccl_dirs)
  unset(_fusor_dir)
endif()

# CMake < 3.3x does not know nvcc 12+'s C++20 dialect: CUDA_STANDARD 20 on a
# consumer's target fails with "requires the language dialect CUDA20". Teach
# it the flag (cache: visible in every directory, also above an
# add_subdirectory(fusor)); newer CMake sets it itself. Only when the CUDA
# language is already enabled (project(... CUDA) before find_package).
if(CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA" AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0
   AND NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20" CACHE INTERNAL "nvcc's C++20 flag (set by fusor)")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20" CACHE INTERNAL "nvcc's C++20 flag (set by fusor)")
endif()

# OpenBLAS as fusor::openblas (headers, library, FUSOR_WITH_OPENBLAS=1), found
# again in each consumer like the CUDA headers. Debian puts cblas.h under
# <arch>/openblas-pthread (or -openmp); openblas_config.h marks OpenBLAS's
# own cblas.h (netlib's lacks openblas_set_num_threads).
option(FUSOR_USE_OPENBLAS "Use OpenBLAS for host GEMM/conv tiles when it is installed" ON)
if(FUSOR_USE_OPENBLAS AND NOT TARGET fusor::openblas)
  find_path(FUSOR_OPENBLAS_INCLUDE_DIR NAMES openblas_config.h
    PATH_SUFFIXES openblas-pthread openblas-openmp openblas-serial openblas)
  find_library(FUSOR_OPENBLAS_LIBRARY NAMES openblas)
  if(FUSOR_OPENBLAS_INCLUDE_DIR AND FUSOR_OPENBLAS_LIBRARY)
    add_library(fusor::openblas INTERFACE IMPORTED)
    target_include_directories(fusor::openblas SYSTEM INTERFACE "${FUSOR_OPENBLAS_INCLUDE_DIR}")
    target_link_libraries(fusor::openblas INTERFACE "${FUSOR_OPENBLAS_LIBRARY}")
    target_compile_definitions(fusor::openblas INTERFACE FUSOR_WITH_OPENBLAS=1)
  endif()
endif()

# SLEEF as fusor::sleef (library, FUSOR_HAS_SLEEF=1): the host's vectorized
# exp/log/tanh/erf/pow (ops/vector_math.hpp). fusor declares the functions
# itself, so only the library is needed (Debian: libsleef-dev).
option(FUSOR_USE_SLEEF "Use SLEEF for the host's transcendental functions when it is installed" ON)
if(FUSOR_USE_SLEEF AND NOT TARGET fusor::sleef)
  find_library(FUSOR_SLEEF_LIBRARY NAMES sleef)
  if(FUSOR_SLEEF_LIBRARY)
    add_library(fusor::sleef INTERFACE IMPORTED)
    target_link_libraries(fusor::sleef INTERFACE "${FUSOR_SLEEF_LIBRARY}")
    target_compile_definitions(fusor::sleef INTERFACE FUSOR_HAS_SLEEF=1)
  endif()
endif()

# fusor_deps itself is defined once, in fusor's build; the installed package
# gets it (as fusor::deps) from fusorTargets.cmake.
if(NOT CMAKE_FIND_PACKAGE_NAME STREQUAL "fusor" AND NOT TARGET fusor_deps)
  add_library(fusor_deps INTERFACE)
  add_library(fusor::deps ALIAS fusor_deps)
  set_target_properties(fusor_deps PROPERTIES EXPORT_NAME deps)
  # OpenMP by genex: the name stays in the exported target and is resolved in
  # the consumer, which links OpenMP only if *it* found OpenMP.
  target_link_libraries(fusor_deps INTERFACE
    fusor::cuda_headers
    $<TARGET_NAME_IF_EXISTS:OpenMP::OpenMP_CXX>
    $<TARGET_NAME_IF_EXISTS:fusor::openblas>
    $<TARGET_NAME_IF_EXISTS:fusor::sleef>
    ${CMAKE_DL_LIBS})  # dlopen of the CUDA driver (exec/memory_space.hpp); empty on glibc >= 2.34
endif()
