// PTX check: two reduction groups (and pooling, below), each one kernel entry: a softmax over the
// last axis, and sum(relu(x) * 2) over axis 1 with its elementwise prologue
// fused in (compiled, never called).
#include <fusor/fusor.hpp>

static_assert(fusor::kernel_count<decltype(fusor::softmax(fusor::device_view((const float*)nullptr, 2, 3), -1))> == 1);
static_assert(fusor::kernel_count<decltype(fusor::sum(fusor::relu(fusor::device_view((const float*)nullptr, 2, 3)) * 2.0f,
                                                      {1}, true))> == 1);

void launch_reductions(cudaStream_t s, const float* x, float* y, long rows, long cols) {
  auto xv = fusor::device_view(x, rows, cols);
  fusor::run(fusor::device_view(y, rows, cols), fusor::softmax(xv, -1), fusor::cuda(s));
  fusor::run(fusor::device_view(y, rows, 1), fusor::sum(fusor::relu(xv) * 2.0f, {1}, true), fusor::cuda(s));
}

// Pooling (the row-reduction family's pool kernel): ResNet's stem pool with
// its elementwise producer (batch_norm's affine form and relu) and a residual
// consumer in one entry, an NHWC avg_pool2d over half in another, and the
// stem pool's Indices (max_pool2d_indices, int64) in a third; each thread's
// output index is 64-bit.
static_assert(fusor::kernel_count<decltype(fusor::max_pool2d(fusor::relu(fusor::device_view((const float*)nullptr, 2, 3, 8, 8)),
                                                             {.kernel = {3, 3}}))> == 1);

void launch_pooling(cudaStream_t s, const float* x, const float* scale, const float* shift, const float* r, float* y,
                    const __half* h, __half* hy, long long* iy, long n, long c, long hw) {
  auto xv = fusor::device_view(x, n, c, hw, hw);
  auto sc = fusor::device_view(scale, c, 1, 1), sh = fusor::device_view(shift, c, 1, 1);
  const long o = (hw - 1) / 2 + 1;
  fusor::run(fusor::device_view(y, n, c, o, o),
             fusor::max_pool2d(fusor::relu(xv * sc + sh), {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}}) +
                 fusor::device_view(r, n, c, o, o),
             fusor::cuda(s));
  fusor::run(fusor::device_view(hy, n, o, o, c),
             fusor::avg_pool2d(fusor::device_view(h, n, hw, hw, c),
                               {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}, .layout = fusor::layout::nhwc}),
             fusor::cuda(s));
  fusor::run(fusor::device_view(reinterpret_cast<std::int64_t*>(iy), n, c, o, o),
             fusor::max_pool2d_indices(fusor::relu(xv * sc + sh), {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}}),
             fusor::cuda(s));
}

// group_norm (the row-normalization kernel over x with its channels split into
// groups) with a silu epilogue: one fused_rows entry.
void launch_group_norm(cudaStream_t s, const float* x, const float* scale, const float* shift, float* y, long n, long c,
                       long hw) {
  fusor::run(fusor::device_view(y, n, c, hw, hw),
             fusor::silu(fusor::group_norm(fusor::device_view(x, n, c, hw, hw), 4, fusor::device_view(scale, c),
                                           fusor::device_view(shift, c))),
             fusor::cuda(s));
}

// argmax over the last axis with its elementwise prologue: one fused_rows
// entry (an (index, value) accumulator through cub::WarpReduce / BlockReduce).
void launch_argmax(cudaStream_t s, const float* x, const float* b, std::int64_t* y, long rows, long cols) {
  fusor::run(fusor::device_view(y, rows, 1),
             fusor::argmax(fusor::device_view(x, rows, cols) * 0.5f + fusor::device_view(b, cols), -1), fusor::cuda(s));
}

// An embedding lookup scaled and plus a positional embedding: one fused_gather
// entry (the index read, then the row element), 64-bit output index.
void launch_embedding(cudaStream_t s, const std::int32_t* ids, const float* w, const float* pos, float* y, long b, long t,
                      long v, long d) {
  fusor::run(fusor::device_view(y, b, t, d),
             fusor::embedding(fusor::device_view(ids, b, t), fusor::device_view(w, v, d)) * 4.0f + fusor::device_view(pos, t, d),
             fusor::cuda(s));
}

