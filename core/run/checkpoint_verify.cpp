// Checksums and verification of checkpoint directories (see checkpoint.h).

#include <filesystem>
#include <fstream>
#include <set>

#include "run/checkpoint.h"
#include "run/crc32.h"

namespace sexpgpu::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A recorded value as it reads: a string without its quotes.
std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

constexpr const char* kTensorFiles[] = {kModelFile, kOptimizerFile};

std::string read_text(const fs::path& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

json file_entry(std::span<const std::byte> bytes) {
  return {{"bytes", bytes.size()}, {"crc32", crc32_hex(bytes)}};
}

// Which recorded tensor CRCs the file's tensors fail, as sentences.
void tensor_problems(const SafetensorsFile& f, const json& recorded,
                     std::vector<std::string>& problems) {
  std::set<std::string> seen;
  for (const TensorEntry& t : f.tensors()) {
    seen.insert(t.name);
    if (!recorded.contains(t.name)) {
      problems.push_back(f.path() + ": tensor '" + t.name + "' is not in " + kChecksumsFile);
      continue;
    }
    std::string crc = crc32_hex(t.data);
    if (recorded[t.name] != crc)
      problems.push_back(f.path() + ": tensor '" + t.name + "' has CRC-32 " + crc + ", " +
                         kChecksumsFile + " records " + text_of(recorded[t.name]));
  }
  for (const auto& [name, _] : recorded.items())
    if (!seen.count(name))
      problems.push_back(f.path() + ": tensor '" + name + "' is missing (" + kChecksumsFile +
                         " records it)");
}

// One file against its recorded size and CRC; tensor files are also parsed
// and, on a mismatch, searched for the damaged tensor.
void check_file(const fs::path& dir, const std::string& file, const json& sums,
                std::vector<std::string>& problems) {
  std::string path = (dir / file).string();
  const json& rec = sums["files"].contains(file) ? sums["files"][file] : json();
  if (!rec.is_object() || !rec.contains("bytes") || !rec.contains("crc32")) {
    problems.push_back(path + ": no entry in " + kChecksumsFile);
    return;
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    problems.push_back(path + ": missing");
    return;
  }
  bool tensors = file == kModelFile || file == kOptimizerFile;
  std::shared_ptr<const SafetensorsFile> st;
  std::string text;
  std::span<const std::byte> bytes;
  if (tensors) {
    ir::Result<std::shared_ptr<const SafetensorsFile>> opened = SafetensorsFile::open(path);
    if (!opened) {
      problems.push_back(opened.error());
      return;
    }
    st = *opened;
    bytes = st->bytes();
  } else {
    bool ok = false;
    text = read_text(path, &ok);
    bytes = as_bytes(text);
  }
  if (rec["bytes"] != bytes.size()) {
    problems.push_back(path + ": " + std::to_string(bytes.size()) + " bytes, " + kChecksumsFile +
                       " records " + text_of(rec["bytes"]));
    return;
  }
  std::string crc = crc32_hex(bytes);
  if (rec["crc32"] == crc) return;
  size_t before = problems.size();
  if (tensors) {
    const json& per = sums.contains("tensors") && sums["tensors"].contains(file)
                          ? sums["tensors"][file]
                          : json::object();
    tensor_problems(*st, per, problems);
  }
  if (problems.size() == before)
    problems.push_back(path + ": CRC-32 " + crc + ", " + kChecksumsFile + " records " +
                       text_of(rec["crc32"]) + (tensors ? " (the header is damaged)" : ""));
}

}  // namespace

std::string crc32_hex(std::span<const std::byte> bytes) {
  return crc32_hex(crc32_of_ranges(std::span(&bytes, 1))[0]);
}

ir::Result<json> compute_checksums(const std::string& dir) {
  json out = {{"algorithm", "crc32"}, {"files", json::object()}, {"tensors", json::object()}};
  for (const char* file : kTensorFiles) {
    ir::Result<std::shared_ptr<const SafetensorsFile>> f =
        SafetensorsFile::open((fs::path(dir) / file).string());
    if (!f) return ir::Result<json>::failure(f.error());
    // The file and each tensor, summed together on the cores.
    std::vector<std::span<const std::byte>> ranges{(*f)->bytes()};
    for (const TensorEntry& t : (*f)->tensors()) ranges.push_back(t.data);
    std::vector<uint32_t> crcs = crc32_of_ranges(ranges);
    out["files"][file] = {{"bytes", ranges[0].size()}, {"crc32", crc32_hex(crcs[0])}};
    json per = json::object();
    for (size_t k = 0; k < (*f)->tensors().size(); ++k)
      per[(*f)->tensors()[k].name] = crc32_hex(crcs[k + 1]);
    out["tensors"][file] = per;
  }
  bool ok = false;
  std::string state = read_text(fs::path(dir) / kStateFile, &ok);
  if (!ok) return ir::Result<json>::failure((fs::path(dir) / kStateFile).string() + ": missing");
  out["files"][kStateFile] = file_entry(as_bytes(state));
  return out;
}

std::vector<std::string> verify_checkpoint(const std::string& dir_text) {
  fs::path dir(dir_text);
  std::vector<std::string> problems;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {dir_text + ": not a directory"};
  bool ok = false;
  std::string sums_path = (dir / kChecksumsFile).string();
  std::string text = read_text(sums_path, &ok);
  json sums = ok ? json::parse(text, nullptr, false) : json();
  if (!ok) return {sums_path + ": missing"};
  if (!sums.is_object() || !sums.contains("files") || !sums["files"].is_object())
    return {sums_path + ": not a checksums file (no \"files\" object)"};
  for (const char* file : {kModelFile, kOptimizerFile, kStateFile})
    check_file(dir, file, sums, problems);
  if (!problems.empty()) return problems;
  ir::Result<Checkpoint> loaded = load_checkpoint(dir_text);
  if (!loaded) problems.push_back(loaded.error());
  return problems;
}

}  // namespace sexpgpu::run
