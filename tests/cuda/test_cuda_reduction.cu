// CUDA tests of the row-reduction family.
// (helpers and tolerances: test_cuda_common.cuh)
#include "test_cuda_common.cuh"

// ------------------------------------------------------------- reductions
// The row-reduction family on the GPU against the host twin. Device and
// host merge the 256 lane partials in different orders (cub::BlockReduce's
// warp-shuffle tree vs a pairwise tree), so they agree to rounding: sums
// within 1e-5 relative to sum|x| (test_reductions.cpp's bound), normalized
// elements within 1e-5 relative + 1e-6 absolute; NaN positions equal.

TEST_CASE("cuda: softmax, log_softmax, layer_norm + residual, rms_norm match host; row lengths 1..4097",
          "[cuda][reduction]") {
  const std::int64_t rows = GENERATE(1, 7, 300), cols = GENERATE(1, 33, 1025, 4097);
  CAPTURE(rows, cols);
  auto x = random_vector<float>(std::size_t(rows * cols), unsigned(rows * 7 + cols), -6.0f, 6.0f);
  if (rows > 1) {
    for (std::int64_t j = 0; j < cols; ++j) x[std::size_t(cols + j)] = -INFINITY;  // an all -inf row: NaN
    x[0] = NAN;
  }
  const auto g = random_vector<float>(std::size_t(cols), 3), b = random_vector<float>(std::size_t(cols), 4),
             res = random_vector<float>(std::size_t(rows * cols), 5);
  auto dx = on_device(x), dg = on_device(g), db = on_device(b), dr = on_device(res);
  stream_guard stream;
  device_buffer<float> dy(x.size());
  std::vector<float> host(x.size());
  const auto check = [&](auto make, std::size_t kernels) {
    fusor::run(host_v(host.data(), rows, cols), make(host_v, x.data(), g.data(), b.data(), res.data()), fusor::host());
    const auto r = fusor::run(dev_v(dy.ptr, rows, cols), make(dev_v, dx->ptr, dg->ptr, db->ptr, dr->ptr), fusor::cuda(stream.s));
    CHECK(r.kernels == kernels);
    stream.sync();
    require_close(dy.download(x.size()), host, 1e-5, 1e-6, nan_match::any);
  };
  check([&](auto v, auto* px, auto*, auto*, auto*) { return fusor::softmax(v(px, rows, cols), -1); }, 1);
  check([&](auto v, auto* px, auto*, auto*, auto*) { return fusor::log_softmax(v(px, rows, cols), 1); }, 1);
  check([&](auto v, auto* px, auto* pg, auto* pb, auto* pr) {
    return fusor::layer_norm(v(px, rows, cols), v(pg, cols), v(pb, cols)) + v(pr, rows, cols);
  }, 1);
  check([&](auto v, auto* px, auto* pg, auto*, auto*) { return fusor::rms_norm(v(px, rows, cols), v(pg, cols), 1e-6f); }, 1);
  // the decomposed softmax runs the softmax kernel
  check([&](auto v, auto* px, auto*, auto*, auto*) {
    const auto xv = v(px, rows, cols);
    const auto sh = xv - fusor::max_reduce(xv, {-1});
    return fusor::exp(sh) / fusor::sum(fusor::exp(sh), {-1});
  }, 1);
}

