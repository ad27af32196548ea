// CUDA tests of the elementwise family, the executors and their errors.
// (helpers and tolerances: test_cuda_common.cuh)
#include "test_cuda_common.cuh"

// ============================================================================

TEST_CASE("cuda: float 7-op chain with gelu/sigmoid matches host within a few ulp", "[cuda][chain]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 11);
  const auto r = run_host_and_cuda<float>(gelu_chain, in);
  CHECK(r.device_kernels == 1);
  CHECK(r.device_launches == 1);
  CHECK(r.host_kernels == 1);
  require_close(r.device, r.host, f32_rtol, f32_atol);
}

TEST_CASE("cuda: float 7-op IEEE-exact chain matches host bit for bit", "[cuda][chain]") {
  // (1 << 23) + 5: more vector steps than the grid has threads (the launch
  // caps blocks at 32 per SM), so the grid-stride loop runs several times.
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3,
                                 (std::size_t(1) << 23) + 5);
  CAPTURE(n);
  const inputs3<float> in(n, 21);
  const auto r = run_host_and_cuda<float>(exact_chain, in);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
}

// One chain per 16-bit type (each 16-bit kernel is 8 elements wide and costs
// several seconds of nvcc time): f16 with exact ops (bitwise), bf16 with
// transcendentals (one bf16 ulp).
TEST_CASE("cuda: f16 chain of exact ops matches host bit for bit", "[cuda][chain][f16]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<__half> in(n, 31);
  const auto r = run_host_and_cuda<__half>(exact_chain16, in);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
}

TEST_CASE("cuda: bf16 chain with silu/tanh matches host within one bf16 ulp", "[cuda][chain][bf16]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<__nv_bfloat16> in(n, 32);
  const auto r = run_host_and_cuda<__nv_bfloat16>(transcendental_chain16, in);
  CHECK(r.device_kernels == 1);
  require_close(r.device, r.host, rtol_of<__nv_bfloat16>, f32_atol);
}

// Issue 21's ops: comparisons, logical ops, floor/sign/mod/cast are exact (bit
// for bit against the host); sin/atan/cosh and asinh/acosh/atanh are within
// f32_rtol (SLEEF's u10 functions on the host, CUDA's on the device: each
// within 2-3 ulp).
TEST_CASE("cuda: comparisons, logical ops, floor, sign, mod, cast match host bit for bit", "[cuda][comparison]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 51);
  const auto exact = [](const auto& x, const auto& y, const auto& z) {
    return fusor::where(fusor::logical_and(x > y, !(z <= 0.5f)), fusor::floor(x * 4.0f) + fusor::sign(z),
                        fusor::mod(x, 1.5f) - fusor::fmod(y, 0.75f)) +
           fusor::cast<float>(fusor::cast<std::int32_t>(x * 100.0f)) + fusor::cast<__half>(y * 3.0f);
  };
  const auto r = run_host_and_cuda<float>(exact, in);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
  const auto trig = [](const auto& x, const auto& y, const auto& z) {
    return fusor::sin(x) + fusor::atan(y) * fusor::cosh(z) + fusor::round(x * 3.0f);
  };
  const auto t = run_host_and_cuda<float>(trig, in);
  CHECK(t.device_kernels == 1);
  require_close(t.device, t.host, f32_rtol, f32_atol);
  // asinh / acosh / atanh: the host's f32 through SLEEF's f64 variants
  // (ops/math_inverse_hyperbolic.hpp), the device's CUDA's asinhf ... (<= 3 ulp)
  const auto inverse_hyperbolic = [](const auto& x, const auto& y, const auto& z) {
    return fusor::asinh(x * 8.0f) + fusor::atanh(y * 0.5f) * fusor::acosh(fusor::abs(z) + 1.0f);
  };
  const auto h = run_host_and_cuda<float>(inverse_hyperbolic, in);
  CHECK(h.device_kernels == 1);
  require_close(h.device, h.host, f32_rtol, f32_atol);
}

