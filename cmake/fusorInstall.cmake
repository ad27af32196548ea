# Install rules and the find_package(fusor) package config.
# Layout under the prefix:
#   include/fusor/...                  the headers
#   share/cmake/fusor/                 fusorConfig.cmake, fusorConfigVersion.cmake,
#                                      fusorTargets.cmake, fusorDependencies.cmake
# share/, not lib/: a header-only package is architecture independent.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Off when fusor is add_subdirectory()'d: a parent project usually does not want
# fusor's files in its own install (it can turn this on if it exports targets
# that link fusor::fusor).
option(FUSOR_INSTALL "Generate fusor's install rules" ${FUSOR_IS_TOP_LEVEL})
set(FUSOR_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/fusor"
  CACHE STRING "Where to install fusor's CMake package files, relative to the prefix")
mark_as_advanced(FUSOR_INSTALL_CMAKEDIR)

if(NOT FUSOR_INSTALL)
  return()
endif()

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

install(TARGETS fusor fusor_deps EXPORT fusorTargets)
install(EXPORT fusorTargets
  NAMESPACE fusor::
  DESTINATION "${FUSOR_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/fusorConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/fusorConfig.cmake"
  INSTALL_DESTINATION "${FUSOR_INSTALL_CMAKEDIR}")
# SameMajorVersion: a request for 1.2 accepts 1.x >= 1.2. (While at 0.x, every
# 0.y >= the requested one is accepted.)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/fusorConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion
  ARCH_INDEPENDENT)

install(FILES
  "${PROJECT_BINARY_DIR}/fusorConfig.cmake"
  "${PROJECT_BINARY_DIR}/fusorConfigVersion.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/fusorDependencies.cmake"
  DESTINATION "${FUSOR_INSTALL_CMAKEDIR}")