TEST_CASE("cuda: sum/max/logsumexp/prod/l1/log_sum over axis sets and a split long row (mse_loss) match host", "[cuda][reduction]") {
  stream_guard stream;
  SECTION("rank 3 over axes {0, 2}, keepdims") {
    const std::int64_t A = 5, B = 33, C = 257;
    const auto x = random_vector<float>(std::size_t(A * B * C), 21);
    auto dx = on_device(x);
    device_buffer<float> dy{std::size_t(B)};
    std::vector<float> host(static_cast<std::size_t>(B));
    auto make = [&](auto v, const float* p) { return fusor::sum(fusor::relu(v(p, A, B, C)) * 2.0f, {0, -1}); };
    fusor::run(host_v(host.data(), 1, B, 1), make(host_v, x.data()), fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, 1, B, 1), make(dev_v, dx->ptr), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_close(dy.download(std::size_t(B)), host, 1e-5, 1e-4, nan_match::any);
  }
  SECTION("prod, l1_norm, log_sum over the last axis (ONNX ReduceProd, ReduceL1, ReduceLogSum)") {
    const std::int64_t rows = 37, cols = 129;
    const auto x = random_vector<float>(std::size_t(rows * cols), 23, 0.5f, 1.5f);
    auto dx = on_device(x);
    device_buffer<float> dy{std::size_t(rows)};
    std::vector<float> host(static_cast<std::size_t>(rows));
    auto make = [&](auto v, const float* p) {
      const auto xv = v(p, rows, cols);
      return fusor::prod(xv, -1) + fusor::l1_norm(xv - 1.0f, -1) * fusor::log_sum(xv, -1);
    };
    fusor::run(host_v(host.data(), rows, 1), make(host_v, x.data()), fusor::host());
    fusor::run(dev_v(dy.ptr, rows, 1), make(dev_v, dx->ptr), fusor::cuda(stream.s));
    stream.sync();
    // (products of 129 factors: the summation orders differ, so relative error)
    require_close(dy.download(std::size_t(rows)), host, 1e-4, 1e-6, nan_match::any);
  }
  SECTION("mse_loss over 2^22 + 5 elements: split into chunks + a finalize") {
    const std::int64_t n = (std::int64_t(1) << 22) + 5;
    const auto a = random_vector<float>(std::size_t(n), 31), b = random_vector<float>(std::size_t(n), 32);
    auto da = on_device(a), db = on_device(b);
    device_buffer<float> dy(1);
    float host = 0;
    fusor::run(fusor::host_view(&host, fusor::extents<>{}), fusor::mse_loss(host_v(a.data(), n), host_v(b.data(), n)),
               fusor::host());
    const auto r = fusor::run(fusor::device_view(dy.ptr, fusor::extents<>{}),
                              fusor::mse_loss(dev_v(da->ptr, n), dev_v(db->ptr, n)), fusor::cuda(stream.s));
    CHECK(r.kernels == 2);
    stream.sync();
    require_close(dy.download(1), {host}, 1e-5, 0, nan_match::any);
  }
}


// ---------------------------------------------------------------- pooling
// One thread per output element runs the same window loop as the host (the
// same positions in the same order, add/div/max round-to-nearest on both
// sides): bitwise equal.
TEST_CASE("cuda: shape ops over computed values read the temporary through the view op", "[cuda][shape_ops]") {
  // relu(permute(softmax(x, 1)) * 2 + y), squeeze of a keepdims max: the
  // value's kernel, then its consumer reading the temporary re-strided
  // (ops/view_map.hpp); host and device kernels both.
  stream_guard stream;
  const std::int64_t N = 3, C = 65, L = 47;
  const auto x = random_vector<float>(std::size_t(N * C * L), 31);
  const auto y = random_vector<float>(std::size_t(N * L * C), 32);
  auto dx = on_device(x);
  auto dyin = on_device(y);
  device_buffer<float> dout{y.size()}, dmax{std::size_t(N * L)};
  std::vector<float> host(y.size()), host_max(std::size_t(N * L));
  auto make = [&](auto v, const float* px, const float* py) {
    return fusor::relu(fusor::permute(fusor::softmax(v(px, N, C, L), 1), {0, 2, 1}) * 2.0f + v(py, N, L, C));
  };
  auto make_max = [&](auto v, const float* px) { return fusor::squeeze(fusor::max_reduce(v(px, N, C, L), {1}), 1); };
  CHECK(fusor::run(host_v(host.data(), N, L, C), make(host_v, x.data(), y.data()), fusor::host()).kernels == 2);
  CHECK(fusor::run(host_v(host_max.data(), N, L), make_max(host_v, x.data()), fusor::host()).kernels == 2);
  CHECK(fusor::run(dev_v(dout.ptr, N, L, C), make(dev_v, dx->ptr, dyin->ptr), fusor::cuda(stream.s)).kernels == 2);
  CHECK(fusor::run(dev_v(dmax.ptr, N, L), make_max(dev_v, dx->ptr), fusor::cuda(stream.s)).kernels == 2);
  stream.sync();
  require_close(dout.download(y.size()), host, 1e-5, 1e-6, nan_match::any);
  require_bitwise(dmax.download(std::size_t(N * L)), host_max);
  // contiguous(): the permuted x copied row-major (a copy kernel), then read reshaped
  auto make_flat = [&](auto v, const float* px) {
    return fusor::reshape(fusor::contiguous(fusor::permute(v(px, N, C, L), {0, 2, 1})), fusor::shape<2>{N * L, C}) * 2.0f;
  };
  std::vector<float> host_flat(x.size());
  device_buffer<float> dflat{x.size()};
  CHECK(fusor::run(host_v(host_flat.data(), N * L, C), make_flat(host_v, x.data()), fusor::host()).kernels == 2);
  CHECK(fusor::run(dev_v(dflat.ptr, N * L, C), make_flat(dev_v, dx->ptr), fusor::cuda(stream.s)).kernels == 2);
  stream.sync();
  require_bitwise(dflat.download(x.size()), host_flat);
}

