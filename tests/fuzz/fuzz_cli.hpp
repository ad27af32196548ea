#pragma once
// Command line and driver loop shared by the differential fuzzers
// (fuzz_elementwise, fuzz_blocks, fuzz_gpu): option parsing, the CI mode
// (regression draws, then fixed seeds per case), the long mode (random cases
// and seeds for N seconds), replay of one draw, --list, the final summary.
#include "fuzz_support.hpp"

#include <cstdint>
#include <vector>

namespace fz {

/// A draw that once found a bug in the run-time space (layouts, values,
/// aliasing) of an existing case: run first in CI mode (replay with --case K
/// --seed S).
struct regression {
  int case_id;
  std::uint64_t seed;
  const char* what;
};

/// One family of cases (a registry) driven by run_cli.
struct suite {
  const char* name = "";          ///< selects the family with --family NAME (fuzz_gpu)
  const registry* cases = nullptr;
  int default_draws = 100;        ///< CI mode: fixed-seed draws per case
  std::uint64_t ci_base = 0;      ///< CI seed k of case K: splitmix64(ci_base + K * 2^20 + k)
  std::vector<regression> regressions;
  void (*summary)() = nullptr;    ///< prints what the draws covered (after a CI or long run)
};

/// What differs between the fuzzer binaries.
struct cli_info {
  const char* program = "";             ///< for usage and messages
  const char* agree = "";               ///< replay verdict, e.g. "fused == unfused"
  bool negative_strides_flag = false;   ///< accepts --negative-strides
  const char* extra_usage = "";         ///< appended to the usage text
};

/// The fixed seed k of case `case_id` in CI mode (the same draws in every
/// fuzzer that uses the same ci_base: fuzz_gpu reuses the host fuzzers').
std::uint64_t ci_seed(std::uint64_t ci_base, int case_id, int k);

/// Parses argv (--draws N, --seconds N, --master-seed S, --case K, --seed S,
/// --family NAME when there are several suites, --inject, --negative-strides
/// if enabled, --max-failures N, --verbose, --list), runs the selected mode
/// and returns the exit status: 0 all draws agreed, 1 a mismatch, 2 usage.
/// `opt` receives the parsed flags (the case functions read it).
int run_cli(int argc, char** argv, const cli_info& info, const std::vector<suite>& suites, options& opt);

/// The families of the host fuzzers (fuzz_draws.cpp, fuzz_blocks_draws.cpp):
/// name, CI draws and seeds, regression draws, summary of the statistics.
suite elementwise_suite(const registry& cases);
suite blocks_suite(const registry& cases);

}  // namespace fz
