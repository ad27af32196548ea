# Checks one run of fusor_demo (examples/CMakeLists.txt registers the tests):
#   cmake -DDEMO=<fusor_demo> -DDATA=<data dir> -DMODE=json -P fusor_demo_check.cmake
#     runs `fusor_demo --json --data DATA --repeat 3`: exit 0, and the JSON says
#     predictions_equal_torch and predictions_equal_unfused are true, the
#     logits are within tolerance, 360 samples, accuracy > 0.9 and fewer
#     fused than unfused kernels. [-DARGS=--backend;cuda]: the same on the GPU;
#     without a CUDA device it prints "SKIPPED: no CUDA device is available".
#   cmake -DDEMO=<fusor_demo> -DDATA=<data dir> -DMODE=error -DEXIT=<n> -DEXPECT=<regex>
#         [-DARGS=<extra;args>] -P fusor_demo_check.cmake
#     exit status EXIT, stderr matching EXPECT, and nothing on stdout (the
#     demo checks all input before it prints anything).
foreach(v DEMO DATA MODE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "fusor_demo_check.cmake: -D${v}=... is required")
  endif()
endforeach()

if(MODE STREQUAL "json")
  execute_process(COMMAND "${DEMO}" --json --data "${DATA}" --repeat 3 ${ARGS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 77 AND err MATCHES "no CUDA device is available")
    # --backend cuda on a machine without a GPU: the test reports "skipped".
    message(STATUS "SKIPPED: no CUDA device is available")
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fusor_demo --json exited with ${rc}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  string(JSON samples ERROR_VARIABLE jerr GET "${out}" samples)
  if(jerr)
    message(FATAL_ERROR "fusor_demo --json did not print a JSON object with \"samples\": ${jerr}\n${out}")
  endif()
  foreach(key predictions_equal_torch predictions_equal_unfused within_tolerance ok)
    string(JSON v GET "${out}" ${key})
    if(NOT v)
      message(FATAL_ERROR "fusor_demo --json: \"${key}\" is ${v}, expected true\n${out}")
    endif()
  endforeach()
  string(JSON acc GET "${out}" accuracy)
  string(JSON ku GET "${out}" kernels_unfused)
  string(JSON kf GET "${out}" kernels_fused)
  string(JSON du GET "${out}" max_abs_diff_unfused)
  string(JSON dt GET "${out}" max_abs_diff_torch)
  if(NOT samples EQUAL 360)
    message(FATAL_ERROR "fusor_demo --json: samples = ${samples}, expected 360\n${out}")
  endif()
  if(acc LESS 0.9)
    message(FATAL_ERROR "fusor_demo --json: accuracy ${acc} < 0.9\n${out}")
  endif()
  if(NOT kf LESS ku)
    message(FATAL_ERROR "fusor_demo --json: ${kf} fused kernels, not fewer than ${ku} unfused\n${out}")
  endif()
  message(STATUS "fusor_demo: accuracy ${acc}, predictions equal PyTorch's, max |diff| vs unfused ${du}, "
                 "vs PyTorch ${dt}, kernels ${ku} unfused -> ${kf} fused")
elseif(MODE STREQUAL "error")
  foreach(v EXIT EXPECT)
    if(NOT DEFINED ${v})
      message(FATAL_ERROR "fusor_demo_check.cmake: MODE=error needs -D${v}=...")
    endif()
  endforeach()
  execute_process(COMMAND "${DEMO}" --data "${DATA}" ${ARGS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL EXIT)
    message(FATAL_ERROR "fusor_demo exited with ${rc}, expected ${EXIT}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  if(NOT err MATCHES "${EXPECT}")
    message(FATAL_ERROR "fusor_demo's message does not match '${EXPECT}':\n${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "fusor_demo printed on stdout before failing:\n${out}")
  endif()
  message(STATUS "fusor_demo failed as expected (exit ${rc}): ${err}")
else()
  message(FATAL_ERROR "fusor_demo_check.cmake: MODE must be json or error, got '${MODE}'")
endif()