// A U-Net decoder step: bilinear 2x upsampling of relu(x) plus a skip
// connection: one resize_rows entry (and the broadcast alternative, as above).
void launch_resize(cudaStream_t s, const float* x, const float* skip, float* y, long n, long c, long h, long w) {
  fusor::run(fusor::device_view(y, n, c, 2 * h, 2 * w),
             fusor::resize(fusor::relu(fusor::device_view(x, n, c, h, w)), {.scale = {2, 2}, .mode = fusor::resize_mode::linear}) +
                 fusor::device_view(skip, n, c, 2 * h, 2 * w),
             fusor::cuda(s));
}

// cumsum of a prologue with a scalar epilogue: one fused_rows entry.
void launch_cumsum(cudaStream_t s, const float* x, float* y, long rows, long cols) {
  fusor::run(fusor::device_view(y, rows, cols), fusor::cumsum(fusor::relu(fusor::device_view(x, rows, cols)), 1) * 2.0f,
             fusor::cuda(s));
}

// one_hot with label smoothing: one fused_outputs entry (one_hot_rows).
void launch_one_hot(cudaStream_t s, const std::int32_t* labels, float* y, long n, long k) {
  fusor::run(fusor::device_view(y, n, k), fusor::one_hot(fusor::device_view(labels, n), k) * 0.9f + 0.01f, fusor::cuda(s));
}

// a reflection pad of relu(x) scaled: one fused_outputs entry (pad_rows).
void launch_pad(cudaStream_t s, const float* x, float* y, long n, long c, long h, long w) {
  fusor::run(fusor::device_view(y, n, c, h + 2, w + 2),
             fusor::pad(fusor::relu(fusor::device_view(x, n, c, h, w)), {1, 1, 1, 1}, fusor::pad_mode::reflect, 0, {2, 3}) * 0.5f,
             fusor::cuda(s));
}

// a U-Net join of two producers under a relu: one fused_outputs entry (concat_rows).
void launch_concat(cudaStream_t s, const float* a, const float* b, float* y, long n, long c1, long c2, long h, long w) {
  fusor::run(fusor::device_view(y, n, c1 + c2, h, w),
             fusor::relu(fusor::concat(1, fusor::device_view(a, n, c1, h, w) * 2.0f, fusor::device_view(b, n, c2, h, w) + 1.0f)),
             fusor::cuda(s));
}

// torch.gather of relu(x) along the last dim, scaled: one fused_gather entry
// (gather_elements_rows).
void launch_gather_elements(cudaStream_t s, const float* x, const std::int64_t* idx, float* y, long rows, long cols, long k) {
  fusor::run(fusor::device_view(y, rows, k),
             fusor::gather_elements(fusor::relu(fusor::device_view(x, rows, cols)), fusor::device_view(idx, rows, k), -1) * 2.0f,
             fusor::cuda(s));
}

// a GAN generator step: relu(conv_transpose2d(relu(x), w, b)) with stride 2:
// one fused_outputs entry (conv_transpose_rows).
void launch_conv_transpose(cudaStream_t s, const float* x, const float* w, const float* b, float* y, long n, long c, long h,
                           long wd, long co) {
  fusor::run(fusor::device_view(y, n, co, 2 * h, 2 * wd),
             fusor::relu(fusor::conv_transpose2d(fusor::relu(fusor::device_view(x, n, c, h, wd)), fusor::device_view(w, c, co, 4, 4),
                                                 fusor::device_view(b, co), {.stride = {2, 2}, .padding = {1, 1, 1, 1}})),
             fusor::cuda(s));
}

// top-5 class scores and their indices of relu(logits) (MoE routing,
// classification): two fused_rows entries (topk_rows), values and indices.
void launch_topk(cudaStream_t s, const float* x, float* v, std::int64_t* i, long rows, long cols) {
  const auto xv = fusor::relu(fusor::device_view(x, rows, cols));
  fusor::run(fusor::outputs(fusor::device_view(v, rows, 5), fusor::device_view(i, rows, 5)),
             fusor::siblings(fusor::topk(xv, 5), fusor::topk_indices(xv, 5)), fusor::cuda(s));
}

// ONNX LayerNormalization's Mean and InvStdDev outputs as siblings: two
// fused_rows entries (norm_stat_rows), warp-reduced like layer_norm.
void launch_layer_norm_stats(cudaStream_t s, const float* x, float* mean, float* inv, long rows, long cols) {
  const auto xv = fusor::device_view(x, rows, cols);
  fusor::run(fusor::outputs(fusor::device_view(mean, rows, 1), fusor::device_view(inv, rows, 1)),
             fusor::siblings(fusor::layer_norm_mean(xv), fusor::layer_norm_inv_std_dev(xv, -1, 1e-5f)), fusor::cuda(s));
}
