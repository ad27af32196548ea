#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>
