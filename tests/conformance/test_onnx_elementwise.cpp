// ONNX operator conformance: every case of family "elementwise" in
// tests/data/onnx/index.json, evaluated by fusor's host executor (fused) and
// by the unfused reference executor, compared with ONNX's expected output.
//
// How a case runs (see tests/conformance/README.md):
//  - case.json's single node is mapped to a fusor expression (op_type +
//    attributes -> fusor factory; see build_and_run below);
//  - every input is viewed as a rank-4 tensor: its ONNX shape left-padded
//    with 1s. ONNX broadcasting is right-aligned, so this is equivalent, and
//    it keeps one instantiation per (op, dtype combination) instead of one
//    per rank as well (compile time);
//  - the output buffer has fusor's result dtype for the expression, which
//    must equal the expected file's dtype (a dtype mismatch is a failure);
//  - comparison follows numpy.allclose(equal_nan=True) with the case's
//    rtol/atol for floats, exact equality for integer and bool outputs;
//  - each case also checks the kernel counts: one fused kernel on host(),
//    one kernel per op on unfused().
//
// Nothing is skipped silently: an op_type, attribute, dtype combination or
// rank this file does not handle throws, which fails that case; the number of
// cases run plus the listed known failures must equal the number of
// elementwise entries in index.json.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace ft = fusor::testing;
using i64 = std::int64_t;
using i32 = std::int32_t;
using i8 = std::int8_t;
using u8 = std::uint8_t;
using i16 = std::int16_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// ---------------------------------------------------------------- known failures
// Cases that disagree with ONNX because of a fusor bug. They are excluded from
// the main test case and run in "[!mayfail]" test case below, so the main
// test stays green while the bug stays visible. Each entry says why.
struct listed_case {
  const char* name;
  const char* reason;
};
const std::vector<listed_case> known_failures = {
};

