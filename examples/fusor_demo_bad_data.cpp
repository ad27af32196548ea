// Test helper for fusor_demo's error paths (not an example to copy):
//   fusor_demo_bad_data <good data dir> <out dir>
// writes <out dir>/<case>/ for each case below: a copy of the good data
// folder (digits.csv.gz, digits_cnn.safetensors, digits_torch_logits.bin)
// with one defect. examples/CMakeLists.txt runs fusor_demo on each and
// checks the error message (fusor_demo_check.cmake).
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

std::string gunzip(const fs::path& p) {
  gzFile f = gzopen(p.string().c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + p.string());
  std::string s;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) s.append(buf, std::size_t(n));
  gzclose(f);
  return s;
}

void gzip(const fs::path& p, const std::string& text) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  if (!f || gzwrite(f, text.data(), unsigned(text.size())) != int(text.size()) || gzclose(f) != Z_OK)
    throw std::runtime_error("cannot write " + p.string());
}

// Replaces the first occurrence of `from` (which must exist) by `to`.
std::string replace_first(std::string s, const std::string& from, const std::string& to) {
  const auto i = s.find(from);
  if (i == std::string::npos) throw std::runtime_error("'" + from + "' not found");
  return s.replace(i, from.size(), to);
}

// Offset of the start of line `line` (1-based) in text.
std::size_t line_start(const std::string& text, int line) {
  std::size_t pos = 0;
  for (int l = 1; l < line; ++l) pos = text.find('\n', pos) + 1;
  return pos;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fputs("usage: fusor_demo_bad_data <good data dir> <out dir>\n", stderr);
    return 2;
  }
  try {
    const fs::path good = argv[1], out = argv[2];
    const std::string csv = "digits.csv.gz", st = "digits_cnn.safetensors", tl = "digits_torch_logits.bin";
    const std::string st_bytes = read(good / st), csv_gz = read(good / csv), text = gunzip(good / csv);
    auto make = [&](const char* name) {
      const fs::path d = out / name;
      fs::remove_all(d);
      fs::create_directories(d);
      for (const auto& f : {csv, st, tl}) fs::copy_file(good / f, d / f);
      return d;
    };
    fs::remove(make("missing_weights") / st);
    write(make("truncated_weights") / st, st_bytes.substr(0, 3000));
    write(make("short_weights") / st, st_bytes.substr(0, 5));
    // Same byte count: only the shape (or dtype) check can tell.
    write(make("wrong_shape") / st, replace_first(st_bytes, "\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[64,32]",
                                                  "\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[32,64]"));
    write(make("wrong_dtype") / st, replace_first(st_bytes, "\"conv1.weight\":{\"dtype\":\"F32\"",
                                                  "\"conv1.weight\":{\"dtype\":\"F16\""));
    write(make("bad_json") / st, replace_first(st_bytes, "{\"__metadata__\"", "[\"__metadata__\""));
    {  // line 3 loses its last field
      const std::size_t b = line_start(text, 3), e = text.find('\n', b);
      gzip(make("csv_columns") / csv, text.substr(0, text.rfind(',', e)) + text.substr(e));
    }
    {  // line 1500, field 10 becomes "x7"
      std::size_t p = line_start(text, 1500);
      for (int f = 1; f < 10; ++f) p = text.find(',', p) + 1;
      gzip(make("csv_nonnumeric") / csv, text.substr(0, p) + "x7" + text.substr(text.find(',', p)));
    }
    write(make("csv_truncated_gzip") / csv, csv_gz.substr(0, csv_gz.size() / 2));
    write(make("torch_logits_size") / tl, read(good / tl).substr(0, 100));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusor_demo_bad_data: %s\n", e.what());
    return 1;
  }
  return 0;
}
