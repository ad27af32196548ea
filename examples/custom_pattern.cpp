// custom_pattern: adding a fusion rule, a kernel and a cost rule from user
// code, without editing fusor.
//
// The rule recognises relu(x * s + b) with a run-time scalar s and a
// per-column bias b ("scale-bias-relu", common after a quantized matmul) and
// runs it with the user's own kernel. Everything else keeps fusor's library.
#include <fusor/fusor.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

// example-begin custom-rule
// 1. The pattern: relu(add(mul(scalar, x), b)) with placeholders _1 (the
//    scalar), _2 (x) and _3 (b). Canonical operand order puts scalars before
//    views and views before nodes, but the matcher also tries swapped
//    operands of commutative ops, so either spelling matches.
template <class T>
struct is_scalar_pred : std::bool_constant<fusor::is_scalar_v<T>> {};
using scale_bias_relu_pattern =
    fusor::node<fusor::op::relu,
                fusor::node<fusor::op::add, fusor::node<fusor::op::mul, fusor::placeholder_if<1, is_scalar_pred>, fusor::_2>,
                            fusor::_3>>;

// 2. The kernel family: fusor calls run(executor, expr, outputs) with the
//    matched expression (operands that other kernels produce are already
//    views). This one is a plain host loop over a rank-2 output.
struct scale_bias_relu_kernel {
  static constexpr const char* name = "user scale_bias_relu";
  template <class E, class Outs>
  static void run(const fusor::host_executor&, const E& e, const Outs& outs) {
    const auto s = fusor::capture<1, scale_bias_relu_pattern>(e).value;
    const auto& x = fusor::capture<2, scale_bias_relu_pattern>(e);
    const auto& b = fusor::capture<3, scale_bias_relu_pattern>(e);
    const auto& y = std::get<0>(outs);
    for (fusor::index_t i = 0; i < y.extent(0); ++i)
      for (fusor::index_t j = 0; j < y.extent(1); ++j) {
        const float v = s * x.data()[i * x.stride(0) + j * x.stride(1)] + b.data()[j * b.stride(0)];
        y.data()[i * y.stride(0) + j * y.stride(1)] = v > 0.0f || v != v ? v : 0.0f;
      }
  }
};

// 3. The rule: what it matches, what it absorbs (nothing beyond the pattern),
//    its kernel, and its own cost rule (the same bytes as fusor's estimate,
//    but no launch overhead: it runs inline on the calling thread).
struct scale_bias_relu_rule {
  static constexpr const char* name = "scale_bias_relu";
  using kernel = scale_bias_relu_kernel;
  template <class E>
  static constexpr bool matches = fusor::matches_v<scale_bias_relu_pattern, E> && fusor::rank_v<E> == 2;
  template <class P>
  static constexpr bool absorbs = fusor::is_node_v<P> && !fusor::is_view_v<P>;
  template <class X>
  static constexpr fusor::cost::estimate estimate(const fusor::device_model& m, double n) {
    fusor::cost::estimate e = fusor::cost::group_estimate<X>(m, n);
    e.seconds -= m.launch_seconds;
    return e;
  }
};
using my_policy = fusor::for_model<fusor::with_rules<scale_bias_relu_rule>, fusor::models::generic_cpu>;
// example-end custom-rule

int main() {
  const int rows = 64, cols = 32;
  std::vector<float> xs(rows * cols), bs(cols), mine(rows * cols), ref(rows * cols);
  for (int i = 0; i < rows * cols; ++i) xs[i] = float(i % 17) - 8.0f;
  for (int j = 0; j < cols; ++j) bs[j] = 0.25f * float(j % 5) - 0.5f;
  auto x = fusor::host_view(xs.data(), rows, cols);
  auto b = fusor::host_view(bs.data(), cols);
  auto y = fusor::relu(x * 0.5f + b);

  static_assert(std::is_same_v<fusor::root_rule_t<decltype(y), my_policy>, scale_bias_relu_rule>);
  std::fputs(fusor::explain<my_policy>(y).c_str(), stdout);
  const auto r = fusor::run(fusor::host_view(mine.data(), rows, cols), y, fusor::with_policy<my_policy>(fusor::host()));
  fusor::run(fusor::host_view(ref.data(), rows, cols), y, fusor::unfused());
  const bool same = std::memcmp(mine.data(), ref.data(), sizeof(float) * mine.size()) == 0;
  std::printf("user kernel launches: %zu; equal to fusor's unfused reference: %s\n", r.kernels, same ? "yes" : "NO");
  return same ? 0 : 1;
}