// Cases deliberately not run at all. Each entry says why.
const std::vector<listed_case> not_run = {
    {"test_celu_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_max_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_min_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_isinf_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_isnan_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_mod_float16_mixed_sign_fmod_0", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_mod_float_edge_cases_fmod_0_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
    {"test_mod_mixed_sign_float16", "float16 data: this test's tensors hold float32, float64, int32, int64 and bool (fusor's f16 elementwise path is checked in test_ops)"},
};

bool listed(const std::vector<listed_case>& list, const std::string& name) {
  return std::any_of(list.begin(), list.end(), [&](const listed_case& c) { return name == c.name; });
}

// ---------------------------------------------------------------- tensors
constexpr int kRank = 4;            // every view has this rank (shapes left-padded with 1s)
constexpr std::size_t kMaxVariadic = 3;  // Max/Min/Sum/Mean: most inputs instantiated
using ext_t = fusor::dextents<kRank>;

enum class elem { f32, f64, i32, i64, b1, s8, u8, s16, u16, u32, u64 };

const char* elem_name(elem e) {
  switch (e) {
    case elem::f32: return "float32";
    case elem::f64: return "float64";
    case elem::i32: return "int32";
    case elem::i64: return "int64";
    case elem::b1: return "bool";
    case elem::s8: return "int8";
    case elem::u8: return "uint8";
    case elem::s16: return "int16";
    case elem::u16: return "uint16";
    case elem::u32: return "uint32";
    case elem::u64: return "uint64";
  }
  return "?";
}

template <class T>
constexpr elem elem_of() {
  if constexpr (std::is_same_v<T, float>) return elem::f32;
  else if constexpr (std::is_same_v<T, double>) return elem::f64;
  else if constexpr (std::is_same_v<T, i32>) return elem::i32;
  else if constexpr (std::is_same_v<T, i64>) return elem::i64;
  else if constexpr (std::is_same_v<T, i8>) return elem::s8;
  else if constexpr (std::is_same_v<T, u8>) return elem::u8;
  else if constexpr (std::is_same_v<T, i16>) return elem::s16;
  else if constexpr (std::is_same_v<T, u16>) return elem::u16;
  else if constexpr (std::is_same_v<T, u32>) return elem::u32;
  else if constexpr (std::is_same_v<T, u64>) return elem::u64;
  else {
    static_assert(std::is_same_v<T, bool>, "conformance test: unsupported storage type");
    return elem::b1;
  }
}

// An owned tensor of one of the dtypes the elementwise cases use.
struct tensor {
  elem type = elem::f32;
  std::vector<i64> shape;  // the ONNX shape (not padded)
  std::vector<float> f;
  std::vector<double> d;
  std::vector<i32> i4;
  std::vector<i64> i;
  std::vector<i8> s1;
  std::vector<u8> u1;
  std::vector<i16> s2;
  std::vector<u16> u2;
  std::vector<u32> u4;
  std::vector<u64> u8w;
  std::unique_ptr<bool[]> b;  // std::vector<bool> has no data()

  i64 size() const {
    i64 n = 1;
    for (i64 d : shape) n *= d;
    return n;
  }
  template <class T>
  T* data() {
    if constexpr (std::is_same_v<T, float>) return f.data();
    else if constexpr (std::is_same_v<T, double>) return d.data();
    else if constexpr (std::is_same_v<T, i32>) return i4.data();
    else if constexpr (std::is_same_v<T, i64>) return i.data();
    else if constexpr (std::is_same_v<T, i8>) return s1.data();
    else if constexpr (std::is_same_v<T, u8>) return u1.data();
    else if constexpr (std::is_same_v<T, i16>) return s2.data();
    else if constexpr (std::is_same_v<T, u16>) return u2.data();
    else if constexpr (std::is_same_v<T, u32>) return u4.data();
    else if constexpr (std::is_same_v<T, u64>) return u8w.data();
    else return b.get();
  }
  template <class T>
  const T* data() const {
    return const_cast<tensor*>(this)->data<T>();
  }
};

template <class T>
tensor make_tensor(std::vector<i64> shape) {
  tensor t;
  t.type = elem_of<T>();
  t.shape = std::move(shape);
  const auto n = static_cast<std::size_t>(t.size());
  // Sentinels, so an element the executor never wrote is visible.
  if constexpr (std::is_same_v<T, float>) t.f.assign(n, std::numeric_limits<float>::quiet_NaN());
  else if constexpr (std::is_same_v<T, double>) t.d.assign(n, std::numeric_limits<double>::quiet_NaN());
  else if constexpr (std::is_same_v<T, i32>) t.i4.assign(n, i32(0x5eed5eed));
  else if constexpr (std::is_same_v<T, i64>) t.i.assign(n, i64(0x5eed5eed5eed5eed));
  else if constexpr (std::is_same_v<T, i8>) t.s1.assign(n, i8(0x5e));
  else if constexpr (std::is_same_v<T, u8>) t.u1.assign(n, u8(0xed));
  else if constexpr (std::is_same_v<T, i16>) t.s2.assign(n, i16(0x5eed));
  else if constexpr (std::is_same_v<T, u16>) t.u2.assign(n, u16(0x5eed));
  else if constexpr (std::is_same_v<T, u32>) t.u4.assign(n, u32(0x5eed5eed));
  else if constexpr (std::is_same_v<T, u64>) t.u8w.assign(n, u64(0x5eed5eed5eed5eedull));
  else {
    t.b.reset(new bool[n > 0 ? n : 1]);
    std::fill_n(t.b.get(), n, false);
  }
  return t;
}

template <class T>
tensor make_tensor(std::vector<i64> shape, const std::vector<T>& values) {
  tensor t = make_tensor<T>(std::move(shape));
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

tensor from_npy(const ft::npy_array& a) {
  switch (a.dtype) {
    case ft::npy_dtype::f32: return make_tensor<float>(a.shape, a.as<float>());
    case ft::npy_dtype::f64: return make_tensor<double>(a.shape, a.as<double>());
    case ft::npy_dtype::i32: return make_tensor<i32>(a.shape, a.as<i32>());
    case ft::npy_dtype::i64: return make_tensor<i64>(a.shape, a.as<i64>());
    case ft::npy_dtype::i8: return make_tensor<i8>(a.shape, a.as<i8>());
    case ft::npy_dtype::u8: return make_tensor<u8>(a.shape, a.as<u8>());
    case ft::npy_dtype::i16: return make_tensor<i16>(a.shape, a.as<i16>());
    case ft::npy_dtype::u16: return make_tensor<u16>(a.shape, a.as<u16>());
    case ft::npy_dtype::u32: return make_tensor<u32>(a.shape, a.as<u32>());
    case ft::npy_dtype::u64: return make_tensor<u64>(a.shape, a.as<u64>());
    case ft::npy_dtype::b1: {
      tensor t = make_tensor<bool>(a.shape);
      const auto v = a.as<bool>();
      std::copy(v.begin(), v.end(), t.b.get());
      return t;
    }
    default:
      throw std::runtime_error(std::string("input dtype ") + ft::npy_dtype_name(a.dtype) +
                               " is not handled by this test (float32, float64, 8- to 64-bit integers, bool)");
  }
}

std::string shape_str(const std::vector<i64>& s) {
  std::string out = "[";
  for (std::size_t d = 0; d < s.size(); ++d) out += (d ? ", " : "") + std::to_string(s[d]);
  return out + "]";
}

ext_t padded(const std::vector<i64>& s) {
  if (s.size() > std::size_t(kRank))
    throw std::runtime_error("rank " + std::to_string(s.size()) + " shape " + shape_str(s) +
                             " exceeds this test's padded rank " + std::to_string(kRank));
  cuda::std::array<i64, kRank> e{};
  e.fill(1);
  std::copy(s.begin(), s.end(), e.begin() + (kRank - i64(s.size())));
  return ext_t(e);
}

// ONNX multidirectional broadcasting of the input shapes (right-aligned).
std::vector<i64> broadcast_shape(const std::vector<const tensor*>& ins) {
  std::size_t rank = 0;
  for (const tensor* t : ins) rank = std::max(rank, t->shape.size());
  std::vector<i64> out(rank, 1);
  for (const tensor* t : ins) {
    const std::size_t off = rank - t->shape.size();
    for (std::size_t d = 0; d < t->shape.size(); ++d) {
      const i64 e = t->shape[d];
      i64& o = out[off + d];
      if (e == o || e == 1) continue;
      if (o != 1) throw std::runtime_error("input shapes do not broadcast");
      o = e;
    }
  }
  return out;
}

template <class T>
auto in_view(const tensor& t) {
  return fusor::host_view(t.data<T>(), padded(t.shape));
}

// ---------------------------------------------------------------- evaluation
using inputs = std::vector<const tensor*>;

struct outcome {
  std::string executor;  // "host()" or "unfused()"
  tensor value;
  std::size_t kernels = 0;           // kernels the run launched
  std::size_t expected_kernels = 0;  // 1 fused; one per op unfused
};

// Number of op nodes in expression type E (views and scalars count 0): the
// kernels the unfused executor launches for it.
template <class E>
constexpr int op_count(const E& e) {
  if constexpr (fusor::is_node_v<E>)
    return fusor::apply([](const auto&... a) { return 1 + (0 + ... + op_count(a)); }, e.args);
  else
    return 0;
}

template <class... T>
struct types {};
template <class... L>
struct combos {};

template <class T, std::size_t>
using always = T;

template <class... T>
bool types_match(const inputs& in) {
  if (in.size() != sizeof...(T)) return false;
  std::size_t k = 0;
  return ((in[k++]->type == elem_of<T>()) && ...);
}

std::string types_of(const inputs& in) {
  std::string s = "(";
  for (std::size_t k = 0; k < in.size(); ++k) s += (k ? ", " : "") + std::string(elem_name(in[k]->type));
  return s + ")";
}

// Builds build(views of `in` as T...) and runs it on host() and unfused(),
// each into a fresh output of fusor's result dtype and the broadcast shape.
template <class... T, class Build>
std::vector<outcome> evaluate(types<T...>, const Build& build, const inputs& in) {
  const auto expr = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return build(in_view<T>(*in[K])...);
  }(std::index_sequence_for<T...>{});
  using V = fusor::value_t<decltype(expr)>;
  const auto shape = broadcast_shape(in);
  std::vector<outcome> out;
  {
    tensor t = make_tensor<V>(shape);
    const auto r = fusor::run(fusor::host_view(t.data<V>(), padded(shape)), expr, fusor::host());
    out.push_back({"host()", std::move(t), r.kernels, 1});
  }
  {
    tensor t = make_tensor<V>(shape);
    const auto r = fusor::run(fusor::host_view(t.data<V>(), padded(shape)), expr, fusor::unfused());
    // (a bare view, no op, is still copied by one kernel)
    out.push_back({"unfused()", std::move(t), r.kernels, std::size_t(std::max(1, op_count(expr)))});
  }
  return out;
}

template <class Build>
std::vector<outcome> dispatch(const Build&, const inputs& in, const std::string& op, combos<>) {
  throw std::runtime_error(op + ": input dtypes " + types_of(in) + " are not handled by this test");
}
template <class Build, class... T, class... More>
std::vector<outcome> dispatch(const Build& b, const inputs& in, const std::string& op,
                              combos<types<T...>, More...>) {
  if (types_match<T...>(in)) return evaluate(types<T...>{}, b, in);
  return dispatch(b, in, op, combos<More...>{});
}

// Left fold: ((v0 f v1) f v2) ..., as ONNX's reference for Max/Min/Sum/Mean.
template <class F, class V0>
auto fold(const F&, V0 v0) {
  return v0;
}
template <class F, class V0, class V1, class... Vs>
auto fold(const F& f, V0 v0, V1 v1, Vs... vs) {
  return fold(f, f(v0, v1), vs...);
}

// Variadic ONNX ops (Max, Min, Sum, Mean) fold their inputs with the binary op.
template <class F, class... V>
auto variadic_expr(const F& f, V... v) {
  return fold(f, v...);  // one input: the bare view itself (ONNX Max/Sum of one tensor)
}

// Max/Min/Sum/Mean over N inputs of one dtype T. `post` receives the fold
// and N (Mean divides by it).
template <class T, std::size_t N, class F, class Post>
std::vector<outcome> variadic_n(const F& f, const Post& post, const inputs& in) {
  using repeated = decltype([]<std::size_t... K>(std::index_sequence<K...>) {
    return types<always<T, K>...>{};
  }(std::make_index_sequence<N>{}));
  return evaluate(repeated{}, [&](auto... v) { return post(variadic_expr(f, v...), N); }, in);
}

template <class T, class F, class Post>
std::vector<outcome> variadic(const F& f, const Post& post, const inputs& in, const std::string& op) {
  if (!std::all_of(in.begin(), in.end(), [](const tensor* t) { return t->type == elem_of<T>(); }))
    throw std::runtime_error(op + ": input dtypes " + types_of(in) + " are not handled by this test");
  static_assert(kMaxVariadic == 3, "update the switch below");
  switch (in.size()) {
    case 1: return variadic_n<T, 1>(f, post, in);
    case 2: return variadic_n<T, 2>(f, post, in);
    case 3: return variadic_n<T, 3>(f, post, in);
  }
  throw std::runtime_error(op + ": " + std::to_string(in.size()) + " inputs; this test instantiates 1.." +
                           std::to_string(kMaxVariadic));
}

// Throws unless every attribute of `n` is in `allowed`, so that an attribute
// this test does not map is never ignored silently.
void check_attributes(const ft::onnx_node& n, std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : n.attributes.items()) {
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; }))
      throw std::runtime_error(n.op_type + ": attribute '" + key + "' (" + value.dump() +
                               ") is not handled by this test");
  }
}

