// Must not compile, once per marked line: every public factory given
// something that is not a fusor expression (a std::vector, a pointer, a
// __half value, a plain int as executor) stops with a message that starts
// with `fusor: <op>:` on that line, never with "no matching function".
// Checked by check_diagnostics.py (ctest fail.operand_diagnostics): each
// line with an "expect" comment must produce a static_assert whose message
// starts with the comment's text, in an instantiation required from that
// line, and no line may produce any other error.
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
void unary() { (void)fusor::relu(buf); }  // expect: fusor: relu: an operand is not a fusor expression
void gelu() { (void)fusor::gelu(buf); }  // expect: fusor: gelu: an operand is not a fusor expression
void leaky() { (void)fusor::leaky_relu(ptr, 0.1f); }  // expect: fusor: leaky_relu: an operand is not a fusor expression
void hsig() { (void)fusor::hardsigmoid(buf); }  // expect: fusor: hardsigmoid: an operand is not a fusor expression
void binary() { (void)fusor::max(x, ptr); }  // expect: fusor: max: an operand is not a fusor expression
void power() { (void)fusor::pow(buf, x); }  // expect: fusor: pow: an operand is not a fusor expression
void plus() { (void)(x + buf); }  // expect: fusor: operator+ (add): an operand is not a fusor expression or a number
void times() { (void)(half_value * x); }  // expect: fusor: operator* (mul): an operand is not a fusor expression or a number
void minus() { (void)(ptr - x); }  // expect: fusor: operator- (sub): an operand is not a fusor expression or a number
void divide() { (void)(x / buf); }  // expect: fusor: operator/ (div): an operand is not a fusor expression or a number
void clip_lo() { (void)fusor::clip(x, buf, 1.0f); }  // expect: fusor: clip: an operand is not a fusor expression
void where_cond() { (void)fusor::where(buf, x, 0.0f); }  // expect: fusor: where: an operand is not a fusor expression
void mat() { (void)fusor::materialize(buf); }  // expect: fusor: materialize: an operand is not a fusor expression
void fused() { (void)fusor::fuse(ptr); }  // expect: fusor: fuse: an operand is not a fusor expression
void tagged() { (void)fusor::tag<Id>(buf); }  // expect: fusor: tag: an operand is not a fusor expression
void sibs() { (void)fusor::siblings(x, buf); }  // expect: fusor: siblings: an operand is not a fusor expression