TEST_CASE("cuda: max_pool2d, avg_pool2d and max_pool2d_indices with producers and consumers match host bitwise",
          "[cuda][pooling]") {
  const std::int64_t N = 2, C = 5, H = 17, W = 13;
  const auto x = random_vector<float>(std::size_t(N * C * H * W), 61);
  const auto sc = random_vector<float>(std::size_t(C), 62), sh = random_vector<float>(std::size_t(C), 63);
  auto dx = on_device(x), dsc = on_device(sc), dsh = on_device(sh);
  stream_guard stream;
  for (const fusor::pool2d_params p : {fusor::pool2d_params{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}},
                                       fusor::pool2d_params{.kernel = {2, 3}, .stride = {2, 1}, .padding = {0, 1, 1, 1},
                                                            .dilation = {2, 1}, .ceil_mode = true},
                                       fusor::pool2d_params{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1},
                                                            .layout = fusor::layout::nhwc, .count_include_pad = true}}) {
    const bool nhwc = p.layout == fusor::layout::nhwc;
    const auto probe = fusor::shape_of(fusor::max_pool2d(fusor::host_view(x.data(), N, C, H, W), p));
    const std::int64_t OH = nhwc ? fusor::shape_of(fusor::max_pool2d(fusor::host_view(x.data(), N, H, W, C), p))[1] : probe[2];
    const std::int64_t OW = nhwc ? fusor::shape_of(fusor::max_pool2d(fusor::host_view(x.data(), N, H, W, C), p))[2] : probe[3];
    const std::size_t n = std::size_t(N * C * OH * OW);
    device_buffer<float> dy(n);
    std::vector<float> host(n);
    const auto check = [&](auto make) {
      auto out = [&](auto v, float* q) { return nhwc ? v(q, N, OH, OW, C) : v(q, N, C, OH, OW); };
      fusor::run(out(host_v, host.data()), make(host_v, x.data(), sc.data(), sh.data()), fusor::host());
      CHECK(fusor::run(out(dev_v, dy.ptr), make(dev_v, dx->ptr, dsc->ptr, dsh->ptr), fusor::cuda(stream.s)).kernels == 1);
      stream.sync();
      require_bitwise(dy.download(n), host);
    };
    check([&](auto v, const float* px, const float* ps, const float* pb) {
      const auto xv = nhwc ? v(px, N, H, W, C) : v(px, N, C, H, W);
      const auto s = nhwc ? v(ps, 1, 1, 1, C) : v(ps, 1, C, 1, 1);
      const auto b = nhwc ? v(pb, 1, 1, 1, C) : v(pb, 1, C, 1, 1);
      return fusor::relu(fusor::max_pool2d(fusor::relu(xv * s + b), p)) * 2.0f;
    });
    check([&](auto v, const float* px, const float*, const float*) {
      return fusor::avg_pool2d(nhwc ? v(px, N, H, W, C) : v(px, N, C, H, W), p) - 1.0f;
    });
    // max_pool2d_indices (int64, ONNX MaxPool's Indices) of the same windows: exact.
    {
      const auto indices = [&](auto v, const float* px, const float* ps, const float* pb) {
        const auto xv = nhwc ? v(px, N, H, W, C) : v(px, N, C, H, W);
        const auto s = nhwc ? v(ps, 1, 1, 1, C) : v(ps, 1, C, 1, 1);
        const auto b = nhwc ? v(pb, 1, 1, 1, C) : v(pb, 1, C, 1, 1);
        return fusor::max_pool2d_indices(fusor::relu(xv * s + b), p);
      };
      auto out_i = [&](auto v, std::int64_t* q) { return nhwc ? v(q, N, OH, OW, C) : v(q, N, C, OH, OW); };
      device_buffer<std::int64_t> di(n);
      std::vector<std::int64_t> hi(n);
      fusor::run(out_i(host_v, hi.data()), indices(host_v, x.data(), sc.data(), sh.data()), fusor::host());
      CHECK(fusor::run(out_i(dev_v, di.ptr), indices(dev_v, dx->ptr, dsc->ptr, dsh->ptr), fusor::cuda(stream.s)).kernels == 1);
      stream.sync();
      require_bitwise(di.download(n), hi);
    }
  }
}

