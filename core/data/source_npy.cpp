// The `npy` source (source.h): one NumPy .npy file per field, memory-mapped.
//
// The format (numpy.lib.format): the magic "\x93NUMPY", major and minor
// version bytes, the header length (u16 little-endian in version 1, u32 in 2
// and 3), then a Python dict literal {'descr': '<f4', 'fortran_order':
// False, 'shape': (60000, 28, 28), } padded with spaces, then the data.
#include <cctype>
#include <charconv>
#include <fstream>

#include "data/file_io.h"
#include "data/source_array.h"

namespace sexpgpu::data {

namespace fs = std::filesystem;

namespace {

struct NpyHeader {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  int64_t data_offset = 0;
};

template <class T>
Result<T> fail(const fs::path& path, const std::string& what) {
  return Result<T>::failure(quoted(path) + ": " + what);
}

std::optional<ir::DType> npy_dtype(std::string_view descr) {
  if (descr.size() < 2) return std::nullopt;
  char order = descr[0];
  std::string_view kind = descr.substr(1);
  bool one_byte = kind == "u1" || kind == "b1";
  if (order != '<' && order != '=' && !(order == '|' && one_byte)) return std::nullopt;
  if (kind == "f4") return ir::DType::F32;
  if (kind == "f8") return ir::DType::F64;
  if (kind == "i4") return ir::DType::I32;
  if (kind == "i8") return ir::DType::I64;
  if (kind == "u1") return ir::DType::U8;
  if (kind == "u2") return ir::DType::U16;
  if (kind == "b1") return ir::DType::Bool;
  return std::nullopt;
}

// The text after `'key':`, spaces skipped; empty when the key is absent.
std::string_view value_of(std::string_view dict, std::string_view key) {
  std::string quoted_key = "'" + std::string(key) + "'";
  size_t at = dict.find(quoted_key);
  if (at == std::string_view::npos) return {};
  at = dict.find(':', at + quoted_key.size());
  if (at == std::string_view::npos) return {};
  std::string_view rest = dict.substr(at + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

Result<std::vector<int64_t>> parse_shape(std::string_view text, const fs::path& path) {
  using R = Result<std::vector<int64_t>>;
  if (text.empty() || text.front() != '(')
    return fail<std::vector<int64_t>>(path, "the header has no 'shape'");
  size_t close = text.find(')');
  if (close == std::string_view::npos)
    return fail<std::vector<int64_t>>(path, "the header's 'shape' is not closed");
  std::string_view inner = text.substr(1, close - 1);
  std::vector<int64_t> dims;
  while (!inner.empty()) {
    while (!inner.empty() && (inner.front() == ' ' || inner.front() == ',')) inner.remove_prefix(1);
    if (inner.empty()) break;
    int64_t d = -1;
    auto [end, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), d);
    if (ec != std::errc() || d < 0) {
      return fail<std::vector<int64_t>>(path, "the header's 'shape' is not a tuple of sizes");
    }
    dims.push_back(d);
    inner.remove_prefix(static_cast<size_t>(end - inner.data()));
  }
  return R(std::move(dims));
}

Result<NpyHeader> parse_header(const fs::path& path) {
  using R = Result<NpyHeader>;
  if (auto size = regular_file_size(path); !size) return R::failure(size.error());
  std::ifstream in(path, std::ios::binary);
  char fixed[12] = {};
  in.read(fixed, sizeof fixed);
  if (in.gcount() < 10) return fail<NpyHeader>(path, "truncated: no .npy header");
  if (std::string_view(fixed, 6) != "\x93NUMPY") {
    return fail<NpyHeader>(path, "wrong magic number (a .npy file starts with \\x93NUMPY)");
  }
  int major = static_cast<unsigned char>(fixed[6]);
  if (major < 1 || major > 3) {
    return fail<NpyHeader>(path, ".npy format version " + std::to_string(major) +
                                     " is not supported (1, 2 and 3 are)");
  }
  auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(fixed[i])); };
  uint32_t header_len = major == 1 ? byte(8) | byte(9) << 8
                                   : byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  int64_t prefix = major == 1 ? 10 : 12;
  std::string dict(header_len, '\0');
  in.seekg(prefix);
  in.read(dict.data(), header_len);
  if (static_cast<uint32_t>(in.gcount()) != header_len) {
    return fail<NpyHeader>(path, "truncated: the header is cut short");
  }
  NpyHeader h;
  h.data_offset = prefix + header_len;
  std::string_view descr = value_of(dict, "descr");
  size_t end = descr.size() > 1 ? descr.find(descr.front(), 1) : std::string_view::npos;
  if (descr.empty() || (descr.front() != '\'' && descr.front() != '"') ||
      end == std::string_view::npos) {
    return fail<NpyHeader>(path, "the header has no 'descr' string (a structured dtype?)");
  }
  descr = descr.substr(1, end - 1);
  std::optional<ir::DType> dtype = npy_dtype(descr);
  if (!dtype) {
    return fail<NpyHeader>(path, "dtype '" + std::string(descr) +
                                     "' is not supported (little-endian f4 f8 i4 i8 u1 u2 b1)");
  }
  h.dtype = *dtype;
  if (value_of(dict, "fortran_order").starts_with("True")) {
    return fail<NpyHeader>(path,
                           "Fortran order is not supported: save a C-ordered array "
                           "(numpy.ascontiguousarray)");
  }
  Result<std::vector<int64_t>> shape = parse_shape(value_of(dict, "shape"), path);
  if (!shape) return R::failure(shape.error());
  h.shape = *shape;
  if (!checked_bytes(static_cast<int64_t>(ir::size_bytes(h.dtype)), h.shape)) {
    return fail<NpyHeader>(path, "the header's shape implies more bytes than a file can hold");
  }
  if (h.shape.empty()) {
    return fail<NpyHeader>(path, "shape disagrees: a scalar array has no first axis of examples");
  }
  return h;
}

int64_t data_bytes(const NpyHeader& h) {
  int64_t n = static_cast<int64_t>(ir::size_bytes(h.dtype));
  for (int64_t d : h.shape) n *= d;
  return n;
}

Status check_size(const fs::path& path, const NpyHeader& h) {
  Result<uint64_t> size = regular_file_size(path);
  if (!size) return Status::failure(size.error());
  int64_t expected = h.data_offset + data_bytes(h);
  std::string implied = "the header implies " + std::to_string(expected) + " bytes";
  if (static_cast<int64_t>(*size) < expected) {
    return fail<std::monostate>(path, "truncated: " + std::to_string(*size) + " bytes, " + implied);
  }
  if (static_cast<int64_t>(*size) > expected) {
    return fail<std::monostate>(
        path, "size disagrees with the header: " + std::to_string(*size) + " bytes, " + implied);
  }
  return ok_status();
}

struct NpyFile {
  fs::path path;
  NpyHeader header;
};

Result<ArrayData> load_files(const std::vector<NpyFile>& files, const std::vector<Field>& fields) {
  ArrayData data;
  for (size_t f = 0; f < files.size(); ++f) {
    auto map = MappedFile::open(files[f].path);
    if (!map) return Result<ArrayData>::failure(map.error());
    int64_t expected = files[f].header.data_offset + data_bytes(files[f].header);
    if (static_cast<int64_t>((*map)->size()) != expected) {
      return Result<ArrayData>::failure(quoted(files[f].path) +
                                        ": changed size since it was opened");
    }
    data.owners.push_back(*map);
    data.layouts.push_back(FieldLayout{(*map)->data() + files[f].header.data_offset,
                                       fields[f].example_bytes(), fields[f].dtype});
  }
  return data;
}

}  // namespace