TEST_CASE("cuda: broadcasting a row vector and a column over a matrix", "[cuda][broadcast]") {
  const std::size_t rows = 37, cols = 1029;
  const auto m = random_vector<float>(rows * cols, 41);
  const auto row = random_vector<float>(cols, 42);  // shape [cols]: broadcast over rows
  const auto col = random_vector<float>(rows, 43);  // shape [rows, 1]: broadcast over columns
  const auto make = [](const auto& m_, const auto& row_, const auto& col_) { return fusor::relu(m_ * col_ + row_); };

  std::vector<float> host(rows * cols, -1.0f);
  const auto hr = fusor::run(fusor::host_view(host.data(), rows, cols),
                             make(fusor::host_view(m.data(), rows, cols), fusor::host_view(row.data(), cols),
                                  fusor::host_view(col.data(), rows, 1)),
                             fusor::host());
  CHECK(hr.kernels == 1);
  // The host result itself, against plain loops.
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      const float v = m[i * cols + j] * col[i] + row[j];
      REQUIRE(host[i * cols + j] == (v > 0 ? v : 0.0f));
    }

  stream_guard stream;
  device_buffer<float> dm(rows * cols), drow(cols), dcol(rows), dout(rows * cols);
  dm.upload(m);
  drow.upload(row);
  dcol.upload(col);
  const auto r = fusor::run(fusor::device_view(dout.ptr, rows, cols),
                            make(fusor::device_view(static_cast<const float*>(dm.ptr), rows, cols),
                                 fusor::device_view(static_cast<const float*>(drow.ptr), cols),
                                 fusor::device_view(static_cast<const float*>(dcol.ptr), rows, 1)),
                            fusor::cuda(stream.s));
  CHECK(r.kernels == 1);
  stream.sync();
  require_bitwise(dout.download(rows * cols), host);
}

TEST_CASE("cuda: shape ops on an elementwise expression read through the new strides", "[cuda][shape_ops]") {
  const std::size_t rows = 37, cols = 1029;
  const auto m = random_vector<float>(rows * cols, 61);
  const auto row = random_vector<float>(cols, 62);
  const auto col = random_vector<float>(rows, 63);
  // transpose of the whole expression, then every second column from 3: [ceil((1029 - 3) / 2), 37]
  const auto make = [](const auto& m_, const auto& row_, const auto& col_) {
    return fusor::slice(fusor::transpose(fusor::relu(m_ * col_ + row_)), 0, 3, -2, 2);
  };
  const std::size_t out_rows = (cols - 2 - 3 + 1) / 2;
  std::vector<float> host(out_rows * rows, -1.0f);
  const auto hr = fusor::run(fusor::host_view(host.data(), out_rows, rows),
                             make(fusor::host_view(m.data(), rows, cols), fusor::host_view(row.data(), cols),
                                  fusor::host_view(col.data(), rows, 1)),
                             fusor::host());
  CHECK(hr.kernels == 1);
  for (std::size_t j = 0; j < out_rows; ++j)
    for (std::size_t i = 0; i < rows; ++i) {
      const std::size_t c = 3 + 2 * j;
      const float v = m[i * cols + c] * col[i] + row[c];
      REQUIRE(host[j * rows + i] == (v > 0 ? v : 0.0f));
    }

  stream_guard stream;
  device_buffer<float> dm(rows * cols), drow(cols), dcol(rows), dout(out_rows * rows);
  dm.upload(m);
  drow.upload(row);
  dcol.upload(col);
  const auto r = fusor::run(fusor::device_view(dout.ptr, out_rows, rows),
                            make(fusor::device_view(static_cast<const float*>(dm.ptr), rows, cols),
                                 fusor::device_view(static_cast<const float*>(drow.ptr), cols),
                                 fusor::device_view(static_cast<const float*>(dcol.ptr), rows, 1)),
                            fusor::cuda(stream.s));
  CHECK(r.kernels == 1);
  stream.sync();
  require_bitwise(dout.download(out_rows * rows), host);
}