// group_norm: the row-normalization kernel over a channel-split space; device
// and host merge the Welford partials in different orders (see the top of
// this file): 1e-5 relative + 1e-6 absolute, as layer_norm.
TEST_CASE("cuda: group_norm with a prologue and a silu + residual epilogue matches host", "[cuda][group_norm]") {
  const std::int64_t N = 3, C = 32, H = 9, W = 11;
  const auto x = random_vector<float>(std::size_t(N * C * H * W), 71), r = random_vector<float>(x.size(), 72);
  const auto sc = random_vector<float>(std::size_t(C), 73), sh = random_vector<float>(std::size_t(C), 74);
  auto dx = on_device(x), dr = on_device(r), dsc = on_device(sc), dsh = on_device(sh);
  stream_guard stream;
  device_buffer<float> dy(x.size());
  std::vector<float> host(x.size());
  for (std::int64_t G : {1, 8, 32}) {
    CAPTURE(G);
    auto make = [&](auto v, const float* px, const float* pr, const float* ps, const float* pb) {
      return fusor::silu(fusor::group_norm(v(px, N, C, H, W) * 0.5f, G, v(ps, C), v(pb, C))) + v(pr, N, C, H, W);
    };
    fusor::run(host_v(host.data(), N, C, H, W), make(host_v, x.data(), r.data(), sc.data(), sh.data()), fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, N, C, H, W), make(dev_v, dx->ptr, dr->ptr, dsc->ptr, dsh->ptr), fusor::cuda(stream.s))
              .kernels == 1);
    stream.sync();
    require_close(dy.download(x.size()), host, 1e-5, 1e-6, nan_match::any);
  }
}

// argmax / argmin: comparisons only, and the accumulator carries the index,
// so the warp / block merge order cannot change the answer: equal to host.
TEST_CASE("cuda: argmax and argmin (ties, NaN, select_last_index) equal host", "[cuda][arg_reduce]") {
  stream_guard stream;
  for (std::int64_t cols : {1, 33, 1025, 5000}) {
    CAPTURE(cols);
    const std::int64_t rows = 41;
    auto x = random_vector<float>(std::size_t(rows * cols), unsigned(cols));
    for (std::size_t i = 0; i < x.size(); i += 3) x[i] = std::round(x[i] * 2.0f);  // ties
    if (cols > 2) x[std::size_t(cols + 2)] = NAN;
    auto dx = on_device(x);
    device_buffer<std::int64_t> dy{static_cast<std::size_t>(rows)};
    std::vector<std::int64_t> host(static_cast<std::size_t>(rows));
    for (bool last : {false, true}) {
      fusor::run(host_v(host.data(), rows, 1), fusor::argmax(host_v(x.data(), rows, cols) * 2.0f, 1, true, last), fusor::host());
      CHECK(fusor::run(dev_v(dy.ptr, rows, 1), fusor::argmax(dev_v(dx->ptr, rows, cols) * 2.0f, 1, true, last),
                       fusor::cuda(stream.s))
                .kernels == 1);
      stream.sync();
      CHECK(dy.download(std::size_t(rows)) == host);
      fusor::run(host_v(host.data(), rows, 1), fusor::argmin(host_v(x.data(), rows, cols), -1, true, last), fusor::host());
      fusor::run(dev_v(dy.ptr, rows, 1), fusor::argmin(dev_v(dx->ptr, rows, cols), -1, true, last), fusor::cuda(stream.s));
      stream.sync();
      CHECK(dy.download(std::size_t(rows)) == host);
    }
  }
}

