// fusor_demo: a small CNN trained with PyTorch, run by fusor on real data.
//
// The 360 test images of the UCI optical digits set (8x8 pixels, 0..16;
// examples/data/digits.csv.gz, the last 360 of 1,797 rows) go through
//   conv3x3(1->16) -> BN -> ReLU                     (block "stem")
//   depthwise conv3x3(16) -> BN -> ReLU6 -> conv1x1(16->32) -> BN -> ReLU
//                                                    (block "mbconv")
//   global average pool                              (block "pool")
//   linear(32->64) -> GELU -> linear(64->10)         (block "head": logits)
//   softmax                                          (block "softmax")
// with the weights tools/train_digits.py exported (digits_cnn.safetensors),
// once fused (fusor::host()) and once op by op (fusor::unfused(), fusor's
// reference executor), in one batch. It prints the fusion plan of each block,
// the test accuracy, how far the logits are from the unfused run and from
// PyTorch's (digits_torch_logits.bin), and the time per batch of both.
// docs/demo.md describes it; `fusor_demo --help` lists the options.
//
// Exit status: 0 when fusor's predictions equal PyTorch's on every test image
// and the logits agree within the printed tolerances; 1 for unreadable or
// malformed data (the message names the file, and the tensor or line); 2
// for bad command-line arguments or an unavailable backend; 3 when the
// results disagree; 77 when --backend cuda finds no CUDA device (the "skipped"
// status of every GPU program here: tests/cuda, fuzz_gpu, bench_gpu_*). All input is read and checked before anything is
// printed on stdout.
#include <fusor/fusor.hpp>
#include <fusor/ops/batch_norm.hpp>

#include "demo_network.hpp"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef FUSOR_DEMO_DATA_DIR
#define FUSOR_DEMO_DATA_DIR "examples/data"
#endif

static_assert(std::endian::native == std::endian::little,
              "fusor_demo reads little-endian float32 data by memcpy: a big-endian host needs byte swaps");

namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Data set and model constants (tools/train_digits.py writes the same).

constexpr int kRows = 1797;             // images in digits.csv.gz
constexpr int kTrain = 1437;            // the first kTrain rows trained the model
constexpr int kTest = kRows - kTrain;   // 360: the demo's batch
using demo::kClasses;  // 10 classes
using demo::kPixels;   // 8x8 images, values 0..16
using demo::kSide;

// Tolerances on the logits (|logit| <= ~30 here). Everything is fp32
// (unit roundoff u = 2^-24 ~ 6e-8) with fp32 accumulation; the longest sums
// are K = 64 terms (fc2, and the 8x8 average pool), every other contraction
// has K <= 32 (conv 3x3 x 1 channel: 9, depthwise 3x3: 9, pointwise: 16,
// fc1: 32); a dense 16-channel 3x3 conv would be K = 144, still far inside
// these bounds. Two sources of difference:
//  - fused vs fusor's unfused executor: the same tile algorithm (k
//    ascending), but the fused planner folds each BatchNorm into the conv's
//    weights and bias (w * gamma / sqrt(var + eps), one rounding each), the
//    unfused executor applies BN after the conv. That changes the rounding
//    of every conv output by a few u relative; through 5 layers and a
//    logit magnitude of ~30 that is ~1e-5 at most in practice. Bound: 1e-4.
//  - vs PyTorch: another summation order (oneDNN/ATen kernels), BN applied
//    separately, erf from a different libm: same order of magnitude.
//    Bound: 2e-4.
// The smallest gap between the two largest PyTorch logits of a test image is
// 0.042 (tools/train_digits.py's output), so within these bounds every
// prediction must equal PyTorch's; the demo checks that separately.
constexpr double kTolUnfused = 1e-4;
constexpr double kTolTorch = 2e-4;

// ---------------------------------------------------------------------------
// Errors: thrown while reading input, caught in main before anything is
// printed on stdout.