TEST_CASE("cuda: strided (transposed) input and output views", "[cuda][strided]") {
  const fusor::index_t rows = 67, cols = 131;
  const std::size_t n = std::size_t(rows * cols);
  // a holds a [cols, rows] row-major matrix: viewed with strides {1, rows} it is its [rows, cols] transpose.
  const auto a = random_vector<float>(n, 51);
  const auto b = random_vector<float>(n, 52);
  const fusor::shape<2> row_major{cols, 1}, transposed{1, rows};
  const auto ext = fusor::dextents<2>(rows, cols);
  const auto make = [](const auto& at, const auto& b_) {
    const auto t = fusor::tag<x_tag>(at);
    return fusor::relu(t - b_) * t + b_;
  };
  // Plain-loop reference: element (i, j) of the transpose is a[j * rows + i].
  std::vector<float> expect(n);
  for (fusor::index_t i = 0; i < rows; ++i)
    for (fusor::index_t j = 0; j < cols; ++j) {
      const float t = a[std::size_t(j * rows + i)], v = b[std::size_t(i * cols + j)];
      const float d = t - v;
      expect[std::size_t(i * cols + j)] = (d > 0 ? d : 0.0f) * t + v;
    }

  stream_guard stream;
  device_buffer<float> da(n), db(n), dout(n);
  da.upload(a);
  db.upload(b);
  const auto dav = fusor::device_view(static_cast<const float*>(da.ptr), ext, transposed);
  const auto dbv = fusor::device_view(static_cast<const float*>(db.ptr), ext, row_major);
  const auto hav = fusor::host_view(a.data(), ext, transposed);
  const auto hbv = fusor::host_view(b.data(), ext, row_major);

  SECTION("transposed input, row-major output") {
    std::vector<float> host(n, -1.0f);
    CHECK(fusor::run(fusor::host_view(host.data(), ext, row_major), make(hav, hbv), fusor::host()).kernels == 1);
    require_bitwise(host, expect);
    CHECK(fusor::run(fusor::device_view(dout.ptr, ext, row_major), make(dav, dbv), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_bitwise(dout.download(n), host);
  }
  SECTION("transposed input, transposed output") {
    std::vector<float> host(n, -1.0f);
    CHECK(fusor::run(fusor::host_view(host.data(), ext, transposed), make(hav, hbv), fusor::host()).kernels == 1);
    CHECK(fusor::run(fusor::device_view(dout.ptr, ext, transposed), make(dav, dbv), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    const auto device = dout.download(n);
    require_bitwise(device, host);
    // Output element (i, j) lives at j * rows + i.
    for (fusor::index_t i = 0; i < rows; ++i)
      for (fusor::index_t j = 0; j < cols; ++j)
        REQUIRE(device[std::size_t(j * rows + i)] == expect[std::size_t(i * cols + j)]);
  }
}

TEST_CASE("cuda: misaligned pointers take the scalar path and match host bit for bit", "[cuda][misaligned]") {
  const std::size_t n = GENERATE(std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 61);
  // cudaMalloc returns 256-byte aligned memory: offsets of 1-3 floats break the
  // 16-byte alignment the vectorized path needs (and mix alignments).
  const offsets off{1, 2, 3, 1};
  {
    // The precondition, checked on the same views the run uses: the kernel
    // fusor builds for them does not take the vectorized path.
    device_buffer<float> buf(n, 4);
    const auto v = [&](std::size_t o) { return fusor::device_view(static_cast<const float*>(buf.ptr + o), n); };
    const auto k = fusor::exec::make_elementwise_kernel<1>(fusor::shape<1>{fusor::index_t(n)},
                                                           std::make_tuple(fusor::device_view(buf.ptr + off.out, n)),
                                                           exact_chain(v(off.x), v(off.y), v(off.z)));
    CHECK(k.path == fusor::kernels::access::contiguous);
  }
  const auto r = run_host_and_cuda<float>(exact_chain, in, off);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
  // And the aligned run gives the same bits.
  require_bitwise(run_host_and_cuda<float>(exact_chain, in).device, r.device);
}

TEST_CASE("cuda: sibling expressions run as one two-output kernel", "[cuda][siblings]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 71);
  const auto make = [](const auto& x, const auto& z) {
    const auto xt = fusor::tag<x_tag>(x);
    return fusor::siblings(fusor::silu(xt), fusor::sigmoid(xt) * z);
  };
  std::vector<float> h1(n, -1.0f), h2(n, -1.0f);
  const auto hr = fusor::run(fusor::outputs(fusor::host_view(h1.data(), n), fusor::host_view(h2.data(), n)),
                             make(fusor::host_view(in.x.data(), n), fusor::host_view(in.z.data(), n)), fusor::host());
  CHECK(hr.kernels == 1);

  stream_guard stream;
  device_buffer<float> dx(n), dz(n), d1(n), d2(n);
  dx.upload(in.x);
  dz.upload(in.z);
  const auto ex = fusor::cuda(stream.s);
  const auto r = fusor::run(fusor::outputs(fusor::device_view(d1.ptr, n), fusor::device_view(d2.ptr, n)),
                            make(fusor::device_view(static_cast<const float*>(dx.ptr), n),
                                 fusor::device_view(static_cast<const float*>(dz.ptr), n)),
                            ex);
  CHECK(r.kernels == 1);
  CHECK(ex.launches == 1);
  stream.sync();
  require_close(d1.download(n), h1, f32_rtol, f32_atol);
  require_close(d2.download(n), h2, f32_rtol, f32_atol);
}

TEST_CASE("cuda: unfused(cuda(stream)) launches one kernel per op, bitwise equal to the fused run",
          "[cuda][unfused]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 81);
  stream_guard stream;
  device_buffer<float> dx(n), dy(n), dz(n), fused(n), unfused(n);
  dx.upload(in.x);
  dy.upload(in.y);
  dz.upload(in.z);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), n);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), n);
  const auto z = fusor::device_view(static_cast<const float*>(dz.ptr), n);

  // add/mul/relu only: 5 ops, so 5 launches unfused (3 distinct kernels: the
  // two muls and the two adds are one instantiation each), 1 fused. Every op
  // rounds once either way, so the results are equal bit for bit.
  using E = decltype(add_mul_relu_chain(x, y, z));
  STATIC_REQUIRE(fusor::kernel_count<E> == 1);
  STATIC_REQUIRE(fusor::unfused_kernel_count<E> == 5);
  const auto fex = fusor::cuda(stream.s);
  const auto fr = fusor::run(fusor::device_view(fused.ptr, n), add_mul_relu_chain(x, y, z), fex);
  const auto uex = fusor::unfused(fusor::cuda(stream.s));
  const auto ur = fusor::run(fusor::device_view(unfused.ptr, n), add_mul_relu_chain(x, y, z), uex);
  CHECK(fr.kernels == 1);
  CHECK(fex.launches == 1);
  CHECK(ur.kernels == 5);
  CHECK(uex.launches == 5);
  stream.sync();
  const auto f = fused.download(n), u = unfused.download(n);
  require_bitwise(u, f);
  require_bitwise(f, run_host_and_cuda<float>(add_mul_relu_chain, in).host);
}