// Clip's bound: the given tensor, or (absent) -inf/+inf for floats and the
// type's limits for integers, as a 0-d tensor.
template <class T>
tensor clip_bound(const tensor* given, bool low, std::optional<float> attr) {
  if (given) {
    if (given->type != elem_of<T>()) throw std::runtime_error("Clip: min/max dtype differs from the input's");
    tensor t = make_tensor<T>(given->shape);
    std::copy_n(given->data<T>(), given->size(), t.data<T>());
    return t;
  }
  T v;
  if (attr) v = static_cast<T>(*attr);
  else if constexpr (std::numeric_limits<T>::has_infinity)
    v = low ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else v = low ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  return make_tensor<T>({}, std::vector<T>{v});
}

// Maps the node to a fusor expression over `in` (the node's inputs, nullptr
// for an omitted optional input) and runs it on both executors.
std::vector<outcome> build_and_run(const ft::onnx_node& n, int opset, const inputs& in_with_absent) {
  const std::string& op = n.op_type;
  inputs in;  // the present inputs
  for (const tensor* t : in_with_absent)
    if (t) in.push_back(t);
  const auto arity = [&](std::size_t k) {
    if (in_with_absent.size() != k || in.size() != k)
      throw std::runtime_error(op + ": expected " + std::to_string(k) + " inputs, node has " +
                               std::to_string(in_with_absent.size()) + " (" + std::to_string(in.size()) + " present)");
  };
  using f32_1 = combos<types<float>>;

  // ---- unary, float32
  const auto unary = [&](auto f) {
    arity(1);
    return dispatch(f, in, op, f32_1{});
  };
  if (op == "Abs") { check_attributes(n, {}); return unary([](auto x) { return fusor::abs(x); }); }
  if (op == "Neg") { check_attributes(n, {}); return unary([](auto x) { return -x; }); }
  if (op == "Exp") { check_attributes(n, {}); return unary([](auto x) { return fusor::exp(x); }); }
  if (op == "Log") { check_attributes(n, {}); return unary([](auto x) { return fusor::log(x); }); }
  if (op == "Sqrt") { check_attributes(n, {}); return unary([](auto x) { return fusor::sqrt(x); }); }
  if (op == "Reciprocal") { check_attributes(n, {}); return unary([](auto x) { return fusor::reciprocal(x); }); }
  if (op == "Tanh") { check_attributes(n, {}); return unary([](auto x) { return fusor::tanh(x); }); }
  if (op == "Sigmoid") { check_attributes(n, {}); return unary([](auto x) { return fusor::sigmoid(x); }); }
  if (op == "Erf") { check_attributes(n, {}); return unary([](auto x) { return fusor::erf(x); }); }
  if (op == "Relu") { check_attributes(n, {}); return unary([](auto x) { return fusor::relu(x); }); }
  if (op == "HardSwish") { check_attributes(n, {}); return unary([](auto x) { return fusor::hardswish(x); }); }
  if (op == "Softplus") { check_attributes(n, {}); return unary([](auto x) { return fusor::softplus(x); }); }
  if (op == "Softsign") { check_attributes(n, {}); return unary([](auto x) { return fusor::softsign(x); }); }
  // Attributes: absent -> fusor's default argument, so fusor's defaults are
  // checked against ONNX's too.
  if (op == "LeakyRelu") {
    check_attributes(n, {"alpha"});
    return unary([&](auto x) {
      return n.has_attr("alpha") ? fusor::leaky_relu(x, n.attr_f("alpha", 0)) : fusor::leaky_relu(x);
    });
  }
  if (op == "Celu") {
    check_attributes(n, {"alpha"});
    return unary([&](auto x) { return n.has_attr("alpha") ? fusor::celu(x, n.attr_f("alpha", 0)) : fusor::celu(x); });
  }
  if (op == "Gelu") {
    // approximate: "none" (erf, the default) or "tanh"
    check_attributes(n, {"approximate"});
    const std::string approx = n.has_attr("approximate") ? n.attributes.at("approximate").get<std::string>() : "none";
    if (approx == "tanh") return unary([](auto x) { return fusor::gelu_tanh(x); });
    if (approx != "none") throw std::runtime_error("Gelu: approximate = '" + approx + "' is not an ONNX value");
    return unary([](auto x) { return fusor::gelu(x); });
  }
  if (op == "Elu") {
    check_attributes(n, {"alpha"});
    return unary([&](auto x) { return n.has_attr("alpha") ? fusor::elu(x, n.attr_f("alpha", 0)) : fusor::elu(x); });
  }
  if (op == "ThresholdedRelu") {
    check_attributes(n, {"alpha"});
    return unary([&](auto x) {
      return n.has_attr("alpha") ? fusor::thresholded_relu(x, n.attr_f("alpha", 0)) : fusor::thresholded_relu(x);
    });
  }
  if (op == "Selu") {
    check_attributes(n, {"alpha", "gamma"});
    // ONNX defaults (float32): alpha = 1.67326319..., gamma = 1.05070102...
    const bool a = n.has_attr("alpha"), g = n.has_attr("gamma");
    const float alpha = n.attr_f("alpha", 1.67326319217681884765625f);
    const float gamma = n.attr_f("gamma", 1.05070102214813232421875f);
    return unary([&](auto x) {
      return (a || g) ? fusor::selu(x, alpha, gamma) : fusor::selu(x);
    });
  }
  if (op == "HardSigmoid") {
    check_attributes(n, {"alpha", "beta"});
    const bool given = n.has_attr("alpha") || n.has_attr("beta");
    const float alpha = n.attr_f("alpha", 0.2f), beta = n.attr_f("beta", 0.5f);
    return unary([&](auto x) { return given ? fusor::hardsigmoid(x, alpha, beta) : fusor::hardsigmoid(x); });
  }
  if (op == "Clip") {
    // opset >= 11: optional inputs min, max; opset < 11: attributes min, max.
    std::optional<float> amin, amax;
    if (opset < 11) {
      check_attributes(n, {"min", "max"});
      if (n.has_attr("min")) amin = n.attr_f("min", 0);
      if (n.has_attr("max")) amax = n.attr_f("max", 0);
    } else {
      check_attributes(n, {});
    }
    if (in_with_absent.empty() || !in_with_absent[0] || in_with_absent.size() > 3)
      throw std::runtime_error("Clip: expected input x and optional min, max");
    const tensor* x = in_with_absent[0];
    const tensor* lo_in = in_with_absent.size() > 1 ? in_with_absent[1] : nullptr;
    const tensor* hi_in = in_with_absent.size() > 2 ? in_with_absent[2] : nullptr;
    if (x->type == elem::s8) {
      const tensor lo = clip_bound<i8>(lo_in, true, amin), hi = clip_bound<i8>(hi_in, false, amax);
      return dispatch([](auto v, auto l, auto h) { return fusor::clip(v, l, h); }, {x, &lo, &hi}, op,
                      combos<types<i8, i8, i8>>{});
    }
    if (x->type != elem::f32) throw std::runtime_error("Clip: input dtypes " + types_of(in) + " are not handled by this test");
    const tensor lo = clip_bound<float>(lo_in, true, amin), hi = clip_bound<float>(hi_in, false, amax);
    return dispatch([](auto v, auto l, auto h) { return fusor::clip(v, l, h); }, {x, &lo, &hi}, op,
                    combos<types<float, float, float>>{});
  }

  // ---- issue 21: trigonometric, rounding, sign (float32), comparisons,
  // logical, isnan / isinf, mod and bitwise ops over their ONNX dtypes
  if (op == "Sin") { check_attributes(n, {}); return unary([](auto x) { return fusor::sin(x); }); }
  if (op == "Cos") { check_attributes(n, {}); return unary([](auto x) { return fusor::cos(x); }); }
  if (op == "Tan") { check_attributes(n, {}); return unary([](auto x) { return fusor::tan(x); }); }
  if (op == "Asin") { check_attributes(n, {}); return unary([](auto x) { return fusor::asin(x); }); }
  if (op == "Acos") { check_attributes(n, {}); return unary([](auto x) { return fusor::acos(x); }); }
  if (op == "Atan") { check_attributes(n, {}); return unary([](auto x) { return fusor::atan(x); }); }
  if (op == "Sinh") { check_attributes(n, {}); return unary([](auto x) { return fusor::sinh(x); }); }
  if (op == "Cosh") { check_attributes(n, {}); return unary([](auto x) { return fusor::cosh(x); }); }
  if (op == "Asinh") { check_attributes(n, {}); return unary([](auto x) { return fusor::asinh(x); }); }
  if (op == "Acosh") { check_attributes(n, {}); return unary([](auto x) { return fusor::acosh(x); }); }
  if (op == "Atanh") { check_attributes(n, {}); return unary([](auto x) { return fusor::atanh(x); }); }
  if (op == "Floor") { check_attributes(n, {}); return unary([](auto x) { return fusor::floor(x); }); }
  if (op == "Ceil") { check_attributes(n, {}); return unary([](auto x) { return fusor::ceil(x); }); }
  if (op == "Round") { check_attributes(n, {}); return unary([](auto x) { return fusor::round(x); }); }
  if (op == "Sign") { check_attributes(n, {}); return unary([](auto x) { return fusor::sign(x); }); }
  using numeric_2 = combos<types<float, float>, types<double, double>, types<i32, i32>, types<i64, i64>, types<i8, i8>,
                           types<u8, u8>, types<i16, i16>, types<u16, u16>, types<u32, u32>, types<u64, u64>>;
  using bool_2 = combos<types<bool, bool>>;
  if (op == "Equal") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a == b; }, in, op, combos<types<float, float>, types<i32, i32>, types<i64, i64>, types<i8, i8>, types<u8, u8>, types<i16, i16>, types<u16, u16>, types<u32, u32>, types<u64, u64>, types<bool, bool>>{}); }
  if (op == "Less") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a < b; }, in, op, numeric_2{}); }
  if (op == "LessOrEqual") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a <= b; }, in, op, numeric_2{}); }
  if (op == "Greater") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a > b; }, in, op, numeric_2{}); }
  if (op == "GreaterOrEqual") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a >= b; }, in, op, numeric_2{}); }
  if (op == "And") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return fusor::logical_and(a, b); }, in, op, bool_2{}); }
  if (op == "Or") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return fusor::logical_or(a, b); }, in, op, bool_2{}); }
  if (op == "Xor") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return fusor::logical_xor(a, b); }, in, op, bool_2{}); }
  if (op == "Not") { check_attributes(n, {}); arity(1); return dispatch([](auto a) { return !a; }, in, op, combos<types<bool>>{}); }
  if (op == "IsNaN") { check_attributes(n, {}); return unary([](auto x) { return fusor::isnan(x); }); }
  if (op == "IsInf") {
    // detect_negative / detect_positive (default 1 each): which infinities count
    check_attributes(n, {"detect_negative", "detect_positive"});
    const bool neg = n.has_attr("detect_negative") ? n.attributes.at("detect_negative").get<int>() != 0 : true;
    const bool pos = n.has_attr("detect_positive") ? n.attributes.at("detect_positive").get<int>() != 0 : true;
    if (neg && pos) return unary([](auto x) { return fusor::isinf(x); });
    if (pos) return unary([](auto x) { return fusor::logical_and(fusor::isinf(x), x > 0.0f); });
    if (neg) return unary([](auto x) { return fusor::logical_and(fusor::isinf(x), x < 0.0f); });
    return unary([](auto x) { return fusor::logical_and(fusor::isinf(x), x != x); });  // neither: always false
  }
  if (op == "Mod") {
    check_attributes(n, {"fmod"});
    arity(2);
    const bool c_fmod = n.has_attr("fmod") && n.attributes.at("fmod").get<int>() != 0;
    if (c_fmod) return dispatch([](auto a, auto b) { return fusor::fmod(a, b); }, in, op, numeric_2{});
    return dispatch([](auto a, auto b) { return fusor::mod(a, b); }, in, op, numeric_2{});
  }
  using int_2 = combos<types<i32, i32>, types<i64, i64>, types<i8, i8>, types<u8, u8>, types<i16, i16>, types<u16, u16>,
                       types<u32, u32>, types<u64, u64>>;
  if (op == "BitwiseAnd") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return fusor::bitwise_and(a, b); }, in, op, int_2{}); }
  if (op == "BitwiseOr") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return fusor::bitwise_or(a, b); }, in, op, int_2{}); }
  if (op == "BitwiseXor") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return fusor::bitwise_xor(a, b); }, in, op, int_2{}); }
  if (op == "BitwiseNot") { check_attributes(n, {}); arity(1); return dispatch([](auto a) { return fusor::bitwise_not(a); }, in, op, combos<types<i32>, types<i64>, types<i8>, types<u8>, types<i16>, types<u16>, types<u32>, types<u64>>{}); }

  // ---- binary
  using f32_2 = combos<types<float, float>>;
  if (op == "Add") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a + b; }, in, op, numeric_2{}); }
  if (op == "Sub") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a - b; }, in, op, numeric_2{}); }
  if (op == "Mul") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a * b; }, in, op, numeric_2{}); }
  if (op == "Div") { check_attributes(n, {}); arity(2); return dispatch([](auto a, auto b) { return a / b; }, in, op, numeric_2{}); }
  if (op == "PRelu") {
    check_attributes(n, {});
    arity(2);
    return dispatch([](auto x, auto s) { return fusor::prelu(x, s); }, in, op, f32_2{});
  }
  if (op == "Pow") {
    check_attributes(n, {});
    arity(2);
    return dispatch([](auto a, auto b) { return fusor::pow(a, b); }, in, op,
                    combos<types<float, float>, types<float, i64>, types<i64, float>, types<i64, i64>,
                           types<float, i32>, types<i32, float>, types<i32, i32>, types<float, u32>, types<float, u64>>{});
  }
  if (op == "Where") {
    check_attributes(n, {});
    arity(3);
    return dispatch([](auto c, auto x, auto y) { return fusor::where(c, x, y); }, in, op,
                    combos<types<bool, float, float>, types<bool, i64, i64>>{});
  }

  // ---- variadic (1..N inputs, one dtype)
  const auto none = [](auto e, std::size_t) { return e; };
  const auto fmax = [](auto a, auto b) { return fusor::max(a, b); };
  const auto fmin = [](auto a, auto b) { return fusor::min(a, b); };
  const auto fadd = [](auto a, auto b) { return a + b; };
  const elem first_type = in.empty() ? elem::f32 : in[0]->type;
  if (in.size() != in_with_absent.size()) throw std::runtime_error(op + ": an input name is empty");
  if (op == "Max") {
    check_attributes(n, {});
    if (first_type == elem::i64) return variadic<i64>(fmax, none, in, op);
    if (first_type == elem::s8) return variadic<i8>(fmax, none, in, op);
    if (first_type == elem::u8) return variadic<u8>(fmax, none, in, op);
    if (first_type == elem::s16) return variadic<i16>(fmax, none, in, op);
    if (first_type == elem::u16) return variadic<u16>(fmax, none, in, op);
    if (first_type == elem::u32) return variadic<u32>(fmax, none, in, op);
    if (first_type == elem::u64) return variadic<u64>(fmax, none, in, op);
    if (first_type == elem::i32) return variadic<i32>(fmax, none, in, op);
    if (first_type == elem::f64) return variadic<double>(fmax, none, in, op);
    return variadic<float>(fmax, none, in, op);
  }
  if (op == "Min") {
    check_attributes(n, {});
    if (first_type == elem::i64) return variadic<i64>(fmin, none, in, op);
    if (first_type == elem::s8) return variadic<i8>(fmin, none, in, op);
    if (first_type == elem::u8) return variadic<u8>(fmin, none, in, op);
    if (first_type == elem::s16) return variadic<i16>(fmin, none, in, op);
    if (first_type == elem::u16) return variadic<u16>(fmin, none, in, op);
    if (first_type == elem::u32) return variadic<u32>(fmin, none, in, op);
    if (first_type == elem::u64) return variadic<u64>(fmin, none, in, op);
    if (first_type == elem::i32) return variadic<i32>(fmin, none, in, op);
    if (first_type == elem::f64) return variadic<double>(fmin, none, in, op);
    return variadic<float>(fmin, none, in, op);
  }
  if (op == "Sum") { check_attributes(n, {}); return variadic<float>(fadd, none, in, op); }
  if (op == "Mean") {
    check_attributes(n, {});
    return variadic<float>(fadd, [](auto e, std::size_t count) { return e / float(count); }, in, op);
  }

  throw std::runtime_error("op_type " + op + " is not mapped to fusor by this test");
}

