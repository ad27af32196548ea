#pragma once
// Umbrella header: everything a user needs.
#include <fusor/version.hpp>