struct data_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A valid request this machine or build cannot serve (no GPU, no CUDA
/// support built in): exit 2 like a usage error, but only the reason is
/// printed, not the usage text.
struct unavailable_error : usage_error {
  using usage_error::usage_error;
};
/// --backend cuda on a machine without a CUDA device: exit 77 ("skipped"),
/// so a GPU suite's dry run can tell "started, found no device" from a failure.
struct no_device_error : unavailable_error {
  using unavailable_error::unavailable_error;
};

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::vector<char> read_file(const fs::path& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw data_error(path.string() + ": cannot open " + what + ": " + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw data_error(path.string() + ": read error");
  return bytes;
}

// ---------------------------------------------------------------------------
// digits.csv.gz: kRows lines of 65 comma-separated integers (64 pixels
// 0..16, row-major, then the label 0..9), gzip-compressed.

struct digits {
  std::vector<float> pixels;  // [kRows, 64], scaled by 1/16 like the training script
  std::vector<int> labels;    // [kRows]
};

std::string gunzip(const fs::path& path) {
  { std::ifstream probe(path, std::ios::binary);
    if (!probe) throw data_error(path.string() + ": cannot open the data set: " + std::strerror(errno)); }
  gzFile f = gzopen(path.string().c_str(), "rb");
  if (!f) throw data_error(path.string() + ": cannot open the data set (zlib)");
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(f, &code);
      gzclose(f);
      throw data_error(path.string() + ": not a readable gzip file: " + msg);
    }
    if (n == 0) break;
    text.append(buf, std::size_t(n));
  }
  // gzread reports a truncated stream as end of file; gzclose_r says so.
  if (const int rc = gzclose(f); rc != Z_OK)
    throw data_error(path.string() + ": gzip stream is truncated or corrupt (zlib error " + std::to_string(rc) + ")");
  return text;
}

digits load_digits(const fs::path& path) {
  const std::string text = gunzip(path);
  digits d;
  d.pixels.reserve(std::size_t(kRows) * kPixels);
  d.labels.reserve(kRows);
  std::size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view row(text.data() + pos, end - pos);
    pos = end + 1;
    ++line;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (row.empty()) {
      if (pos >= text.size()) break;  // a final newline
      throw data_error(path.string() + ": line " + std::to_string(line) + " is empty");
    }
    const std::string where = path.string() + ": line " + std::to_string(line);
    const auto fields = std::count(row.begin(), row.end(), ',') + 1;
    if (fields != kPixels + 1)
      throw data_error(where + ": " + std::to_string(fields) + " comma-separated fields, expected " +
                       std::to_string(kPixels + 1) + " (64 pixels, then the label)");
    if (line > kRows) continue;  // counted below
    std::size_t f0 = 0;
    for (int field = 1; field <= kPixels + 1; ++field) {
      std::size_t f1 = row.find(',', f0);
      if (f1 == std::string_view::npos) f1 = row.size();
      std::string_view s = row.substr(f0, f1 - f0);
      f0 = f1 + 1;
      while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
      while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      double v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || s.empty())
        throw data_error(where + ", field " + std::to_string(field) + ": '" + std::string(s) + "' is not a number");
      const bool label = field == kPixels + 1;
      const double hi = label ? kClasses - 1 : 16;
      if (!(v >= 0 && v <= hi) || v != std::floor(v))
        throw data_error(where + ", field " + std::to_string(field) + ": " + std::string(s) + " is not " +
                         (label ? "a label 0..9" : "a pixel value 0..16"));
      if (label) d.labels.push_back(int(v));
      else d.pixels.push_back(float(v) / 16.0f);
    }
  }
  if (line != kRows)
    throw data_error(path.string() + ": " + std::to_string(line) + " rows, expected " + std::to_string(kRows) +
                     " (the digits set; the demo tests on the last " + std::to_string(kTest) + ")");
  return d;
}

// ---------------------------------------------------------------------------
// safetensors: u64 little-endian header length N, N bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"},
// then the data section (offsets are relative to its start).

struct tensor_spec {
  const char* name;
  std::vector<std::int64_t> shape;
};

const std::vector<tensor_spec>& model_tensors() {
  static const std::vector<tensor_spec> specs = {
      {"conv1.weight", {16, 1, 3, 3}},  {"bn1.weight", {16}},        {"bn1.bias", {16}},
      {"bn1.running_mean", {16}},       {"bn1.running_var", {16}},   {"dw.weight", {16, 1, 3, 3}},
      {"bn2.weight", {16}},             {"bn2.bias", {16}},          {"bn2.running_mean", {16}},
      {"bn2.running_var", {16}},        {"pw.weight", {32, 16, 1, 1}}, {"bn3.weight", {32}},
      {"bn3.bias", {32}},               {"bn3.running_mean", {32}},  {"bn3.running_var", {32}},
      {"fc1.weight", {64, 32}},         {"fc1.bias", {64}},          {"fc2.weight", {10, 64}},
      {"fc2.bias", {10}},
  };
  return specs;
}

