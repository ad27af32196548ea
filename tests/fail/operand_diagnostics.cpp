// Must not compile, once per marked line: every public factory given
// something that is not a fusor expression (a std::vector, a pointer, a
// __half value, a plain int as executor) stops with a message that starts
// with `fusor: <op>:` on that line, never with "no matching function".
// Checked by check_diagnostics.py --registry (ctest fail.operand_diagnostics):
// each line with an "expect" comment must produce a static_assert whose
// message starts with the comment's text, in an instantiation required from
// that line, and no line may produce any other error. --registry adds one
// such line per op of include/fusor/ops/registry.hpp (its misuse column,
// over the names declared below); this file keeps the operators, the hints,
// the misuses of a second operand or of argument order, views, run and the
// inspection functions.
#include <fusor/fusor.hpp>

#include <memory>
#include <vector>

namespace {
std::vector<float> buf(4096);
auto x = fusor::host_view(buf.data(), 4, 8);
auto w = fusor::host_view(buf.data(), 8, 8);
auto img = fusor::host_view(buf.data(), 1, 2, 4, 4);
auto kernel = fusor::host_view(buf.data(), 2, 2, 3, 3);
auto qkv = fusor::host_view(buf.data(), 1, 2, 4, 8);
auto vec = fusor::host_view(buf.data(), 2);
float* ptr = buf.data();
__half half_value{};
struct Id;
}  // namespace

// Elementwise functions and operators.
void max3() { (void)fusor::max(buf, x, x); }  // expect: fusor: max: an operand is not a fusor expression
void min3() { (void)fusor::min(x, 1.0f, ptr); }  // expect: fusor: min: an operand is not a fusor expression
void power() { (void)fusor::pow(buf, x); }  // expect: fusor: pow: an operand is not a fusor expression
void plus() { (void)(x + buf); }  // expect: fusor: operator+ (add): an operand is not a fusor expression or a number
void times() { (void)(half_value * x); }  // expect: fusor: operator* (mul): an operand is not a fusor expression or a number
void minus() { (void)(ptr - x); }  // expect: fusor: operator- (sub): an operand is not a fusor expression or a number
void divide() { (void)(x / buf); }  // expect: fusor: operator/ (div): an operand is not a fusor expression or a number
void mat() { (void)fusor::materialize(buf); }  // expect: fusor: materialize: an operand is not a fusor expression
void fused() { (void)fusor::fuse(ptr); }  // expect: fusor: fuse: an operand is not a fusor expression
void tagged() { (void)fusor::tag<Id>(buf); }  // expect: fusor: tag: an operand is not a fusor expression
void sibs() { (void)fusor::siblings(x, buf); }  // expect: fusor: siblings: an operand is not a fusor expression

// Reductions and normalizations.
void reduce_mean() { (void)fusor::mean<1>(ptr, {1}, false); }  // expect: fusor: mean: an operand is not a fusor expression
void ln_gamma() { (void)fusor::layer_norm(x, buf, nullptr, -1, 1e-5f); }  // expect: fusor: layer_norm: an operand is not a fusor expression
void ln_only_x() { (void)fusor::layer_norm(x); }  // expect: fusor: layer_norm(x, gamma, beta, axis, eps): gamma and beta come 2nd and 3rd
void ln_axis_2nd() { (void)fusor::layer_norm(x, -1); }  // expect: fusor: layer_norm(x, gamma, beta, axis, eps): gamma and beta come 2nd and 3rd
void rms_only_x() { (void)fusor::rms_norm(x); }  // expect: fusor: rms_norm(x, gamma, eps, axis): gamma comes 2nd
void bn_param() { (void)fusor::batch_norm(img, fusor::batch_norm_params{vec, buf, vec, vec}); }  // expect: fusor: batch_norm: an operand is not a fusor expression

// Contractions and attention.
void mha_w() { (void)fusor::multi_head_attention(x, fusor::attention_weights{w, buf, w, w, nullptr, nullptr, nullptr, nullptr}, {.heads = 2}); }  // expect: fusor: multi_head_attention: an operand is not a fusor expression

// Views, run and the inspection functions.
void view() { (void)fusor::host_view(buf, 4, 8); }  // expect: fusor: host_view: the first argument is not a pointer
void dview() { (void)fusor::device_view(std::make_unique<float[]>(8), 8); }  // expect: fusor: device_view: the first argument is not a pointer
void run_e() { fusor::run(x, buf, fusor::host()); }  // expect: fusor: run: an operand is not a fusor expression
void run_out() { fusor::run(buf, x, fusor::host()); }  // expect: fusor: run: an operand is not a fusor expression
void run_ex() { fusor::run(x, x, 0); }  // expect: fusor: run: the third argument is not a fusor executor
void expl() { (void)fusor::explain(buf); }  // expect: fusor: explain: the argument is not a fusor expression
void count() { (void)fusor::kernel_count<std::vector<float>>; }  // expect: fusor: kernel_count<E>: E is not the type of a fusor expression
void canon() { (void)fusor::canonicalize(ptr); }  // expect: fusor: canonicalize: the argument is not a fusor expression
