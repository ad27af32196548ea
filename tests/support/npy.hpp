// fusor test support: a small reader for NumPy .npy files.
//
// Reads the format of NumPy's NEP 1 (numpy.lib.format): a magic
// string, a version, a little-endian header length, a Python-dict header
// {'descr': ..., 'fortran_order': ..., 'shape': (...)} and the raw data.
// Only what the golden data uses is supported: format versions 1.0, 2.0 and
// 3.0; little-endian (or byte-order-free) numeric dtypes f2 f4 f8 i1 i2 i4 i8 u1
// u2 u4 u8 and b1. Test-only code: never included by the library.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fusor::testing {

// Element types a .npy file may hold. Names follow NumPy's kind+size codes.
enum class npy_dtype {
  f16,   // '<f2'  IEEE binary16
  f32,   // '<f4'
  f64,   // '<f8'
  i8,    // '|i1'
  i16,   // '<i2'
  i32,   // '<i4'
  i64,   // '<i8'
  u8,    // '|u1'
  u16,   // '<u2'
  u32,   // '<u4'
  u64,   // '<u8'
  b1,    // '|b1'  one byte per element, 0 = false
};

// Bytes per element of `t`.
constexpr std::size_t npy_itemsize(npy_dtype t) noexcept {
  switch (t) {
    case npy_dtype::f16: return 2;
    case npy_dtype::f32: return 4;
    case npy_dtype::f64: return 8;
    case npy_dtype::i8:  return 1;
    case npy_dtype::i16: return 2;
    case npy_dtype::i32: return 4;
    case npy_dtype::i64: return 8;
    case npy_dtype::u8:  return 1;
    case npy_dtype::u16: return 2;
    case npy_dtype::u32: return 4;
    case npy_dtype::u64: return 8;
    case npy_dtype::b1:  return 1;
  }
  return 0;
}

// NumPy's spelling of `t` ("float32", "int64", "bool", ...), for messages.
constexpr const char* npy_dtype_name(npy_dtype t) noexcept {
  switch (t) {
    case npy_dtype::f16: return "float16";
    case npy_dtype::f32: return "float32";
    case npy_dtype::f64: return "float64";
    case npy_dtype::i8:  return "int8";
    case npy_dtype::i16: return "int16";
    case npy_dtype::i32: return "int32";
    case npy_dtype::i64: return "int64";
    case npy_dtype::u8:  return "uint8";
    case npy_dtype::u16: return "uint16";
    case npy_dtype::u32: return "uint32";
    case npy_dtype::u64: return "uint64";
    case npy_dtype::b1:  return "bool";
  }
  return "?";
}