struct weights {
  std::map<std::string, std::vector<float>> tensors;
  std::string torch_version = "unknown";
  std::size_t parameters = 0;
  const float* operator[](const std::string& name) const { return tensors.at(name).data(); }
};

weights load_weights(const fs::path& path) {
  const std::vector<char> bytes = read_file(path, "the model weights");
  const std::string file = path.string();
  if (bytes.size() < 8)
    throw data_error(file + ": truncated: " + std::to_string(bytes.size()) +
                     " bytes, a safetensors file starts with an 8-byte header length");
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > bytes.size() - 8)
    throw data_error(file + ": truncated or not safetensors: the header length says " + std::to_string(header_len) +
                     " bytes but only " + std::to_string(bytes.size() - 8) + " follow");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(header_len));
  } catch (const nlohmann::json::exception& e) {
    throw data_error(file + ": the safetensors header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw data_error(file + ": the safetensors header is not a JSON object");
  const std::size_t data_begin = 8 + std::size_t(header_len), data_size = bytes.size() - data_begin;

  weights w;
  if (auto m = header.find("__metadata__"); m != header.end() && m->is_object()) {
    if (auto v = m->find("torch_version"); v != m->end() && v->is_string()) w.torch_version = v->get<std::string>();
  }
  for (const auto& spec : model_tensors()) {
    const std::string where = file + ": tensor '" + spec.name + "'";
    const auto it = header.find(spec.name);
    if (it == header.end()) throw data_error(where + " is missing");
    const auto& t = *it;
    if (!t.is_object()) throw data_error(where + ": its header entry is not an object");
    const auto dt = t.find("dtype");
    if (dt == t.end() || !dt->is_string()) throw data_error(where + ": no dtype");
    if (dt->get<std::string>() != "F32")
      throw data_error(where + ": dtype " + dt->get<std::string>() + ", expected F32");
    const auto sh = t.find("shape");
    if (sh == t.end() || !sh->is_array()) throw data_error(where + ": no shape");
    std::vector<std::int64_t> shape;
    for (const auto& e : *sh) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0)
        throw data_error(where + ": shape " + sh->dump() + " is not a list of non-negative integers");
      shape.push_back(e.get<std::int64_t>());
    }
    if (shape != spec.shape)
      throw data_error(where + ": shape " + shape_text(shape) + ", expected " + shape_text(spec.shape));
    const auto off = t.find("data_offsets");
    if (off == t.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      throw data_error(where + ": data_offsets is not [begin, end]");
    const std::uint64_t b = (*off)[0].get<std::uint64_t>(), e = (*off)[1].get<std::uint64_t>();
    std::uint64_t count = 1;
    for (auto n : shape) count *= std::uint64_t(n);
    if (e < b || e - b != count * 4)
      throw data_error(where + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] hold " +
                       std::to_string(e < b ? 0 : e - b) + " bytes, expected " + std::to_string(count * 4) +
                       " (" + std::to_string(count) + " float32)");
    if (e > data_size)
      throw data_error(where + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                       "] run past the end of the data section (" + std::to_string(data_size) +
                       " bytes): the file is truncated");
    std::vector<float> v(count);
    std::memcpy(v.data(), bytes.data() + data_begin + b, count * 4);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) throw data_error(where + ": element " + std::to_string(i) + " is not finite");
    if (std::string(spec.name).ends_with("running_var"))
      for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i] < 0) throw data_error(where + ": element " + std::to_string(i) + " is a negative variance");
    w.parameters += count;
    w.tensors.emplace(spec.name, std::move(v));
  }
  return w;
}

// ---------------------------------------------------------------------------
// digits_torch_logits.bin: PyTorch's eval-mode outputs on the kTest test
// images: kTest x 10 float32 logits (row-major), then kTest int32
// predictions, little-endian, no header.

struct torch_outputs {
  std::vector<float> logits;
  std::vector<std::int32_t> predictions;
};