// ---------------------------------------------------------------- comparison
struct comparison {
  std::size_t compared = 0, bad = 0;
  std::string details;  // the first few mismatches
};

// numpy.isclose(got, want, rtol, atol, equal_nan=True) for one float pair.
bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

std::string index_str(std::size_t flat, const std::vector<i64>& shape) {
  std::vector<i64> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = i64(flat) % shape[d];
    flat /= std::size_t(shape[d]);
  }
  return shape_str(idx);
}

// The 16- to 64-bit integer outputs compared exactly (a dtype fusor did not
// produce: the caller's mismatch message).
template <class T, class Note>
comparison compare_ints(const tensor& got, const ft::npy_array& want, elem type, comparison& c, std::ostringstream& msg,
                        const Note& note) {
  if (got.type != type) {
    c.bad = 1;
    c.details = std::string("\n    dtype: fusor's result is ") + elem_name(got.type) + ", ONNX expects " +
                ft::npy_dtype_name(want.dtype);
    return c;
  }
  const auto w = want.as<T>();
  const T* g = got.data<T>();
  for (std::size_t k = 0; k < w.size(); ++k, ++c.compared)
    if (g[k] != w[k]) note(k, g[k], w[k]);
  c.details = msg.str();
  return c;
}

comparison compare(const tensor& got, const ft::npy_array& want, double rtol, double atol) {
  comparison c;
  std::ostringstream msg;
  msg.precision(9);
  const auto note = [&](std::size_t k, auto g, auto w) {
    if (++c.bad <= 5) msg << "\n    at " << index_str(k, want.shape) << ": got " << g << ", want " << w;
  };
  if (got.shape != want.shape) {
    c.bad = 1;
    c.details = "\n    shape: got " + shape_str(got.shape) + ", want " + shape_str(want.shape);
    return c;
  }
  const auto n = static_cast<std::size_t>(want.size());
  switch (want.dtype) {
    case ft::npy_dtype::f32: {
      if (got.type != elem::f32) break;
      const auto w = want.as<float>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (!close(got.f[k], w[k], rtol, atol)) note(k, got.f[k], w[k]);
      c.details = msg.str();
      return c;
    }
    case ft::npy_dtype::f64: {
      if (got.type != elem::f64) break;
      const auto w = want.as<double>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (!close(got.d[k], w[k], rtol, atol)) note(k, got.d[k], w[k]);
      c.details = msg.str();
      return c;
    }
    case ft::npy_dtype::i32: {
      if (got.type != elem::i32) break;
      const auto w = want.as<i32>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (got.i4[k] != w[k]) note(k, got.i4[k], w[k]);
      c.details = msg.str();
      return c;
    }
    case ft::npy_dtype::i64: {
      if (got.type != elem::i64) break;
      const auto w = want.as<i64>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (got.i[k] != w[k]) note(k, got.i[k], w[k]);
      c.details = msg.str();
      return c;
    }
    case ft::npy_dtype::i8: {
      if (got.type != elem::s8) break;
      const auto w = want.as<i8>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (got.s1[k] != w[k]) note(k, int(got.s1[k]), int(w[k]));
      c.details = msg.str();
      return c;
    }
    case ft::npy_dtype::u8: {
      if (got.type != elem::u8) break;
      const auto w = want.as<u8>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (got.u1[k] != w[k]) note(k, int(got.u1[k]), int(w[k]));
      c.details = msg.str();
      return c;
    }
    case ft::npy_dtype::i16: return compare_ints<i16>(got, want, elem::s16, c, msg, note);
    case ft::npy_dtype::u16: return compare_ints<u16>(got, want, elem::u16, c, msg, note);
    case ft::npy_dtype::u32: return compare_ints<u32>(got, want, elem::u32, c, msg, note);
    case ft::npy_dtype::u64: return compare_ints<u64>(got, want, elem::u64, c, msg, note);
    case ft::npy_dtype::b1: {
      if (got.type != elem::b1) break;
      const auto w = want.as<bool>();
      for (std::size_t k = 0; k < n; ++k, ++c.compared)
        if (got.b[k] != w[k]) note(k, got.b[k], w[k]);
      c.details = msg.str();
      return c;
    }
    default: break;
  }
  c.bad = 1;
  c.details = std::string("\n    dtype: fusor's result is ") + elem_name(got.type) + ", ONNX expects " +
              ft::npy_dtype_name(want.dtype);
  return c;
}

