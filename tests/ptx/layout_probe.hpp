#pragma once
// Host/device layout probe (ctest ptx.layout): the kernel objects the CUDA
// executor passes by value as kernel parameters must have the same layout in
// nvcc's device code as on the host that fills them in. The first GPU run
// (2026-12-04) found they did not: fusor::tuple's [[no_unique_address]]
// members were laid out differently by nvcc's device code generation, and
// every elementwise launch read its pointers at the wrong offsets.
//
// for_each_kernel(f) builds a few elementwise kernels of the shapes users
// write (f32 chains, f16 in / f32 out with constants, several outputs, a
// rank-4 per-channel broadcast, bf16 with comparisons and casts) and calls
// f(std::integral_constant<int, Id>{}, k). walk_kernel(k, r) calls r(p) for
// the address of every member down to the leaves of the expression trees.
// layout.cu records these offsets in device code (read back from its PTX);
// layout_host.cpp prints them from the host; check_layout.py compares.
#include <fusor/fusor.hpp>

#include <tuple>
#include <type_traits>

namespace layout_probe {

struct x_id;

template <class N, class R>
FUSOR_HOST_DEVICE void walk_tree(const N& n, R& r) {
  if constexpr (requires { n.value; }) {
    r(&n.value);  // k_scalar
  } else if constexpr (requires { n.kids; }) {
    r(&n.op);
    r(&n.kids);
    fusor::apply([&](const auto&... kid) { (walk_tree(kid, r), ...); }, n.kids);
  } else {
    r(&n);  // k_input, constants
  }
}

template <class K, class R>
FUSOR_HOST_DEVICE void walk_kernel(const K& k, R& r) {
  fusor::apply([&](const auto&... s) { ((r(&s.data), r(&s.stride)), ...); }, k.sources);
  fusor::apply([&](const auto&... s) { ((r(&s.data), r(&s.stride)), ...); }, k.sinks);
  r(&k.roots);
  fusor::apply([&](const auto&... t) { (walk_tree(t, r), ...); }, k.roots);
  r(&k.extent);
  r(&k.size);
  r(&k.path);
}

template <int Id>
using id = std::integral_constant<int, Id>;

/// Calls f(id<I>{}, kernel) for each probed kernel (pointers are fake: the
/// kernels are built, never run).
template <class F>
void for_each_kernel(F&& f) {
  using fusor::index_t;
  auto* pf = reinterpret_cast<float*>(std::uintptr_t(4096));
  auto* ph = reinterpret_cast<__half*>(std::uintptr_t(8192));
  auto* pb = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t(16384));
  const index_t n = 1000;
  const auto x = fusor::device_view(static_cast<const float*>(pf), n).with_id<x_id>();
  const auto y = fusor::device_view(static_cast<const float*>(pf + n), n);
  const auto z = fusor::device_view(static_cast<const float*>(pf + 2 * n), n);
  const auto out = fusor::device_view(pf + 3 * n, n);
  {  // 0: a float chain with gelu and sigmoid, x read twice
    const auto e = fusor::relu(fusor::gelu(x * 2.0f + y) - fusor::sigmoid(x)) * z;
    f(id<0>{}, fusor::exec::make_elementwise_kernel<1>(fusor::shape_of(e), std::make_tuple(out), e));
  }
  {  // 1: exact ops and a trailing scalar
    const auto e = fusor::min(fusor::relu(fusor::max(x * y + z, x) - y / z), 3.0f);
    f(id<1>{}, fusor::exec::make_elementwise_kernel<1>(fusor::shape_of(e), std::make_tuple(out), e));
  }
  {  // 2: f16 input, f32 output, compile-time constants (fuzz case 53 of the GPU run)
    using namespace fusor::literals;
    const auto h = fusor::device_view(static_cast<const __half*>(ph), n);
    const auto e = fusor::erf(fusor::fmod(0.5_c, h)) + fusor::cast<float>(h) * 2_c;
    f(id<2>{}, fusor::exec::make_elementwise_kernel<1>(fusor::shape_of(e), std::make_tuple(out), e));
  }
  {  // 3: two outputs of one shape (siblings), f16 and f32
    auto* oh = ph + 4 * n;
    const auto e0 = fusor::tanh(x) * y;
    const auto e1 = fusor::cast<__half>(fusor::abs(x - z));
    f(id<3>{}, fusor::exec::make_elementwise_kernel<1>(
                   fusor::shape_of(e0), std::make_tuple(out, fusor::device_view(oh, n)), e0, e1));
  }
  {  // 4: NCHW f16 through batch_norm (per-channel [C, 1, 1] parameters, static 1s)
    const auto x4 = fusor::device_view(static_cast<const __half*>(ph), index_t(2), index_t(8), index_t(5), index_t(5));
    const auto c = [&](index_t at) { return fusor::device_view(static_cast<const float*>(pf + at), index_t(8)); };
    const auto bn = fusor::batch_norm_params{c(0), c(8), c(16), c(24)};
    const auto o4 = fusor::device_view(ph + 500, index_t(2), index_t(8), index_t(5), index_t(5));
    const auto e = fusor::relu(fusor::batch_norm(x4, bn, 1e-5f));
    f(id<4>{}, fusor::exec::make_elementwise_kernel<4>(fusor::shape_of(e), std::make_tuple(o4), e));
  }
  {  // 5: bf16 with a comparison, where and an integer cast
    const auto b = fusor::device_view(static_cast<const __nv_bfloat16*>(pb), n);
    const auto ob = fusor::device_view(pb + n, n);
    const auto e = fusor::where(b > 0.25f, b * 3.0f, fusor::cast<float>(fusor::cast<std::int32_t>(b * 100.0f)));
    f(id<5>{}, fusor::exec::make_elementwise_kernel<1>(fusor::shape_of(e), std::make_tuple(ob), e));
  }
}

}  // namespace layout_probe