torch_outputs load_torch_outputs(const fs::path& path) {
  const std::vector<char> bytes = read_file(path, "PyTorch's logits");
  const std::size_t want = std::size_t(kTest) * (kClasses * 4 + 4);
  if (bytes.size() != want)
    throw data_error(path.string() + ": " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want) +
                     " (" + std::to_string(kTest) + " x 10 float32 logits, then " + std::to_string(kTest) +
                     " int32 predictions)");
  torch_outputs t;
  t.logits.resize(std::size_t(kTest) * kClasses);
  t.predictions.resize(kTest);
  std::memcpy(t.logits.data(), bytes.data(), t.logits.size() * 4);
  std::memcpy(t.predictions.data(), bytes.data() + t.logits.size() * 4, t.predictions.size() * 4);
  for (int i = 0; i < kTest; ++i) {
    if (t.predictions[i] < 0 || t.predictions[i] >= kClasses)
      throw data_error(path.string() + ": prediction " + std::to_string(i) + " is " +
                       std::to_string(t.predictions[i]) + ", not a class 0..9");
    for (int c = 0; c < kClasses; ++c)
      if (!std::isfinite(t.logits[std::size_t(i) * kClasses + c]))
        throw data_error(path.string() + ": logit [" + std::to_string(i) + ", " + std::to_string(c) +
                         "] is not finite");
  }
  return t;
}

// ---------------------------------------------------------------------------
// The network (demo_network.hpp) over host memory.

using network = demo::network<fusor::host_space>;

struct activations {  // one batch's intermediate tensors and outputs
  std::vector<float> a1, a2, pooled, logits, probs;
  explicit activations(std::size_t n)
      : a1(n * 16 * kPixels), a2(n * 32 * kPixels), pooled(n * 32), logits(n * kClasses), probs(n * kClasses) {}
  demo::buffers buffers() { return {a1.data(), a2.data(), pooled.data(), logits.data(), probs.data()}; }
};

demo::params params_of(const weights& w) {
  demo::params p;
  for (const auto& [name, t] : w.tensors) {
    p.ptr[name] = t.data();
    p.size[name] = t.size();
  }
  return p;
}

// The plan of each block, decided at compile time (host policy).
template <class E>
constexpr int fused_kernels = int(fusor::kernel_count<E, fusor::host_policy>);
template <class E>
constexpr int unfused_kernels = int(fusor::unfused_kernel_count<E>);

struct block_plan {
  std::string name, math, root_rule, explain;
  int unfused = 0, fused = 0;
};

template <class E>
block_plan plan_of(const char* name, const char* math, const E& e) {
  return {name, math, fusor::root_rule_t<E>::name, fusor::explain<fusor::host_policy>(e), unfused_kernels<E>,
          fused_kernels<E>};
}

std::vector<block_plan> plans(const network& net, activations& a, const float* x) {
  // What the demo shows: the two conv blocks are one kernel each.
  static_assert(fused_kernels<decltype(net.stem(x))> == 1, "stem: conv + folded BN + ReLU is one kernel");
  static_assert(fused_kernels<decltype(net.mbconv(x))> == 1, "mbconv: depthwise -> BN -> ReLU6 -> pointwise -> BN -> ReLU is one kernel");
  return {
      plan_of("stem", "relu(bn1(conv3x3(x)))", net.stem(x)),
      plan_of("mbconv", "relu(bn3(conv1x1(relu6(bn2(dwconv3x3(a1))))))", net.mbconv(a.a1.data())),
      plan_of("pool", "mean(a2, axes {2, 3})", net.pool(a.a2.data())),
      plan_of("head", "linear(gelu(linear(pooled, fc1)), fc2)", net.head(a.pooled.data())),
      plan_of("softmax", "softmax(logits, axis 1)", net.probabilities(a.logits.data())),
  };
}