// gather / embedding: copies plus IEEE-exact epilogue ops, equal to host bit
// for bit; an out-of-range index is a device_error after the launch.
TEST_CASE("cuda: embedding + positional embedding matches host bitwise; a bad index is a device_error",
          "[cuda][gather]") {
  const std::int64_t V = 1000, D = 64, B = 3, T = 17;
  const auto w = random_vector<float>(std::size_t(V * D), 81), pos = random_vector<float>(std::size_t(T * D), 82);
  std::vector<std::int32_t> ids(std::size_t(B * T));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t((i * 37 + 5) % std::size_t(V)) - (i % 2 ? std::int32_t(V) : 0);
  auto dw = on_device(w), dpos = on_device(pos);
  auto dids = on_device(ids);
  stream_guard stream;
  const std::size_t n = std::size_t(B * T * D);
  device_buffer<float> dy(n);
  std::vector<float> host(n);
  auto make = [&](auto v, const std::int32_t* pi, const float* pw, const float* pp) {
    return fusor::embedding(v(pi, B, T), v(pw, V, D)) * 4.0f + v(pp, T, D);
  };
  fusor::run(host_v(host.data(), B, T, D), make(host_v, ids.data(), w.data(), pos.data()), fusor::host());
  CHECK(fusor::run(dev_v(dy.ptr, B, T, D), make(dev_v, dids->ptr, dw->ptr, dpos->ptr), fusor::cuda(stream.s)).kernels == 1);
  stream.sync();
  require_bitwise(dy.download(n), host);
  ids[5] = std::int32_t(V);
  auto bad = on_device(ids);
  CHECK_THROWS_AS(fusor::run(dev_v(dy.ptr, B, T, D), make(dev_v, bad->ptr, dw->ptr, dpos->ptr), fusor::cuda(stream.s)),
                  fusor::device_error);
}

// resize: nearest copies; linear mixes in double on both sides (the same
// operations in the same order, IEEE double), rounding once to float: equal
// to host bit for bit.
TEST_CASE("cuda: resize nearest and bilinear with an epilogue match host bitwise", "[cuda][resize]") {
  const std::int64_t N = 2, C = 3, H = 13, W = 9;
  const auto x = random_vector<float>(std::size_t(N * C * H * W), 91);
  auto dx = on_device(x);
  stream_guard stream;
  for (const fusor::resize_params p :
       {fusor::resize_params{.scale = {2, 2}},
        fusor::resize_params{.size = {20, 31}, .mode = fusor::resize_mode::linear, .coordinates = fusor::resize_coordinates::align_corners},
        fusor::resize_params{.scale = {0.6, 1.7}, .mode = fusor::resize_mode::linear},
        fusor::resize_params{.size = {7, 4}, .coordinates = fusor::resize_coordinates::asymmetric, .rounding = fusor::resize_rounding::ceil}}) {
    const auto s = fusor::shape_of(fusor::resize(host_v(x.data(), N, C, H, W), p));
    const std::size_t n = std::size_t(s[0] * s[1] * s[2] * s[3]);
    device_buffer<float> dy(n);
    std::vector<float> host(n);
    fusor::run(host_v(host.data(), s[0], s[1], s[2], s[3]), fusor::resize(host_v(x.data(), N, C, H, W), p) * 0.5f, fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, s[0], s[1], s[2], s[3]), fusor::resize(dev_v(dx->ptr, N, C, H, W), p) * 0.5f,
                     fusor::cuda(stream.s))
              .kernels == 1);
    stream.sync();
    require_bitwise(dy.download(n), host);
  }
}

