// The safetensors writer and validating reader (see safetensors.h).
#include "run/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "run/crc32.h"

namespace sexpgpu::run {

namespace {

using ir::Result;
using nlohmann::json;

// The reference implementation refuses headers past 100 MB; so do we, which
// also keeps a garbage length from allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeName {
  ir::DType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypeNames[] = {
    {ir::DType::F32, "F32"}, {ir::DType::BF16, "BF16"}, {ir::DType::F16, "F16"},
    {ir::DType::F64, "F64"}, {ir::DType::I32, "I32"},   {ir::DType::I64, "I64"},
    {ir::DType::U8, "U8"},   {ir::DType::U16, "U16"},   {ir::DType::Bool, "BOOL"}};
static_assert(std::size(kDTypeNames) == ir::kDTypeCount, "every dtype needs a safetensors name");

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Elements of a shape; nullopt for a negative dim or past 2^62 bytes.
std::optional<uint64_t> byte_count(ir::DType dtype, const std::vector<int64_t>& shape) {
  uint64_t n = ir::size_bytes(dtype);
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

void put_u64_le(std::vector<std::byte>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64_le(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

// The 8-byte length and the padded header, for tensors already sorted.
// Written by hand in the reference implementation's layout (__metadata__
// first, then each tensor's dtype, shape, data_offsets), so a file whose
// tensors share one dtype is byte for byte what safetensors itself writes.
Result<std::vector<std::byte>> header_bytes(const std::vector<TensorView>& tensors,
                                            const Metadata& metadata) {
  std::string text = "{";
  if (!metadata.empty()) text += "\"__metadata__\":" + json(metadata).dump();
  uint64_t offset = 0;
  std::set<std::string_view> seen;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      return Result<std::vector<std::byte>>::failure("a tensor may not be named '" + t.name + "'");
    if (!seen.insert(t.name).second)
      return Result<std::vector<std::byte>>::failure("two tensors are named '" + t.name + "'");
    std::optional<uint64_t> bytes = byte_count(t.dtype, t.shape);
    if (!bytes || *bytes != t.data.size())
      return Result<std::vector<std::byte>>::failure(
          "tensor '" + t.name + "' has " + std::to_string(t.data.size()) + " bytes, but " +
          std::string(safetensors_dtype_name(t.dtype)) + shape_text(t.shape) + " needs " +
          (bytes ? std::to_string(*bytes) : std::string("an impossible count")));
    if (text.size() > 1) text += ",";
    text += json(t.name).dump() + ":{\"dtype\":\"" + std::string(safetensors_dtype_name(t.dtype)) +
            "\",\"shape\":" + shape_text(t.shape) + ",\"data_offsets\":[" + std::to_string(offset) +
            "," + std::to_string(offset + *bytes) + "]}";
    offset += *bytes;
  }
  text += "}";
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<std::byte> out;
  out.reserve(8 + text.size());
  put_u64_le(out, text.size());
  for (char c : text) out.push_back(static_cast<std::byte>(c));
  return out;
}

void sort_by_name(std::vector<TensorView>& tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
}

bool write_all(int fd, const std::byte* p, uint64_t n) {
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, uint64_t{1} << 30));
    ssize_t w = ::write(fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return true;
}

// One tensor's header entry, checked: dtype, shape, offsets and the byte count.
Result<TensorEntry> parse_entry(const std::string& name, const json& v, uint64_t data_bytes,
                                const std::string& where) {
  auto fail = [&](const std::string& why) {
    return Result<TensorEntry>::failure(where + ": tensor '" + name + "': " + why);
  };
  if (!v.is_object()) return fail("the header entry is not an object");
  for (const auto& [key, _] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      return fail("unknown header key '" + key + "'");
  if (!v.contains("dtype") || !v["dtype"].is_string()) return fail("no dtype string");
  std::optional<ir::DType> dtype = parse_safetensors_dtype(v["dtype"].get<std::string>());
  if (!dtype)
    return fail("dtype " + v["dtype"].get<std::string>() +
                " is not one of F32 BF16 F16 F64 I32 I64 U8 U16 BOOL");
  TensorEntry e;
  e.name = name;
  e.dtype = *dtype;
  if (!v.contains("shape") || !v["shape"].is_array()) return fail("no shape list");
  for (const json& d : v["shape"]) {
    if (!d.is_number_unsigned()) return fail("shape " + v["shape"].dump() + " is not dims >= 0");
    e.shape.push_back(d.get<int64_t>());
  }
  const json& off = v.contains("data_offsets") ? v["data_offsets"] : json();
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned())
    return fail("data_offsets is not [begin, end]");
  uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (end < begin) return fail("data_offsets " + off.dump() + " end before they begin");
  if (end > data_bytes)
    return fail("data_offsets " + off.dump() + " run past the data, which is " +
                std::to_string(data_bytes) + " bytes");
  std::optional<uint64_t> bytes = byte_count(e.dtype, e.shape);
  if (!bytes || *bytes != end - begin)
    return fail(v["dtype"].get<std::string>() + shape_text(e.shape) + " needs " +
                (bytes ? std::to_string(*bytes) : std::string("an impossible count of")) +
                " bytes, but data_offsets " + off.dump() + " hold " + std::to_string(end - begin));
  e.offset = begin;  // relative for now; made absolute by the caller
  return e;
}

// Tensors in offset order must tile the data exactly: from 0, no overlap, no
// gap, nothing after the last.
std::string check_tiling(std::vector<const TensorEntry*> by_offset, uint64_t data_bytes,
                         const std::string& where) {
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->data.size() < b->data.size();
  });
  uint64_t at = 0;
  const TensorEntry* prev = nullptr;
  for (const TensorEntry* e : by_offset) {
    if (e->offset < at)
      return where + ": tensor '" + e->name + "' overlaps tensor '" + prev->name + "'";
    if (e->offset > at)
      return where + ": " + std::to_string(e->offset - at) + " unused bytes before tensor '" +
             e->name + "'";
    at = e->offset + e->data.size();
    prev = e;
  }
  if (at != data_bytes)
    return where + ": " + std::to_string(data_bytes - at) +
           " bytes after the last tensor's data belong to no tensor";
  return "";
}

}  // namespace

