#pragma once
/// fusor's version, as in CMakeLists.txt's project(VERSION).
#define FUSOR_VERSION_MAJOR 0
#define FUSOR_VERSION_MINOR 1
#define FUSOR_VERSION_PATCH 0
#define FUSOR_VERSION_STRING "0.1.0"