// cumsum: one lane walks each row in order with IEEE adds, as the host: bitwise.
TEST_CASE("cuda: cumsum (exclusive, reverse) with a prologue and an epilogue matches host bitwise", "[cuda][cumsum]") {
  stream_guard stream;
  for (std::int64_t cols : {1, 37, 3000}) {
    CAPTURE(cols);
    const std::int64_t rows = 70;
    const auto x = random_vector<float>(std::size_t(rows * cols), unsigned(cols) + 5);
    auto dx = on_device(x);
    device_buffer<float> dy(x.size());
    std::vector<float> host(x.size());
    for (bool exclusive : {false, true}) {
      const bool reverse = !exclusive;
      fusor::run(host_v(host.data(), rows, cols), fusor::cumsum(fusor::relu(host_v(x.data(), rows, cols)), 1, exclusive, reverse) - 1.0f,
                 fusor::host());
      CHECK(fusor::run(dev_v(dy.ptr, rows, cols), fusor::cumsum(fusor::relu(dev_v(dx->ptr, rows, cols)), 1, exclusive, reverse) - 1.0f,
                       fusor::cuda(stream.s))
                .kernels == 1);
      stream.sync();
      require_bitwise(dy.download(x.size()), host);
    }
  }
}

// one_hot: a compare and a select per element, equal to host.
TEST_CASE("cuda: one_hot with label smoothing matches host bitwise", "[cuda][one_hot]") {
  const std::int64_t N = 300, K = 37;
  std::vector<std::int32_t> labels(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = std::int32_t(i % 41) - 2;  // some negative, some out of range
  auto dl = on_device(labels);
  stream_guard stream;
  device_buffer<float> dy(std::size_t(N * K));
  std::vector<float> host(std::size_t(N * K));
  fusor::run(host_v(host.data(), N, K), fusor::one_hot(host_v(labels.data(), N), K) * 0.9f + 0.1f / float(K), fusor::host());
  CHECK(fusor::run(dev_v(dy.ptr, N, K), fusor::one_hot(dev_v(dl->ptr, N), K) * 0.9f + 0.1f / float(K), fusor::cuda(stream.s))
            .kernels == 1);
  stream.sync();
  require_bitwise(dy.download(std::size_t(N * K)), host);
}

// pad: every mode copies elements or stores the constant: equal to host bit
// for bit (the prologue and epilogue are the same IEEE operations).
TEST_CASE("cuda: pad (constant, reflect, edge, wrap; negative pads) with a prologue and an epilogue matches host bitwise",
          "[cuda][pad]") {
  const std::int64_t N = 2, C = 3, H = 13, W = 9;
  const auto x = random_vector<float>(std::size_t(N * C * H * W), 93);
  auto dx = on_device(x);
  stream_guard stream;
  for (const auto m : {fusor::pad_mode::constant, fusor::pad_mode::reflect, fusor::pad_mode::edge, fusor::pad_mode::wrap}) {
    CAPTURE(int(m));
    const auto make = [&](auto v, const float* p) {
      return fusor::pad(fusor::relu(v(p, N, C, H, W)), {0, -1, 3, 20, 0, 2, -2, 1}, m, 0.25) * 0.5f;
    };
    const auto s = fusor::shape_of(make(host_v, x.data()));
    const std::size_t n = std::size_t(s[0] * s[1] * s[2] * s[3]);
    device_buffer<float> dy(n);
    std::vector<float> host(n);
    fusor::run(host_v(host.data(), s[0], s[1], s[2], s[3]), make(host_v, x.data()), fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, s[0], s[1], s[2], s[3]), make(dev_v, dx->ptr), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_bitwise(dy.download(n), host);
  }
}

// concat: three producers joined along each axis, under an epilogue: bitwise.
TEST_CASE("cuda: concat of three producers along every axis matches host bitwise", "[cuda][concat]") {
  stream_guard stream;
  const std::int64_t A = 3, B = 70, Cc = 33;
  const auto a = random_vector<float>(std::size_t(A * B * Cc), 94), b = random_vector<float>(std::size_t(A * B * Cc), 95);
  auto da = on_device(a), db = on_device(b);
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    const auto make = [&](auto v, const float* pa, const float* pb) {
      const auto av = v(pa, A, B, Cc), bv = v(pb, A, B, Cc);
      return fusor::concat(axis, av * 2.0f, fusor::relu(bv), av + bv) - 1.0f;
    };
    const auto s = fusor::shape_of(make(host_v, a.data(), b.data()));
    const std::size_t n = std::size_t(s[0] * s[1] * s[2]);
    device_buffer<float> dy(n);
    std::vector<float> host(n);
    fusor::run(host_v(host.data(), s[0], s[1], s[2]), make(host_v, a.data(), b.data()), fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, s[0], s[1], s[2]), make(dev_v, da->ptr, db->ptr), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_bitwise(dy.download(n), host);
  }
}