// explain's per-kernel lines without the (long) expression each computes;
// consecutive kernels with the same description are merged ("kernels 1-4").
std::vector<std::string> kernel_lines(const std::string& explain) {
  std::vector<std::pair<std::string, std::string>> ks;  // (number, description)
  std::istringstream in(explain);
  for (std::string line; std::getline(in, line);) {
    const auto k = line.find_first_not_of(' ');
    if (k == std::string::npos || line.compare(k, 7, "kernel ") != 0) continue;
    const auto colon = line.find(": ", k);
    if (colon == std::string::npos) continue;
    std::string desc = line.substr(colon + 2);
    if (const auto c = desc.find(" computes "); c != std::string::npos) desc.resize(c);
    ks.emplace_back(line.substr(k + 7, colon - k - 7), desc);
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ks.size();) {
    std::size_t j = i + 1;
    while (j < ks.size() && ks[j].second == ks[i].second) ++j;
    out.push_back(j - i == 1 ? "kernel " + ks[i].first + ": " + ks[i].second
                             : "kernels " + ks[i].first + "-" + ks[j - 1].first + ": " + ks[i].second);
    i = j;
  }
  return out;
}

// ---------------------------------------------------------------------------

struct options {
  fs::path data = FUSOR_DEMO_DATA_DIR;
  bool json = false, explain = false;
  std::string backend = "host";
  int repeat = 20, threads = 0;
};

const char* const kUsage =
    "usage: fusor_demo [--data DIR] [--json] [--explain] [--backend host|cuda] [--repeat N] [--threads N]\n"
    "  Runs a small CNN (trained with tools/train_digits.py) on the 360 test images of the UCI optical\n"
    "  digits set with fusor, fused and unfused, and compares with PyTorch's logits.\n"
    "  --data DIR    folder with digits.csv.gz, digits_cnn.safetensors, digits_torch_logits.bin\n"
    "                (default: " FUSOR_DEMO_DATA_DIR ")\n"
    "  --json        print one JSON object instead of text\n"
    "  --explain     print fusor::explain of every block in full\n"
    "  --backend B   host (default) or cuda (needs a build with fusor's CUDA support and a GPU)\n"
    "  --repeat N    timed runs per executor (default 20; the median is reported)\n"
    "  --threads N   OpenMP threads of the host executor (default 0: OpenMP's default)\n";

int positive_int(const std::string& flag, const char* s, int min) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s, s + std::strlen(s), v);
  if (ec != std::errc() || *p != '\0' || v < min)
    throw usage_error(flag + " needs an integer >= " + std::to_string(min) + ", got '" + s + "'");
  return v;
}

options parse_args(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--data") o.data = value();
    else if (a == "--json") o.json = true;
    else if (a == "--explain") o.explain = true;
    else if (a == "--backend") o.backend = value();
    else if (a == "--repeat") o.repeat = positive_int(a, value(), 1);
    else if (a == "--threads") o.threads = positive_int(a, value(), 0);
    else throw usage_error("unknown argument '" + a + "'");
  }
  if (o.backend == "cuda" && !demo::cuda_backend_built())
    throw unavailable_error("--backend cuda: cuda backend not built (this fusor_demo was built without fusor's CUDA "
                            "support; use --backend host)");
#ifdef _OPENMP
  // More threads than the machine can run crash the OpenMP runtime (thread
  // creation fails): cap at OpenMP's thread limit and 4 per processor.
  const int cap = std::max(1, std::min(omp_get_thread_limit(), 4 * omp_get_num_procs()));
  if (o.threads > cap) {
    std::fprintf(stderr, "fusor_demo: --threads %d capped at %d (OpenMP thread limit %d, %d processors)\n", o.threads,
                 cap, omp_get_thread_limit(), omp_get_num_procs());
    o.threads = cap;
  }
#endif
  if (o.backend != "host" && o.backend != "cuda") throw usage_error("--backend must be host or cuda, got '" + o.backend + "'");
  return o;
}

