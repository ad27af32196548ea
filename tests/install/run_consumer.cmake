# cmake -DMODE=find_package|add_subdirectory -DWORK_DIR=... [...] -P run_consumer.cmake
# Configures, builds and runs tests/install/consumer against fusor; any failing
# step stops the script with a non-zero exit status. Arguments: see
# tests/install/CMakeLists.txt.
cmake_minimum_required(VERSION 3.25)

foreach(_var MODE WORK_DIR CONSUMER_DIR FUSOR_SOURCE_DIR FUSOR_BINARY_DIR FUSOR_VERSION GENERATOR CXX_COMPILER)
  if("${${_var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: ${_var} is not set")
  endif()
endforeach()
if(NOT IS_ABSOLUTE "${WORK_DIR}")
  message(FATAL_ERROR "run_consumer.cmake: WORK_DIR must be absolute, got '${WORK_DIR}'")
endif()

# Runs a command, echoing it, and stops the script if it fails.
function(_step what)
  string(REPLACE ";" " " _cmdline "${ARGN}")
  message(STATUS "[${MODE}] ${what}: ${_cmdline}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "[${MODE}] ${what} failed: ${_rc}")
  endif()
endfunction()

# Start clean: a prefix or consumer cache left by an earlier run could make a
# broken package look fine.
file(REMOVE_RECURSE "${WORK_DIR}")
set(_prefix "${WORK_DIR}/prefix")
set(_build "${WORK_DIR}/build")

set(_config_args "")
if(CONFIG)
  set(_config_args --config "${CONFIG}")
endif()

set(_configure "${CMAKE_COMMAND}" -S "${CONSUMER_DIR}" -B "${_build}"
  -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DFUSOR_CONSUMER_MODE=${MODE}")
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CONFIG)
  list(APPEND _configure "-DCMAKE_BUILD_TYPE=${CONFIG}")
endif()
if(CUDA_ROOT)
  list(APPEND _configure "-DCUDAToolkit_ROOT=${CUDA_ROOT}")
endif()
if(CUDA_COMPILER)
  # The .cu consumer too (built and linked; running it needs a GPU).
  list(APPEND _configure "-DFUSOR_CONSUMER_CUDA=ON" "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}"
       "-DCMAKE_CUDA_ARCHITECTURES=90")
endif()

if(MODE STREQUAL "find_package")
  _step("install" "${CMAKE_COMMAND}" --install "${FUSOR_BINARY_DIR}" --prefix "${_prefix}" ${_config_args})
  list(APPEND _configure "-DCMAKE_PREFIX_PATH=${_prefix}")
elseif(MODE STREQUAL "add_subdirectory")
  # A subproject does not build fusor's tests/examples; CUDA off keeps it a
  # quick host-only configure.
  list(APPEND _configure "-DFUSOR_SOURCE_DIR=${FUSOR_SOURCE_DIR}" -DFUSOR_ENABLE_CUDA=OFF)
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown MODE '${MODE}'")
endif()

_step("configure" ${_configure})

if(MODE STREQUAL "find_package")
  # Make sure the package came from the fresh prefix, not from somewhere else
  # on the machine.
  file(STRINGS "${_build}/CMakeCache.txt" _fusor_dir REGEX "^fusor_DIR:")
  string(REGEX REPLACE "^fusor_DIR:[A-Z]+=" "" _fusor_dir "${_fusor_dir}")
  string(FIND "${_fusor_dir}" "${_prefix}/" _at)
  if(NOT _at EQUAL 0)
    message(FATAL_ERROR "[${MODE}] fusor was found in '${_fusor_dir}', not under '${_prefix}'")
  endif()
endif()

_step("build" "${CMAKE_COMMAND}" --build "${_build}" ${_config_args})

# The consumer writes where its executable is (per configuration).
file(READ "${_build}/consumer-exe-${CONFIG}.txt" _exe)
message(STATUS "[${MODE}] run: ${_exe}")
execute_process(COMMAND "${_exe}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message("${_out}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "[${MODE}] consumer exited with ${_rc}")
endif()
string(FIND "${_out}" "fusor ${FUSOR_VERSION}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "[${MODE}] consumer did not print 'fusor ${FUSOR_VERSION}': headers from another fusor?")
endif()
message(STATUS "[${MODE}] OK")