// gather_elements: copies (a prologue and epilogue of IEEE ops): bitwise;
// an index out of range is a device_error.
TEST_CASE("cuda: gather_elements (torch.gather) with a prologue and an epilogue matches host bitwise", "[cuda][gather]") {
  stream_guard stream;
  const std::int64_t rows = 300, cols = 77, k = 5;
  const auto x = random_vector<float>(std::size_t(rows * cols), 96);
  std::vector<std::int64_t> idx(std::size_t(rows * k));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = std::int64_t((i * 37) % std::size_t(2 * cols)) - cols;  // negatives too
  auto dx = on_device(x);
  auto di = on_device(idx);
  device_buffer<float> dy(idx.size());
  std::vector<float> host(idx.size());
  const auto make = [&](auto v, const float* px, const std::int64_t* pi) {
    return fusor::gather_elements(fusor::relu(v(px, rows, cols)), v(pi, rows, k), 1) * 2.0f;
  };
  fusor::run(host_v(host.data(), rows, k), make(host_v, x.data(), idx.data()), fusor::host());
  CHECK(fusor::run(dev_v(dy.ptr, rows, k), make(dev_v, dx->ptr, di->ptr), fusor::cuda(stream.s)).kernels == 1);
  stream.sync();
  require_bitwise(dy.download(idx.size()), host);
  idx[3] = cols;  // out of range
  auto bad = on_device(idx);
  CHECK_THROWS_AS(fusor::run(dev_v(dy.ptr, rows, k), make(dev_v, dx->ptr, bad->ptr), fusor::cuda(stream.s)), fusor::device_error);
}

// conv_transpose2d: the device contracts each multiply-add into an FMA (the
// host build does not), in the same order, so the sums differ by at most one
// product rounding per term: <= 8 * 4 terms (C_in / groups times the 2 x 2
// taps of a 4 x 4 kernel at stride 2) of values in [-1, 1], under 32 * 2^-24
// ~ 2e-6; checked within 1e-5 relative + 1e-5 absolute.
TEST_CASE("cuda: conv_transpose2d (stride 2, padding, output_padding, groups, bias, epilogue) matches host",
          "[cuda][conv_transpose]") {
  stream_guard stream;
  const std::int64_t N = 2, C = 8, H = 9, W = 7, CPG = 3;
  for (const std::int64_t groups : {1, 2}) {
    CAPTURE(groups);
    const std::int64_t CO = CPG * groups;
    const auto x = random_vector<float>(std::size_t(N * C * H * W), 97, -1.0f, 1.0f);
    const auto w = random_vector<float>(std::size_t(C * CPG * 4 * 4), 98, -1.0f, 1.0f);
    const auto b = random_vector<float>(std::size_t(CO), 99, -1.0f, 1.0f);
    auto dx = on_device(x), dw = on_device(w), db = on_device(b);
    const fusor::conv_transpose2d_params p{.stride = {2, 2}, .padding = {1, 1, 1, 1}, .output_padding = {1, 0}, .groups = groups};
    const auto make = [&](auto v, const float* px, const float* pw, const float* pb) {
      return fusor::relu(fusor::conv_transpose2d(fusor::relu(v(px, N, C, H, W)), v(pw, C, CPG, 4, 4), v(pb, CO), p)) * 0.5f;
    };
    const auto s = fusor::shape_of(make(host_v, x.data(), w.data(), b.data()));
    const std::size_t n = std::size_t(s[0] * s[1] * s[2] * s[3]);
    device_buffer<float> dy(n);
    std::vector<float> host(n);
    fusor::run(host_v(host.data(), s[0], s[1], s[2], s[3]), make(host_v, x.data(), w.data(), b.data()), fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, s[0], s[1], s[2], s[3]), make(dev_v, dx->ptr, dw->ptr, db->ptr), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_close(dy.download(n), host, 1e-5, 1e-5, nan_match::any);
  }
}