TEST_CASE("cuda: host memory given to the CUDA executor throws device_error, output untouched", "[cuda][errors]") {
  const std::size_t n = 1025;
  const inputs3<float> in(n, 91);
  stream_guard stream;
  device_buffer<float> dx(n), dy(n), dz(n), dout(n);
  dx.upload(in.x);
  dy.upload(in.y);
  dz.upload(in.z);
  dout.fill_bytes(0x7f);
  const auto sentinel = dout.download(n);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), n);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), n);
  const auto z = fusor::device_view(static_cast<const float*>(dz.ptr), n);

  SECTION("an input in host memory (std::vector data)") {
    const auto host_y = fusor::device_view(in.y.data(), n);  // a lie: this is pageable host memory
    const auto ex = fusor::cuda(stream.s);
    CHECK_THROWS_AS(fusor::run(fusor::device_view(dout.ptr, n), exact_chain(x, host_y, z), ex), fusor::device_error);
    CHECK_THROWS_WITH(fusor::run(fusor::device_view(dout.ptr, n), exact_chain(x, host_y, z), ex),
                      Catch::Contains("host memory"));
    CHECK(ex.launches == 0);
    stream.sync();
    require_bitwise(dout.download(n), sentinel);
  }
  SECTION("the output in host memory") {
    std::vector<float> host_out(n, -3.0f);
    const auto before = host_out;
    const auto ex = fusor::cuda(stream.s);
    CHECK_THROWS_AS(fusor::run(fusor::device_view(host_out.data(), n), exact_chain(x, y, z), ex), fusor::device_error);
    CHECK(ex.launches == 0);
    stream.sync();
    require_bitwise(host_out, before);
  }
  SECTION("the unfused CUDA executor checks too, before any launch") {
    const auto host_x = fusor::device_view(in.x.data(), n);
    const auto uex = fusor::unfused(fusor::cuda(stream.s));
    CHECK_THROWS_AS(fusor::run(fusor::device_view(dout.ptr, n), add_mul_relu_chain(host_x, y, z), uex),
                    fusor::device_error);
    CHECK(uex.launches == 0);
    stream.sync();
    require_bitwise(dout.download(n), sentinel);
  }
}

