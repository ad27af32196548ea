// fuzz_elementwise: fused host() against unfused(), bitwise, for the generated
// elementwise cases (fuzz_cases.inc; draws, comparison and reports in
// fuzz_draws.cpp, the command line in fuzz_cli.cpp). README.md explains it.
//
// Modes:
//   fuzz_elementwise                    CI: regression seeds + a fixed seed list
//   fuzz_elementwise --draws N          CI with N draws per case (default 100)
//   fuzz_elementwise --seconds N        random seeds until N seconds have passed
//   fuzz_elementwise --seed S --case K  replay one draw verbosely
//   fuzz_elementwise --list             list the cases
// Other flags: --case K (CI/long mode on one case), --inject (perturb one
// fused result: the run must fail), --negative-strides, --master-seed S (long
// mode), --max-failures N, --verbose. Exit status 1 on any mismatch.
#include "fuzz_cli.hpp"

int main(int argc, char** argv) {
  fz::registry reg;
  fz::register_part0(reg);
  fz::register_part1(reg);
  fz::register_part2(reg);
  fz::suite s = fz::elementwise_suite(reg);
  fz::options opt;
  fz::cli_info info;
  info.program = "fuzz_elementwise";
  info.agree = "fused == unfused";
  info.negative_strides_flag = true;
  return fz::run_cli(argc, argv, info, {s}, opt);
}