// topk: comparisons only, one lane per row on both sides: values and
// indices equal to host's, ties and NaN included (NaN payloads aside).
TEST_CASE("cuda: topk and topk_indices (ties, NaN, both directions) match host exactly", "[cuda][topk]") {
  stream_guard stream;
  const std::int64_t rows = 130, cols = 301, k = 7;
  auto x = random_vector<float>(std::size_t(rows * cols), 100);
  for (std::size_t i = 0; i < x.size(); i += 13) x[i] = std::round(x[i]);  // ties
  x[5] = NAN;
  x[700] = INFINITY;
  auto dx = on_device(x);
  device_buffer<float> dv(std::size_t(rows * k));
  device_buffer<std::int64_t> di(std::size_t(rows * k));
  for (const bool largest : {true, false}) {
    CAPTURE(largest);
    std::vector<float> hv(std::size_t(rows * k));
    std::vector<std::int64_t> hi(hv.size());
    const auto make = [&](auto v, const float* p) {
      const auto xv = v(p, rows, cols) * 2.0f;
      return fusor::siblings(fusor::topk(xv, k, 1, largest), fusor::topk_indices(xv, k, 1, largest));
    };
    fusor::run(fusor::outputs(host_v(hv.data(), rows, k), host_v(hi.data(), rows, k)), make(host_v, x.data()), fusor::host());
    CHECK(fusor::run(fusor::outputs(dev_v(dv.ptr, rows, k), dev_v(di.ptr, rows, k)), make(dev_v, dx->ptr), fusor::cuda(stream.s))
              .kernels == 2);
    stream.sync();
    // Values exactly, NaN as NaN: x[5] * 2 is a NaN whose payload differs
    // (the host's SSE multiply keeps the input's quiet NaN, the device's
    // gives the canonical 0x7fffffff: first GPU run, 2026-12-04); topk then
    // copies it, so the bits differ while the selection is the same.
    require_close(dv.download(hv.size()), hv, 0.0, 0.0, nan_match::any);
    CHECK(di.download(hi.size()) == hi);
  }
}

// ONNX LayerNormalization's Mean and InvStdDev: the device's warp/block
// reductions merge in another order than the host's packs: within 1e-5
// relative + 1e-6 absolute (as the layer_norm rows above).
TEST_CASE("cuda: layer_norm_mean and layer_norm_inv_std_dev match host", "[cuda][layer_norm]") {
  stream_guard stream;
  for (const std::int64_t cols : {7, 1025}) {
    CAPTURE(cols);
    const std::int64_t rows = 300;
    const auto x = random_vector<float>(std::size_t(rows * cols), unsigned(cols) + 101, -6.0f, 6.0f);
    auto dx = on_device(x);
    device_buffer<float> dm{static_cast<std::size_t>(rows)}, di{static_cast<std::size_t>(rows)};
    std::vector<float> hm(static_cast<std::size_t>(rows)), hi(static_cast<std::size_t>(rows));
    const auto make = [&](auto v, const float* p) {
      const auto xv = v(p, rows, cols);
      return fusor::siblings(fusor::layer_norm_mean(xv), fusor::layer_norm_inv_std_dev(xv, -1, 1e-5f));
    };
    fusor::run(fusor::outputs(host_v(hm.data(), rows, 1), host_v(hi.data(), rows, 1)), make(host_v, x.data()), fusor::host());
    CHECK(fusor::run(fusor::outputs(dev_v(dm.ptr, rows, 1), dev_v(di.ptr, rows, 1)), make(dev_v, dx->ptr), fusor::cuda(stream.s))
              .kernels == 2);
    stream.sync();
    require_close(dm.download(std::size_t(rows)), hm, 1e-5, 1e-6, nan_match::any);
    require_close(di.download(std::size_t(rows)), hi, 1e-5, 1e-6, nan_match::any);
  }
}