TEST_CASE("cuda: a failed temporary allocation is an allocation_error; every output untouched", "[cuda][errors]") {
  // Issue 24: run() rehearses the plan (every cudaMallocAsync first), so the
  // n-th allocation failing (injected: fusor::testing::fail_allocation)
  // leaves both sibling outputs as they were, for every n.
  const std::size_t rows = 64, cols = 48, n = rows * cols;
  const inputs3<float> in(n, 17);
  stream_guard stream;
  device_buffer<float> dx(n), dy(n), da(n), db(rows);
  dx.upload(in.x);
  dy.upload(in.y);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), rows, cols);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), rows, cols);
  const auto e1 = fusor::relu(fusor::materialize(fusor::softmax(x, 1)) + y);
  const auto e2 = fusor::sum<1>(fusor::materialize(fusor::exp(x)) * y, {1}, false);
  const auto ex = fusor::cuda(stream.s);
  int failed = 0;
  for (long k = 1; k < 64; ++k) {
    da.fill_bytes(0x7f);
    db.fill_bytes(0x7f);
    const auto sa = da.download(n), sb = db.download(rows);
    fusor::testing::fail_allocation(k);
    bool threw = false;
    try {
      fusor::run(fusor::outputs(fusor::device_view(da.ptr, rows, cols), fusor::device_view(db.ptr, rows)),
                 fusor::siblings(e1, e2), ex);
    } catch (const fusor::allocation_error& e) {
      threw = true;
      CHECK_THAT(e.what(), Catch::Contains("bytes of device memory"));
    }
    fusor::testing::fail_allocation(0);
    stream.sync();
    if (!threw) break;
    ++failed;
    require_bitwise(da.download(n), sa);
    require_bitwise(db.download(rows), sb);
  }
  CHECK(failed >= 2);
}

TEST_CASE("cuda: device memory given to the host executor throws device_error; managed and pinned memory run",
          "[cuda][errors]") {
  const std::size_t n = 257;
  const inputs3<float> in(n, 93);
  device_buffer<float> dx(n);
  dx.upload(in.x);
  std::vector<float> out(n, -3.0f);
  const auto before = out;
  const auto y = fusor::host_view(static_cast<const float*>(in.y.data()), n);
  const auto z = fusor::host_view(static_cast<const float*>(in.z.data()), n);

  SECTION("an input in device memory") {
    const auto dev_x = fusor::host_view(static_cast<const float*>(dx.ptr), n);  // a lie: cudaMalloc'd memory
    const auto ex = fusor::host();
    CHECK_THROWS_AS(fusor::run(fusor::host_view(out.data(), n), exact_chain(dev_x, y, z), ex), fusor::device_error);
    CHECK_THROWS_WITH(fusor::run(fusor::host_view(out.data(), n), exact_chain(dev_x, y, z), ex),
                      Catch::Contains("input") && Catch::Contains("is CUDA device memory"));
    CHECK(ex.launches == 0);
    require_bitwise(out, before);
  }
  SECTION("the output in device memory, also with unfused()") {
    device_buffer<float> dout(n);
    dout.fill_bytes(0x7f);
    const auto sentinel = dout.download(n);
    const auto x = fusor::host_view(static_cast<const float*>(in.x.data()), n);
    CHECK_THROWS_WITH(fusor::run(fusor::host_view(dout.ptr, n), exact_chain(x, y, z), fusor::host()),
                      Catch::Contains("output 0") && Catch::Contains("is CUDA device memory"));
    CHECK_THROWS_AS(fusor::run(fusor::host_view(dout.ptr, n), exact_chain(x, y, z), fusor::unfused()),
                    fusor::device_error);
    require_bitwise(dout.download(n), sentinel);
  }
  SECTION("managed and pinned memory are host-readable: no error") {
    float* managed = nullptr;
    float* pinned = nullptr;
    CUDA_OK(cudaMallocManaged(&managed, n * sizeof(float)));
    CUDA_OK(cudaMallocHost(&pinned, n * sizeof(float)));
    CUDA_OK(cudaDeviceSynchronize());
    std::copy(in.x.begin(), in.x.end(), managed);
    std::copy(in.x.begin(), in.x.end(), pinned);
    std::vector<float> ref(n), a(n), b(n);
    const auto x = fusor::host_view(static_cast<const float*>(in.x.data()), n);
    fusor::run(fusor::host_view(ref.data(), n), exact_chain(x, y, z), fusor::host());
    fusor::run(fusor::host_view(a.data(), n), exact_chain(fusor::host_view(static_cast<const float*>(managed), n), y, z),
               fusor::host());
    fusor::run(fusor::host_view(b.data(), n), exact_chain(fusor::host_view(static_cast<const float*>(pinned), n), y, z),
               fusor::host());
    require_bitwise(a, ref);
    require_bitwise(b, ref);
    cudaFree(managed);
    cudaFreeHost(pinned);
  }
}