std::string_view safetensors_dtype_name(ir::DType dtype) {
  for (const DTypeName& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  return "?";
}

std::optional<ir::DType> parse_safetensors_dtype(std::string_view name) {
  for (const DTypeName& d : kDTypeNames)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

int64_t TensorEntry::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<std::vector<std::byte>> serialize_safetensors(std::vector<TensorView> tensors,
                                                     const Metadata& metadata) {
  sort_by_name(tensors);
  Result<std::vector<std::byte>> head = header_bytes(tensors, metadata);
  if (!head) return head;
  std::vector<std::byte> out = std::move(head).value();
  for (const TensorView& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

Result<uint64_t> write_safetensors(const std::string& path, std::vector<TensorView> tensors,
                                   const Metadata& metadata, SafetensorsSums* sums) {
  sort_by_name(tensors);
  Result<std::vector<std::byte>> head = header_bytes(tensors, metadata);
  if (!head) return Result<uint64_t>::failure(path + ": " + head.error());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Result<uint64_t>::failure(path + ": cannot create: " + std::strerror(errno));
  // The file in order, header first: what the CRCs run over.
  std::vector<std::span<const std::byte>> ranges{std::span<const std::byte>(*head)};
  for (const TensorView& t : tensors) ranges.push_back(t.data);
  std::vector<uint32_t> crcs;
  std::thread summing;
  if (sums) summing = std::thread([&] { crcs = crc32_of_ranges(ranges); });
  uint64_t total = 0;
  bool ok = true;
  for (size_t i = 0; ok && i < ranges.size(); ++i) {
    ok = write_all(fd, ranges[i].data(), ranges[i].size());
    total += ranges[i].size();
  }
  ok = ok && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (summing.joinable()) summing.join();
  if (!ok) return Result<uint64_t>::failure(path + ": cannot write: " + std::strerror(err));
  if (sums) {
    sums->file = crcs[0];
    sums->tensors.clear();
    for (size_t i = 0; i < tensors.size(); ++i) {
      sums->file = crc32_concat(sums->file, crcs[i + 1], tensors[i].data.size());
      sums->tensors[tensors[i].name] = crcs[i + 1];
    }
  }
  return total;
}

Result<std::vector<TensorEntry>> parse_safetensors(std::span<const std::byte> bytes,
                                                   const std::string& where, Metadata* metadata,
                                                   uint64_t* header_bytes_out) {
  using R = Result<std::vector<TensorEntry>>;
  if (bytes.size() < 8)
    return R::failure(where + ": " + std::to_string(bytes.size()) +
                      " bytes is too short for a safetensors file (the header length alone is 8)");
  uint64_t n = get_u64_le(bytes.data());
  if (n > kMaxHeaderBytes || n > bytes.size() - 8)
    return R::failure(where + ": the header length " + std::to_string(n) +
                      " does not fit the file's " + std::to_string(bytes.size()) + " bytes");
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  if (text.empty() || text.front() != '{')
    return R::failure(where + ": the header does not start with '{'");
  json header = json::parse(text, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return R::failure(where + ": the header is not a JSON object");
  uint64_t data_start = 8 + n, data_bytes = bytes.size() - data_start;
  std::vector<TensorEntry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return R::failure(where + ": __metadata__ is not an object");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string())
          return R::failure(where + ": __metadata__ value '" + k + "' is not a string");
        if (metadata) (*metadata)[k] = s.get<std::string>();
      }
      continue;
    }
    Result<TensorEntry> e = parse_entry(name, v, data_bytes, where);
    if (!e) return R::failure(e.error());
    TensorEntry t = std::move(e).value();
    uint64_t length = byte_count(t.dtype, t.shape).value();
    t.data = bytes.subspan(static_cast<size_t>(data_start + t.offset), static_cast<size_t>(length));
    entries.push_back(std::move(t));
  }
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& e : entries) by_offset.push_back(&e);
  std::string tiling = check_tiling(by_offset, data_bytes, where);
  if (!tiling.empty()) return R::failure(tiling);
  for (TensorEntry& e : entries) e.offset += data_start;
  if (header_bytes_out) *header_bytes_out = n;
  return entries;  // json objects iterate in key order: already sorted by name
}

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  using R = Result<std::shared_ptr<const SafetensorsFile>>;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return R::failure(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return R::failure(path + ": not a regular file");
  }
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return R::failure(path + ": cannot map: " + std::strerror(errno));
    }
    f->data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
  Result<std::vector<TensorEntry>> entries =
      parse_safetensors(f->bytes(), path, &f->metadata_, &f->header_bytes_);
  if (!entries) return R::failure(entries.error());
  f->tensors_ = std::move(entries).value();
  return std::shared_ptr<const SafetensorsFile>(std::move(f));
}

SafetensorsFile::~SafetensorsFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

const TensorEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorEntry& e, std::string_view n) { return e.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

}  // namespace sexpgpu::run