namespace detail {

// Decodes an IEEE binary16 bit pattern exactly (every half is a float).
// A float16 element's bits (a type of its own: uint16 data is read as integers).
struct half_bits {
  std::uint16_t bits;
};

inline float half_bits_to_float(std::uint16_t h) noexcept {
  const bool negative = (h >> 15) != 0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float v;
  if (exponent == 0)
    v = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  else if (exponent == 31)
    v = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return negative ? -v : v;
}

// Converts one element to T. Float-to-integer conversions that would be
// undefined behaviour in C++ (NaN, out of range) throw instead.
template <class T, class S>
T convert_element(S s) {
  if constexpr (std::is_same_v<T, bool>) {
    return s != S{};
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S>) {
    // Truncate first (what the cast does), then compare against bounds that
    // are powers of two and so exact in any floating type; NaN fails both.
    const long double t = std::trunc(static_cast<long double>(s));
    const long double hi = std::ldexp(1.0L, std::numeric_limits<T>::digits);
    const long double lo = std::is_signed_v<T> ? -hi : 0.0L;
    if (!(t >= lo && t < hi))
      throw std::runtime_error("npy_array::as: value " + std::to_string(static_cast<double>(s)) +
                               " does not fit the requested integer type");
    return static_cast<T>(s);
  } else {
    return static_cast<T>(s);
  }
}

// The header dict is a Python literal; this parses the subset NumPy writes
// (strings, True/False, tuples of non-negative integers) and nothing else.
struct npy_header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

class npy_header_parser {
 public:
  npy_header_parser(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  npy_header parse() {
    npy_header h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (skip_ws(), peek() != '}') {
      const std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')  // a list means a structured dtype
          throw std::runtime_error("load_npy: " + where_ + ": unsupported dtype (structured; only plain numeric " +
                                   "descr strings are read)");
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean_literal();
        have_order = true;
      } else if (key == "shape") {
        h.shape = shape_tuple();
        have_shape = true;
      } else {
        fail("unexpected header key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') ++pos_;
      else if (peek() != '}') fail("expected ',' or '}' in header");
    }
    ++pos_;
    if (!have_descr || !have_order || !have_shape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("load_npy: " + where_ + ": malformed header: " + what + " in \"" +
                             std::string(s_) + "\"");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a string");
    const auto end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean_literal() {
    if (s_.substr(pos_, 4) == "True") { pos_ += 4; return true; }
    if (s_.substr(pos_, 5) == "False") { pos_ += 5; return false; }
    fail("expected True or False");
  }
  std::vector<std::int64_t> shape_tuple() {
    std::vector<std::int64_t> shape;
    expect('(');
    while (skip_ws(), peek() != ')') {
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in shape");
      std::int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (d > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("shape extent overflows int64");
        d = d * 10 + (s_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 long suffix, written by old NumPy
      shape.push_back(d);
      skip_ws();
      if (peek() == ',') ++pos_;
      else if (peek() != ')') fail("expected ',' or ')' in shape");
    }
    ++pos_;
    return shape;
  }

  std::string_view s_;
  std::string where_;
  std::size_t pos_ = 0;
};

// Maps a descr string to a dtype; 1-byte types have no byte order, wider ones
// must be little-endian ('<', or '=' on this little-endian host).
inline npy_dtype parse_descr(const std::string& descr, const std::string& where) {
  auto unsupported = [&](const char* why) -> std::runtime_error {
    return std::runtime_error("load_npy: " + where + ": unsupported dtype '" + descr + "' (" + why + ")");
  };
  if (descr.size() < 3) throw unsupported("unknown type code");
  const char order = descr[0];
  const std::string code = descr.substr(1);
  struct entry { const char* code; npy_dtype type; };
  static constexpr entry table[] = {
      {"f2", npy_dtype::f16}, {"f4", npy_dtype::f32}, {"f8", npy_dtype::f64}, {"i1", npy_dtype::i8},
      {"i4", npy_dtype::i32}, {"i8", npy_dtype::i64}, {"u1", npy_dtype::u8},  {"b1", npy_dtype::b1},
      {"i2", npy_dtype::i16}, {"u2", npy_dtype::u16}, {"u4", npy_dtype::u32}, {"u8", npy_dtype::u64},
  };
  for (const entry& e : table) {
    if (code != e.code) continue;
    if (npy_itemsize(e.type) == 1) {
      if (order != '|' && order != '<' && order != '>' && order != '=') throw unsupported("bad byte-order character");
    } else if (order == '>') {
      throw unsupported("big-endian data");
    } else if (order != '<' && order != '=') {
      throw unsupported("bad byte-order character");
    }
    return e.type;
  }
  throw unsupported("only f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 are read");
}

// Reads `n` little-endian bytes at `p` as an unsigned integer.
inline std::uint32_t read_le(const unsigned char* p, int n) noexcept {
  std::uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace detail

// An n-dimensional array as stored in a .npy file, always in C (row-major)
// order. A 0-d array has shape {} and one element.
struct npy_array {
  std::vector<std::int64_t> shape;
  npy_dtype dtype = npy_dtype::f32;
  std::vector<std::byte> data;  // size() * npy_itemsize(dtype) bytes, native (= little) endian

  // Number of elements: the product of `shape` (1 for a 0-d array).
  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }

  // All elements converted to T (any arithmetic type, bool included) with
  // static_cast semantics: float16 is widened exactly, bool reads as 0/1,
  // narrowing to a float rounds. Throws std::runtime_error when a float
  // element is NaN or out of range for an integral T.
  template <class T>
  std::vector<T> as() const {
    static_assert(std::is_arithmetic_v<T>, "npy_array::as<T> requires an arithmetic T");
    const auto n = static_cast<std::size_t>(size());
    std::vector<T> out;
    out.reserve(n);
    const std::byte* p = data.data();
    auto each = [&]<class S>(S /*tag*/) {
      for (std::size_t i = 0; i < n; ++i) {
        S s;
        std::memcpy(&s, p + i * sizeof(S), sizeof(S));  // unaligned-safe load
        if constexpr (std::is_same_v<S, detail::half_bits>)
          out.push_back(detail::convert_element<T>(detail::half_bits_to_float(s.bits)));
        else
          out.push_back(detail::convert_element<T>(s));
      }
    };
    switch (dtype) {
      case npy_dtype::f16: each(detail::half_bits{}); break;
      case npy_dtype::f32: each(float{}); break;
      case npy_dtype::f64: each(double{}); break;
      case npy_dtype::i8:  each(std::int8_t{}); break;
      case npy_dtype::i16: each(std::int16_t{}); break;
      case npy_dtype::i32: each(std::int32_t{}); break;
      case npy_dtype::i64: each(std::int64_t{}); break;
      case npy_dtype::u8:  each(std::uint8_t{}); break;
      case npy_dtype::u16: each(std::uint16_t{}); break;
      case npy_dtype::u32: each(std::uint32_t{}); break;
      case npy_dtype::u64: each(std::uint64_t{}); break;
      case npy_dtype::b1:  each(std::uint8_t{}); break;  // bool: 0/1 bytes, nonzero counts as true
    }
    return out;
  }
};

// Reads the .npy file at `path` (format 1.0, 2.0 or 3.0).
// Returns the array in C order: Fortran-ordered files are transposed on load,
// so callers never see fortran_order. Throws std::runtime_error naming `path`
// when the file is missing or unreadable, the magic string or version is
// wrong, the header is malformed, the dtype is unsupported (big-endian,
// structured, or a type code not listed in npy_dtype), or the data section is
// shorter or longer than the shape requires.
inline npy_array load_npy(const std::filesystem::path& path) {
  static_assert(std::endian::native == std::endian::little,
                "load_npy copies little-endian data as-is; add byte swapping for this host");
  const std::string where = path.string();
  auto error = [&](const std::string& what) { return std::runtime_error("load_npy: " + where + ": " + what); };

  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw error("no such file");
  if (std::filesystem::is_directory(path, ec)) throw error("is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot open file");
  const std::vector<char> file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw error("read error");
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());

  static constexpr unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (file.size() < sizeof magic || std::memcmp(bytes, magic, sizeof magic) != 0)
    throw error("bad magic (not a .npy file)");
  if (file.size() < 8) throw error("truncated header");
  const int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    throw error("unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
  // Version 1.0 stores the header length in 2 bytes; 2.0 and 3.0 use 4
  // (3.0 only changes the header text encoding to UTF-8, irrelevant here).
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (file.size() < 8 + len_bytes) throw error("truncated header");
  const std::size_t header_len = detail::read_le(bytes + 8, static_cast<int>(len_bytes));
  const std::size_t data_offset = 8 + len_bytes + header_len;
  if (file.size() < data_offset) throw error("truncated header");

  const std::string_view header_text(file.data() + 8 + len_bytes, header_len);
  const detail::npy_header header = detail::npy_header_parser(header_text, where).parse();

  npy_array a;
  a.dtype = detail::parse_descr(header.descr, where);
  a.shape = header.shape;

  // Expected byte count with an overflow guard: a corrupt shape must give an
  // error, not a huge allocation.
  const std::size_t item = npy_itemsize(a.dtype);
  std::size_t expected = item;
  bool overflow = false;
  for (std::int64_t d : a.shape) {
    const auto ud = static_cast<std::size_t>(d);
    if (ud != 0 && expected > std::numeric_limits<std::size_t>::max() / ud) overflow = true;
    expected *= ud;
  }
  const std::size_t available = file.size() - data_offset;
  if (overflow || available < expected)
    throw error("truncated data: shape needs " + (overflow ? std::string("more than SIZE_MAX") : std::to_string(expected)) +
                " bytes, file has " + std::to_string(available));
  if (available > expected)
    throw error(std::to_string(available - expected) + " trailing bytes after the data");

  a.data.resize(expected);
  const char* src = file.data() + data_offset;
  if (!header.fortran_order || a.shape.size() < 2) {
    if (expected) std::memcpy(a.data.data(), src, expected);  // 0-d and 1-d: both orders coincide
    return a;
  }

  // Fortran order: the first index varies fastest. Walk C order with an
  // index counter and gather each element from its Fortran offset.
  const std::size_t rank = a.shape.size();
  std::vector<std::size_t> fstride(rank);
  std::size_t s = 1;
  for (std::size_t k = 0; k < rank; ++k) { fstride[k] = s; s *= static_cast<std::size_t>(a.shape[k]); }
  std::vector<std::int64_t> idx(rank, 0);
  const auto n = static_cast<std::size_t>(a.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t off = 0;
    for (std::size_t k = 0; k < rank; ++k) off += static_cast<std::size_t>(idx[k]) * fstride[k];
    std::memcpy(a.data.data() + i * item, src + off * item, item);
    for (std::size_t k = rank; k-- > 0;) {  // increment the C-order index, last axis fastest
      if (++idx[k] < a.shape[k]) break;
      idx[k] = 0;
    }
  }
  return a;
}

}  // namespace fusor::testing