// ---------------------------------------------------------------- one case
// Runs every data set of case `name` and CHECKs both executors' outputs.
void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  REQUIRE(c.nodes.size() == 1);
  REQUIRE(c.outputs.size() == 1);
  REQUIRE(c.data_sets >= 1);
  const ft::onnx_node& n = c.node();
  REQUIRE(n.outputs.size() == 1);
  REQUIRE(n.outputs[0] == c.outputs[0]);
  INFO("op_type " << n.op_type << ", attributes " << n.attributes.dump() << ", opset " << c.opset
                  << ", rtol " << c.rtol << ", atol " << c.atol);
  for (int k = 0; k < c.data_sets; ++k) {
    INFO("data set " << k);
    const auto named = c.named_inputs(k);
    std::vector<tensor> storage;
    storage.reserve(n.inputs.size());
    inputs in;
    std::string shapes;
    for (const auto& input : n.inputs) {
      if (input.empty()) {
        in.push_back(nullptr);
        shapes += " (absent)";
        continue;
      }
      const auto it = named.find(input);
      REQUIRE(it != named.end());
      storage.push_back(from_npy(it->second));
      in.push_back(&storage.back());
      shapes += " " + std::string(ft::npy_dtype_name(it->second.dtype)) + shape_str(it->second.shape);
    }
    const ft::npy_array want = c.set_outputs(k).at(0);
    INFO("inputs" << shapes << " -> expected " << ft::npy_dtype_name(want.dtype) << shape_str(want.shape));

    std::vector<outcome> results;
    try {
      results = build_and_run(n, c.opset, in);
    } catch (const std::exception& e) {
      FAIL("case not run: " << e.what());
    }
    REQUIRE(results.size() == 2);
    for (const outcome& r : results) {
      const comparison cmp = compare(r.value, want, c.rtol, c.atol);
      INFO(r.executor << ": " << cmp.bad << " of " << want.size() << " elements differ" << cmp.details);
      CHECK(cmp.bad == 0);
      CHECK(cmp.compared == std::size_t(want.size()));
      // Every elementwise case is one fused kernel on host(), one kernel per op unfused.
      CHECK(r.kernels == r.expected_kernels);
    }
  }
}