// Reductions and normalizations.
void reduce() { (void)fusor::sum(buf, {1}); }  // expect: fusor: sum: an operand is not a fusor expression
void reduce_mean() { (void)fusor::mean<1>(ptr, {1}, false); }  // expect: fusor: mean: an operand is not a fusor expression
void smax() { (void)fusor::softmax(buf, -1); }  // expect: fusor: softmax: an operand is not a fusor expression
void lsmax() { (void)fusor::log_softmax(buf); }  // expect: fusor: log_softmax: an operand is not a fusor expression
void mse() { (void)fusor::mse_loss(x, buf); }  // expect: fusor: mse_loss: an operand is not a fusor expression
void ln_x() { (void)fusor::layer_norm(buf, vec, vec); }  // expect: fusor: layer_norm: an operand is not a fusor expression
void ln_gamma() { (void)fusor::layer_norm(x, buf, nullptr, -1, 1e-5f); }  // expect: fusor: layer_norm: an operand is not a fusor expression
void rms() { (void)fusor::rms_norm(x, ptr); }  // expect: fusor: rms_norm: an operand is not a fusor expression
void ln_only_x() { (void)fusor::layer_norm(x); }  // expect: fusor: layer_norm(x, gamma, beta, axis, eps): gamma and beta come 2nd and 3rd
void ln_axis_2nd() { (void)fusor::layer_norm(x, -1); }  // expect: fusor: layer_norm(x, gamma, beta, axis, eps): gamma and beta come 2nd and 3rd
void rms_only_x() { (void)fusor::rms_norm(x); }  // expect: fusor: rms_norm(x, gamma, eps, axis): gamma comes 2nd
void bn_x() { (void)fusor::batch_norm(buf, fusor::batch_norm_params{vec, vec, vec, vec}); }  // expect: fusor: batch_norm: an operand is not a fusor expression
void bn_param() { (void)fusor::batch_norm(img, fusor::batch_norm_params{vec, buf, vec, vec}); }  // expect: fusor: batch_norm: an operand is not a fusor expression
void inorm() { (void)fusor::instance_norm(img, buf, nullptr); }  // expect: fusor: instance_norm: an operand is not a fusor expression
void mpool() { (void)fusor::max_pool2d(buf, {.kernel = {2, 2}}); }  // expect: fusor: max_pool2d: an operand is not a fusor expression
void mpool_idx() { (void)fusor::max_pool2d_indices(ptr, {.kernel = {2, 2}}); }  // expect: fusor: max_pool2d_indices: an operand is not a fusor expression
void apool() { (void)fusor::avg_pool2d(ptr, {.kernel = {2, 2}}); }  // expect: fusor: avg_pool2d: an operand is not a fusor expression
void gpool() { (void)fusor::global_average_pool(buf); }  // expect: fusor: global_average_pool: an operand is not a fusor expression
void gnorm() { (void)fusor::group_norm(buf, 2, nullptr, nullptr); }  // expect: fusor: group_norm: an operand is not a fusor expression
void amax() { (void)fusor::argmax(buf, 1); }  // expect: fusor: argmax: an operand is not a fusor expression
void gath() { (void)fusor::gather(x, buf, 0); }  // expect: fusor: gather: an operand is not a fusor expression
void gathe() { (void)fusor::gather_elements(buf, x, 0); }  // expect: fusor: gather_elements: an operand is not a fusor expression
void rsz() { (void)fusor::resize(buf, {.scale = {2, 2}}); }  // expect: fusor: resize: an operand is not a fusor expression
void csum() { (void)fusor::cumsum(buf, 0); }  // expect: fusor: cumsum: an operand is not a fusor expression
void ohot() { (void)fusor::one_hot(buf, 3); }  // expect: fusor: one_hot: an operand is not a fusor expression
void ctr() { (void)fusor::conv_transpose2d(img, buf); }  // expect: fusor: conv_transpose2d: an operand is not a fusor expression
void tk() { (void)fusor::topk(buf, 2); }  // expect: fusor: topk: an operand is not a fusor expression
void tki() { (void)fusor::topk_indices(ptr, 2); }  // expect: fusor: topk_indices: an operand is not a fusor expression
void lnm() { (void)fusor::layer_norm_mean(buf); }  // expect: fusor: layer_norm_mean: an operand is not a fusor expression
void lni() { (void)fusor::layer_norm_inv_std_dev(ptr, -1, 1e-5f); }  // expect: fusor: layer_norm_inv_std_dev: an operand is not a fusor expression
void padb() { (void)fusor::pad(buf, {1, 1}); }  // expect: fusor: pad: an operand is not a fusor expression
void cat() { (void)fusor::concat(0, x, buf); }  // expect: fusor: concat: an operand is not a fusor expression

// Contractions and attention.
void mm() { (void)fusor::matmul(x, buf); }  // expect: fusor: matmul: an operand is not a fusor expression
void lin() { (void)fusor::linear(x, w, buf); }  // expect: fusor: linear: an operand is not a fusor expression
void gm() { (void)fusor::gemm(x, ptr, nullptr, {.trans_b = true}); }  // expect: fusor: gemm: an operand is not a fusor expression
void conv() { (void)fusor::conv2d(img, buf, nullptr, {.padding = {1, 1}}); }  // expect: fusor: conv2d: an operand is not a fusor expression
void dwconv() { (void)fusor::depthwise_conv2d(buf, kernel); }  // expect: fusor: depthwise_conv2d: an operand is not a fusor expression
void tr() { (void)fusor::transpose(buf); }  // expect: fusor: transpose: an operand is not a fusor expression
void sdpa() { (void)fusor::scaled_dot_product_attention(qkv, qkv, buf, {.causal = true}); }  // expect: fusor: scaled_dot_product_attention: an operand is not a fusor expression
void mha() { (void)fusor::multi_head_attention(buf, fusor::attention_weights{w, w, w, w, nullptr, nullptr, nullptr, nullptr}, {.heads = 2}); }  // expect: fusor: multi_head_attention: an operand is not a fusor expression
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