Result<SourcePtr> open_npy(const std::vector<NpyField>& specs) {
  using R = Result<SourcePtr>;
  if (specs.empty()) return R::failure("npy source: no fields given (:x PATH :y PATH ...)");
  std::vector<NpyFile> files;
  std::vector<Field> fields;
  std::string description = "npy";
  for (const NpyField& spec : specs) {
    for (const Field& seen : fields) {
      if (seen.name == spec.name)
        return R::failure("npy source: field :" + spec.name + " is given twice");
    }
    Result<NpyHeader> header = parse_header(spec.path);
    if (!header) return R::failure(header.error());
    if (Status s = check_size(spec.path, *header); !s) return R::failure(s.error());
    if (!files.empty() && header->shape[0] != files[0].header.shape[0]) {
      return R::failure("shape disagrees: field :" + fields[0].name + " (" + quoted(files[0].path) +
                        ") has " + std::to_string(files[0].header.shape[0]) +
                        " examples, field :" + spec.name + " (" + quoted(spec.path) + ") " +
                        std::to_string(header->shape[0]));
    }
    ir::Shape shape(std::span<const int64_t>(header->shape).subspan(1));
    fields.push_back(Field{spec.name, header->dtype, shape});
    files.push_back(NpyFile{spec.path, *header});
    description += " :" + spec.name + " " + spec.path.string();
  }
  int64_t examples = files[0].header.shape[0];
  std::vector<fs::path> paths;
  for (const NpyField& spec : specs) paths.push_back(spec.path);
  auto load = [files, fields] { return load_files(files, fields); };
  return SourcePtr(std::make_shared<ArraySource>(std::move(description), paths, std::move(fields),
                                                 examples, 0, std::move(load)));
}

}  // namespace sexpgpu::data