std::vector<std::string> elementwise_cases() { return ft::onnx_cases_in_family("elementwise"); }

}  // namespace

TEST_CASE("ONNX elementwise cases: every case is run or listed", "[conformance][onnx][elementwise]") {
  const auto names = elementwise_cases();
  // The 63 elementwise op types fusor maps; each has at least one case.
  CHECK_NOTHROW(ft::onnx_cases_of({"Abs", "Add", "Sub", "Mul", "Div", "Neg", "Exp", "Log", "Sqrt", "Reciprocal",
                                   "Pow", "Max", "Min", "Mean", "Sum", "Tanh", "Sigmoid", "Erf", "Relu",
                                   "LeakyRelu", "Elu", "Selu", "HardSwish", "HardSigmoid", "Softplus", "Softsign",
                                   "Clip", "ThresholdedRelu", "PRelu", "Where", "Celu", "Gelu", "Sin", "Cos", "Tan", "Asin",
                                   "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Floor", "Ceil", "Round", "Sign", "Mod", "Equal",
                                   "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not",
                                   "IsNaN", "IsInf", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"}));
  std::size_t run = 0, failing = 0, skipped = 0;
  for (const auto& name : names) {
    if (listed(known_failures, name)) ++failing;
    else if (listed(not_run, name)) ++skipped;
    else ++run;
  }
  // Every listed name must be an elementwise case (a stale entry fails).
  for (const auto* list : {&known_failures, &not_run})
    for (const auto& l : *list) {
      INFO("listed case " << l.name);
      CHECK(std::count(names.begin(), names.end(), std::string(l.name)) == 1);
    }
  INFO(run << " run, " << failing << " known failures, " << skipped << " not run");
  CHECK(run + failing + skipped == names.size());
  CHECK(failing == known_failures.size());
  CHECK(skipped == not_run.size());
  CHECK(names.size() == 276);  // the current set (tests/data/onnx/README.md); update when cases are added
}

TEST_CASE("ONNX elementwise conformance on host() and unfused()", "[conformance][onnx][elementwise]") {
  const auto names = elementwise_cases();
  REQUIRE(!names.empty());
  // Catch2 re-enters this test case once per section; `entered` collects the
  // cases over all passes. On the pass that runs the last case, every case
  // before it has run (sections are entered in order), so the count is
  // checked there; a command-line section filter skips the check.
  static std::set<std::string> entered;
  std::string first_run, last_run;
  for (const auto& name : names) {
    if (listed(known_failures, name) || listed(not_run, name)) continue;
    if (first_run.empty()) first_run = name;
    last_run = name;
    DYNAMIC_SECTION(name) {
      entered.insert(name);
      run_case(name);
    }
  }
  if (entered.count(first_run) && entered.count(last_run)) {
    INFO("cases run: " << entered.size() << " of " << names.size() << " (" << known_failures.size()
                       << " known failures, " << not_run.size() << " not run)");
    CHECK(entered.size() + known_failures.size() + not_run.size() == names.size());
  }
}

TEST_CASE("ONNX elementwise known failures (fusor bugs)", "[conformance][onnx][elementwise][!mayfail]") {
  for (const auto& l : known_failures) {
    DYNAMIC_SECTION(l.name) {
      INFO("known failure: " << l.reason);
      run_case(l.name);
    }
  }
}
