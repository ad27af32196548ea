// fuzz_blocks: fused host() against unfused() around reductions,
// normalizations, contractions and attention (fuzz_blocks_cases.inc; draws,
// bounds, comparison and reports in fuzz_blocks_draws.cpp, the command line
// in fuzz_cli.cpp). README.md, "fuzz_blocks", explains it.
//
// Modes (as fuzz_elementwise):
//   fuzz_blocks                    CI: regression draws + 50 fixed-seed draws per case
//   fuzz_blocks --draws N          N fixed-seed draws per case
//   fuzz_blocks --seconds N        random cases and seeds for N seconds (prints the master seed)
//   fuzz_blocks --case K --seed S  replay one draw verbosely
//   fuzz_blocks --list             the cases
//   --inject (perturb one fused result per draw: must fail), --max-failures N, --verbose
#include "fuzz_blocks.hpp"
#include "fuzz_cli.hpp"

int main(int argc, char** argv) {
  fz::registry reg;
  fz::register_blocks_part0(reg);
  fz::register_blocks_part1(reg);
  fz::register_blocks_part2(reg);
  fz::suite s = fz::blocks_suite(reg);
  fz::options opt;
  fz::cli_info info;
  info.program = "fuzz_blocks";
  info.agree = "fused == unfused";
  return fz::run_cli(argc, argv, info, {s}, opt);
}