template <class F>
double median_seconds(int repeat, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

int argmax(const float* row) { return int(std::max_element(row, row + kClasses) - row); }

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

int run_demo(const options& opt) {
  // Read and check all input first: an error leaves stdout empty.
  const fs::path csv = opt.data / "digits.csv.gz", st = opt.data / "digits_cnn.safetensors",
                 tl = opt.data / "digits_torch_logits.bin";
  const digits data = load_digits(csv);
  const weights w = load_weights(st);
  const torch_outputs torch = load_torch_outputs(tl);

  const float* x = data.pixels.data() + std::size_t(kTrain) * kPixels;  // the test images, [360, 1, 8, 8]
  const int* labels = data.labels.data() + kTrain;
  const demo::params params = params_of(w);
  const network net{params, kTest};
  activations fused(kTest), ref(kTest);
  const auto blocks = plans(net, fused, x);

  // Fused: the first run also computes the folded BN weights (cached by the
  // executor object); the timed runs reuse them.
  std::size_t kernels_first = 0, kernels_fused = 0, kernels_unfused = 0;
  double t_fused = 0, t_unfused = 0;
  if (opt.backend == "cuda") {
    demo::cuda_result r;
    try {
      r = demo::run_cuda(params, x, kTest, opt.repeat);
    } catch (const demo::no_cuda_device& e) {
      throw no_device_error(std::string("--backend cuda: ") + e.what());
    } catch (const std::runtime_error& e) {
      throw unavailable_error(std::string("--backend cuda: ") + e.what());
    }
    kernels_first = r.kernels_first;
    kernels_fused = r.kernels_fused;
    kernels_unfused = r.kernels_unfused;
    t_fused = r.seconds_fused;
    t_unfused = r.seconds_unfused;
    fused.logits = r.fused_logits;
    fused.probs = r.fused_probs;
    ref.logits = r.unfused_logits;
    ref.probs = r.unfused_probs;
  } else {
    const auto host = fusor::host(opt.threads);
    kernels_first = net.run(x, fused.buffers(), host);
    t_fused = median_seconds(opt.repeat, [&] { kernels_fused = net.run(x, fused.buffers(), host); });
    const auto unfused = fusor::unfused(fusor::host(opt.threads));
    t_unfused = median_seconds(opt.repeat, [&] { kernels_unfused = net.run(x, ref.buffers(), unfused); });
  }

  int correct = 0, torch_correct = 0, same_torch = 0, same_unfused = 0;
  for (int i = 0; i < kTest; ++i) {
    const int p = argmax(&fused.probs[std::size_t(i) * kClasses]);
    correct += p == labels[i];
    torch_correct += torch.predictions[i] == labels[i];
    same_torch += p == torch.predictions[i];
    same_unfused += p == argmax(&ref.probs[std::size_t(i) * kClasses]);
  }
  const double d_unfused = max_abs_diff(fused.logits, ref.logits), d_torch = max_abs_diff(fused.logits, torch.logits);
  const bool pred_torch = same_torch == kTest, pred_unfused = same_unfused == kTest;
  const bool within = d_unfused <= kTolUnfused && d_torch <= kTolTorch;
  const bool ok = pred_torch && pred_unfused && within;
  int threads = 1;
#ifdef _OPENMP
  threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
#endif

  if (opt.json) {
    nlohmann::ordered_json j;
    j["dataset"] = "UCI optical digits (scikit-learn digits.csv.gz), test set = rows 1437..1796 (0-based)";
    j["data_dir"] = opt.data.string();
    j["samples"] = kTest;
    j["accuracy"] = double(correct) / kTest;
    j["torch_accuracy"] = double(torch_correct) / kTest;
    j["correct"] = correct;
    j["torch_correct"] = torch_correct;
    j["predictions_equal_torch"] = pred_torch;
    j["predictions_equal_unfused"] = pred_unfused;
    j["max_abs_diff_unfused"] = d_unfused;
    j["max_abs_diff_torch"] = d_torch;
    j["tolerance_unfused"] = kTolUnfused;
    j["tolerance_torch"] = kTolTorch;
    j["within_tolerance"] = within;
    j["kernels_unfused"] = kernels_unfused;
    j["kernels_fused"] = kernels_fused;
    j["kernels_fused_first_run"] = kernels_first;
    j["backend"] = opt.backend;
    j["threads"] = threads;
    j["repeat"] = opt.repeat;
    j["seconds_fused"] = t_fused;
    j["seconds_unfused"] = t_unfused;
    j["torch_version"] = w.torch_version;
    j["parameters"] = w.parameters;
    auto& jb = j["blocks"] = nlohmann::ordered_json::array();
    for (const auto& b : blocks)
      jb.push_back({{"name", b.name}, {"computes", b.math}, {"root_rule", b.root_rule},
                    {"kernels_unfused", b.unfused}, {"kernels_fused", b.fused}});
    j["ok"] = ok;
    std::puts(j.dump(2).c_str());
  } else {
    std::string out;
    out += "fusor_demo: a small CNN on real data with fusor " FUSOR_VERSION_STRING "\n";
    out += "data:    " + csv.string() + " (UCI optical digits, 1797 images of 8x8; test set = the last 360)\n";
    out += "weights: " + st.string() + " (" + std::to_string(w.parameters) + " parameters, trained with torch " +
           w.torch_version + ")\n";
    out += opt.backend == "cuda"
               ? std::string("backend: cuda: fused = fusor::cuda(), reference = fusor::unfused(fusor::cuda())\n\n")
               : "backend: host: fused = fusor::host(), reference = fusor::unfused(); " + std::to_string(threads) +
                     " OpenMP thread(s)\n\n";
    out += "fusion plan (fusor::explain, host policy), batch of 360:\n";
    int tu = 0, tf = 0;
    for (const auto& b : blocks) {
      char head[160];
      std::snprintf(head, sizeof head, "  %-8s %-48s %d unfused -> %d fused (%s)\n", b.name.c_str(), b.math.c_str(),
                    b.unfused, b.fused, b.root_rule.c_str());
      out += head;
      if (opt.explain) {
        std::istringstream in(b.explain);
        for (std::string line; std::getline(in, line);) out += "           | " + line + "\n";
      } else {
        for (const auto& l : kernel_lines(b.explain)) out += "           " + l + "\n";
      }
      tu += b.unfused;
      tf += b.fused;
    }
    out += "  total: " + std::to_string(tu) + " unfused -> " + std::to_string(tf) +
           " fused kernels per batch; launched: unfused " + std::to_string(kernels_unfused) + ", fused " +
           std::to_string(kernels_fused) + " (first fused run " + std::to_string(kernels_first) +
           ": + the BN-folding kernels, once)\n\n";
    out += "results on the 360 test images:\n";
    out += "  accuracy:          fusor " + fmt("%.2f%%", 100.0 * correct / kTest) + " (" + std::to_string(correct) +
           "/360), PyTorch " + fmt("%.2f%%", 100.0 * torch_correct / kTest) + " (" + std::to_string(torch_correct) +
           "/360)\n";
    out += "  predictions:       equal to PyTorch's on " + std::to_string(same_torch) +
           "/360 images, to fusor unfused on " + std::to_string(same_unfused) + "/360\n";
    out += "  max |logit diff|:  vs fusor unfused " + fmt("%.3g", d_unfused) + " (tolerance " +
           fmt("%.0e", kTolUnfused) + "), vs PyTorch " + fmt("%.3g", d_torch) + " (tolerance " +
           fmt("%.0e", kTolTorch) + ")\n";
    out += "  time per batch:    fused " + fmt("%.3f", t_fused * 1e3) + " ms, unfused " +
           fmt("%.3f", t_unfused * 1e3) + " ms (median of " + std::to_string(opt.repeat) + " runs; " +
           fmt("%.2fx", t_unfused / t_fused) + ")\n";
    out += "  first test images: ";
    for (int i = 0; i < 6; ++i) {
      const float* pr = &fused.probs[std::size_t(i) * kClasses];
      const int p = argmax(pr);
      out += (i ? ", " : "") + std::to_string(p) + " (p " + fmt("%.3f", pr[p]) + ", label " +
             std::to_string(labels[i]) + ")";
    }
    out += "\n";
    out += ok ? "result: OK\n" : "result: FAIL\n";
    std::fputs(out.c_str(), stdout);
  }
  if (!ok) {
    std::fprintf(stderr, "fusor_demo: FAIL: %s%s%s\n", pred_torch ? "" : "predictions differ from PyTorch's; ",
                 pred_unfused ? "" : "predictions differ from fusor unfused; ",
                 within ? "" : "logits outside tolerance");
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_demo(parse_args(argc, argv));
  } catch (const no_device_error& e) {
    std::fprintf(stderr, "fusor_demo: %s\n", e.what());
    return 77;
  } catch (const unavailable_error& e) {
    std::fprintf(stderr, "fusor_demo: %s\n", e.what());
    return 2;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "fusor_demo: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const data_error& e) {
    std::fprintf(stderr, "fusor_demo: error: %s\n", e.what());
    return 1;
  } catch (const fusor::error& e) {
    std::fprintf(stderr, "fusor_demo: fusor error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusor_demo: error: %s\n", e.what());
    return 1;
  }
}
