// The fuzzers' shared command line and driver loop (fuzz_cli.hpp).
#include "fuzz_cli.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace fz {

std::uint64_t ci_seed(std::uint64_t ci_base, int case_id, int k) {
  return splitmix64(ci_base + std::uint64_t(case_id) * 0x100000ULL + std::uint64_t(k));
}

namespace {

std::uint64_t parse_u64(const char* s) { return std::strtoull(s, nullptr, 0); }

void usage(const cli_info& info, const std::vector<suite>& suites) {
  const bool families = suites.size() > 1;
  std::printf("usage: %s [--draws N] [--seconds N [--master-seed S]] [--case K] [--seed S]%s\n"
              "       [--inject]%s [--max-failures N] [--verbose] [--list]\n"
              "  default            regression draws, then N fixed-seed draws per case (",
              info.program, families ? " [--family NAME]" : "", info.negative_strides_flag ? " [--negative-strides]" : "");
  for (std::size_t i = 0; i < suites.size(); ++i)
    std::printf("%s%s%d", i ? ", " : "", families ? (std::string(suites[i].name) + " ").c_str() : "",
                suites[i].default_draws);
  std::printf(")\n"
              "  --seconds N        random cases and seeds until N seconds have passed\n"
              "  --case K --seed S  replay one draw (verbose)\n"
              "  --inject           perturb one result per draw (must fail)\n");
  if (info.negative_strides_flag) std::printf("  --negative-strides also draw reversed views (negative strides)\n");
  if (families) {
    std::printf("  --family NAME      only the cases of one family:");
    for (const auto& s : suites) std::printf(" %s", s.name);
    std::printf(" (--case and --seed need it)\n");
  }
  if (*info.extra_usage) std::printf("%s\n", info.extra_usage);
}

}  // namespace

int run_cli(int argc, char** argv, const cli_info& info, const std::vector<suite>& suites, options& opt) {
  int draws = -1, only_case = -1, max_failures = 10;
  double seconds = 0;
  bool have_seed = false, list = false, have_master = false;
  std::uint64_t seed = 0, master = 0;
  std::string family;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage(info, suites);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--draws") draws = std::atoi(value());
    else if (a == "--seconds") seconds = std::atof(value());
    else if (a == "--case") only_case = std::atoi(value());
    else if (a == "--seed") seed = parse_u64(value()), have_seed = true;
    else if (a == "--master-seed") master = parse_u64(value()), have_master = true;
    else if (a == "--max-failures") max_failures = std::atoi(value());
    else if (a == "--family" && suites.size() > 1) family = value();
    else if (a == "--inject") opt.inject = true;
    else if (a == "--negative-strides" && info.negative_strides_flag) opt.negative_strides = true;
    else if (a == "--verbose") opt.verbose = true;
    else if (a == "--list") list = true;
    else {
      usage(info, suites);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  std::vector<const suite*> chosen;
  for (const auto& s : suites)
    if (family.empty() || family == s.name) chosen.push_back(&s);
  if (chosen.empty()) {
    std::printf("fuzz: no family %s\n", family.c_str());
    return 2;
  }
  if (only_case >= 0 && chosen.size() > 1) {
    std::puts("fuzz: --case needs --family");
    return 2;
  }
  for (const suite* s : chosen) {
    const int ncases = int(s->cases->cases.size());
    for (int k = 0; k < ncases; ++k)
      if (!s->cases->cases[std::size_t(k)].run) {
        std::printf("fuzz: case %d is not registered (the case translation units are out of date?)\n", k);
        return 2;
      }
    if (only_case >= ncases) {
      std::printf("fuzz: no case %d (%d cases)\n", only_case, ncases);
      return 2;
    }
  }
  const bool families = suites.size() > 1;
  if (list) {
    for (const suite* s : chosen)
      for (const auto& c : s->cases->cases)
        std::printf("%s%scase %d: %s\n", families ? s->name : "", families ? " " : "", c.id, c.info);
    return 0;
  }
  auto run_one = [&](const suite& s, int k, std::uint64_t sd) {
    const auto& c = s.cases->cases[std::size_t(k)];
    return c.run(sd, c, opt);
  };

  if (have_seed) {  // replay
    if (only_case < 0) {
      std::puts("fuzz: --seed needs --case");
      return 2;
    }
    opt.verbose = true;
    const bool ok = run_one(*chosen[0], only_case, seed);
    std::printf("replay: %s\n", ok ? info.agree : "MISMATCH");
    return ok ? 0 : 1;
  }

  int status = 0;
  for (const suite* sp : chosen) {
    const suite& s = *sp;
    const int ncases = int(s.cases->cases.size());
    const int n_draws = draws >= 0 ? draws : s.default_draws;
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    long long total = 0, failures = 0;
    std::vector<int> failed_cases;
    auto record = [&](int k, bool ok) {
      ++total;
      if (!ok) {
        ++failures;
        if (std::find(failed_cases.begin(), failed_cases.end(), k) == failed_cases.end()) failed_cases.push_back(k);
      }
      return failures < max_failures;
    };
    if (seconds > 0) {
      if (!have_master) master = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
      // with several families each gets its share of the time
      const double share = seconds / double(chosen.size());
      std::printf("fuzz: %s%slong mode, %.0f s, master seed 0x%016llx\n", families ? s.name : "", families ? ": " : "",
                  share, (unsigned long long)master);
      rng pick(master);
      while (elapsed() < share) {
        const int k = only_case >= 0 ? only_case : int(pick.below(std::uint64_t(ncases)));
        if (!record(k, run_one(s, k, pick.next()))) break;
      }
    } else {
      bool go = true;
      for (const auto& g : s.regressions) {
        if (!go) break;
        if (g.case_id >= ncases || (only_case >= 0 && g.case_id != only_case)) continue;
        go = record(g.case_id, run_one(s, g.case_id, g.seed));
      }
      for (int k = 0; k < ncases && go; ++k) {
        if (only_case >= 0 && k != only_case) continue;
        for (int j = 0; j < n_draws && go; ++j) go = record(k, run_one(s, k, ci_seed(s.ci_base, k, j)));
      }
    }
    std::printf("fuzz: %s%s%lld draws over %d case(s) in %.2f s: %lld mismatch(es)", families ? s.name : "",
                families ? ": " : "", total, only_case >= 0 ? 1 : ncases, elapsed(), failures);
    if (!failed_cases.empty()) {
      std::printf(" in case(s)");
      for (int k : failed_cases) std::printf(" %d", k);
    }
    std::printf("\n");
    if (s.summary) s.summary();
    std::fflush(stdout);
    if (failures) status = 1;
  }
  return status;
}

}  // namespace fz