TEST_CASE("cuda: a failed launch throws device_error naming the kernel", "[cuda][errors]") {
  // A reliable launch failure: while a blocking stream is capturing, a
  // launch on the legacy default stream (cuda(nullptr)) fails with
  // cudaErrorStreamCaptureImplicit ("would make the legacy stream depend on
  // a capturing blocking stream", CUDA Runtime API, cudaStreamBeginCapture).
  // The error is returned by the launch itself (not sticky): the exec layer's
  // cudaGetLastError() after the launch reports it with the kernel's name.
  const std::size_t n = 1000;
  const inputs3<float> in(n, 93);
  device_buffer<float> dx(n), dy(n), dz(n), dout(n);
  dx.upload(in.x);
  dy.upload(in.y);
  dz.upload(in.z);
  dout.fill_bytes(0x7f);
  const auto sentinel = dout.download(n);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), n);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), n);
  const auto z = fusor::device_view(static_cast<const float*>(dz.ptr), n);
  cudaStream_t capturing = nullptr;
  CUDA_OK(cudaStreamCreate(&capturing));  // a blocking stream
  CUDA_OK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeRelaxed));  // relaxed: fusor's pointer queries stay legal
  std::string message;
  bool device_err = false;
  try {
    fusor::run(fusor::device_view(dout.ptr, n), fusor::relu(x + y) * z, fusor::cuda(nullptr));
  } catch (const fusor::device_error& e) {
    device_err = true;
    message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(capturing, &graph);  // invalidated by the failed launch
  if (graph) cudaGraphDestroy(graph);
  (void)end;
  (void)cudaGetLastError();
  CUDA_OK(cudaStreamDestroy(capturing));
  INFO("message: " << message);
  CHECK(device_err);
  CHECK(message.rfind("fusor: ", 0) == 0);
  CHECK(message.find("launch of kernel fused_elementwise") != std::string::npos);
  CHECK(message.find("relu") != std::string::npos);
  CHECK(message.find("cudaErrorStreamCaptureImplicit") != std::string::npos);
  CUDA_OK(cudaDeviceSynchronize());
  require_bitwise(dout.download(n), sentinel);  // the kernel never ran
  // The device is usable afterwards.
  fusor::run(fusor::device_view(dout.ptr, n), fusor::relu(x + y) * z, fusor::cuda(nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  CHECK(dout.download(n) != sentinel);
}


// 8-bit integers wrap per op on the device as on the host: bitwise equal.
// (n is odd and not a multiple of any vector width: vector body and tail.)
TEST_CASE("cuda: int8 / uint8 chains wrap as on the host, bit for bit", "[cuda][dtypes]") {
  const std::size_t n = 100003;
  std::vector<std::int8_t> a(n), b(n);
  std::vector<std::uint8_t> u(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = std::int8_t(int(i * 37 % 256) - 128);
    b[i] = std::int8_t(int(i * 11 % 256) - 128);
    u[i] = std::uint8_t(i * 53 % 256);
  }
  auto da = on_device(a), db = on_device(b);
  auto du = on_device(u);
  stream_guard stream;
  device_buffer<std::int8_t> dy(n);
  device_buffer<std::uint8_t> dz(n);
  std::vector<std::int8_t> hy(n);
  std::vector<std::uint8_t> hz(n);
  const auto make = [&](auto v, const std::int8_t* pa, const std::int8_t* pb) {
    const auto av = v(pa, n), bv = v(pb, n);
    return (av + bv) * bv - fusor::max(av, bv) + 3;
  };
  const auto make_u = [&](auto v, const std::uint8_t* pu) { return fusor::bitwise_xor(v(pu, n) * 3, fusor::bitwise_not(v(pu, n))); };
  fusor::run(host_v(hy.data(), n), make(host_v, a.data(), b.data()), fusor::host());
  fusor::run(host_v(hz.data(), n), make_u(host_v, u.data()), fusor::host());
  CHECK(fusor::run(dev_v(dy.ptr, n), make(dev_v, da->ptr, db->ptr), fusor::cuda(stream.s)).kernels == 1);
  CHECK(fusor::run(dev_v(dz.ptr, n), make_u(dev_v, du->ptr), fusor::cuda(stream.s)).kernels == 1);
  stream.sync();
  CHECK(dy.download(n) == hy);
  CHECK(dz.download(n) == hz);
}
