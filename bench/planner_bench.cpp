/// @file bench/planner_bench.cpp
/// Planner decisions that change speed, not values (issue 18): a value of a
/// reduction's shape broadcast up into a larger consumer.
///
/// Cases (f32, NHWC; one JSON line per case and variant):
///   se_block     squeeze-excitation, as written:
///                x * sigmoid(linear(relu(linear(mean(x, {1, 2}), W1, b1)), W2, b2))
///                x: [N, H, W, C] = [8, 28, 28, 256], W1: [C/16, C], W2: [C, C/16]
///   reduced_scale  a GEMM epilogue scaled per row by a transcendental chain
///                of the row's mean:
///                linear(x, W, b) * sigmoid(tanh(mean(x, {1}) * 2) + erf(mean(...)))
///                x: [2048, 1024], W: [1024, 1024] (one mean, tagged)
/// Variants:
///   fused        fusor::run(..., host()): the plan as fusor makes it (the
///                chain on the reduced value runs in the reduction's kernel,
///                once per reduced element: reason producer_epilogue)
///   materialize  the same with fusor::materialize around the reduced-shape
///                value (the hand-made plan issue 18 compared against)
///   unfused      fusor::unfused(): one kernel per op
/// Timing: bench_common's interleaved rounds after a warmup; "seconds" is
/// each variant's minimum. Checks: fused == materialize == unfused bit for
/// bit (exit 1 otherwise), and the kernel counts.
///
/// Usage: bench_planner [--repeats R] [--quick]
#include "bench_common.hpp"

#include <fusor/fusor.hpp>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

using fusor_bench::json;

struct variant {
  std::string name;
  std::function<std::size_t()> run;
  double best = 1e30;
  std::size_t kernels = 0;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

int report(const char* name, std::vector<variant>& vs, const std::vector<std::vector<float>*>& outs, int repeats) {
  for (auto& v : vs) v.kernels = v.run();  // warmup and check
  bool ok = true;
  for (std::size_t i = 1; i < outs.size(); ++i) ok = ok && same_bits(*outs[0], *outs[i]);
  std::cout << json{{"bench", "planner"}, {"case", name}, {"check", "fused_materialize_unfused_bitwise"}, {"pass", ok}}.dump()
            << std::endl;
  fusor_bench::time_interleaved(vs, repeats, false);
  for (const auto& v : vs)
    std::cout << json{{"bench", "planner"},      {"case", name},       {"variant", v.name},
                      {"seconds", v.best},       {"kernels", v.kernels}, {"threads", fusor_bench::max_threads()},
                      {"repeats", repeats},      {"speedup_vs_fused", v.best / vs[0].best}}
                     .dump()
              << std::endl;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 10;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeats" && i + 1 < argc) repeats = int(fusor_bench::parse_positive(argv[++i]));
    else if (a == "--quick") quick = true;
    else {
      std::cerr << "usage: bench_planner [--repeats R] [--quick]\n";
      return 2;
    }
  }
  if (repeats < 1) repeats = 1;
  int status = 0;
  {
    const fusor::index_t N = quick ? 2 : 8, H = quick ? 7 : 28, W = H, C = quick ? 32 : 256, R = C / 16;
    const auto x = fusor_bench::random_vector(std::size_t(N * H * W * C), 1);
    const auto w1 = fusor_bench::random_vector(std::size_t(R * C), 2, -0.1f, 0.1f), b1 = fusor_bench::random_vector(std::size_t(R), 3);
    const auto w2 = fusor_bench::random_vector(std::size_t(C * R), 4, -0.3f, 0.3f), b2 = fusor_bench::random_vector(std::size_t(C), 5);
    struct xid {};
    const auto X = fusor::host_view(x.data(), N, H, W, C).with_id<xid>();
    const auto W1 = fusor::host_view(w1.data(), R, C), W2 = fusor::host_view(w2.data(), C, R);
    const auto B1 = fusor::host_view(b1.data(), R), B2 = fusor::host_view(b2.data(), C);
    const auto s = fusor::sigmoid(fusor::linear(fusor::relu(fusor::linear(fusor::mean<4>(X, {1, 2}), W1, B1)), W2, B2));
    const auto e = X * s;
    const auto em = X * fusor::materialize(s);
    std::vector<float> yf(x.size()), ym(x.size()), yu(x.size());
    const auto out = [&](std::vector<float>& y) { return fusor::host_view(y.data(), N, H, W, C); };
    std::vector<variant> vs{{"fused", [&] { return fusor::run(out(yf), e, fusor::host()).kernels; }},
                            {"materialize", [&] { return fusor::run(out(ym), em, fusor::host()).kernels; }},
                            {"unfused", [&] { return fusor::run(out(yu), e, fusor::unfused()).kernels; }}};
    status |= report("se_block", vs, {&yf, &ym, &yu}, repeats);
  }
  {
    const fusor::index_t M = quick ? 64 : 2048, K = quick ? 64 : 1024, Nc = K;
    const auto x = fusor_bench::random_vector(std::size_t(M * K), 6);
    const auto w = fusor_bench::random_vector(std::size_t(Nc * K), 7, -0.03f, 0.03f), b = fusor_bench::random_vector(std::size_t(Nc), 8);
    struct xid {};
    struct mid {};
    const auto X = fusor::host_view(x.data(), M, K).with_id<xid>();
    const auto Wv = fusor::host_view(w.data(), Nc, K);
    const auto B = fusor::host_view(b.data(), Nc);
    const auto m = fusor::tag<mid>(fusor::mean<2>(X, {1}));
    const auto f = fusor::sigmoid(fusor::tanh(m * 2.0f) + fusor::erf(m));
    const auto e = fusor::linear(X, Wv, B) * f;
    const auto em = fusor::linear(X, Wv, B) * fusor::materialize(f);
    std::vector<float> yf(std::size_t(M * Nc)), ym(yf.size()), yu(yf.size());
    const auto out = [&](std::vector<float>& y) { return fusor::host_view(y.data(), M, Nc); };
    std::vector<variant> vs{{"fused", [&] { return fusor::run(out(yf), e, fusor::host()).kernels; }},
                            {"materialize", [&] { return fusor::run(out(ym), em, fusor::host()).kernels; }},
                            {"unfused", [&] { return fusor::run(out(yu), e, fusor::unfused()).kernels; }}};
    status |= report("reduced_scale", vs, {&yf, &ym, &yu}, repeats);
  }
  return status;
}
