// The `idx` source (source.h): MNIST-style IDX files, gzip or raw.
//
// IDX (LeCun's MNIST format): two zero bytes, a type code (08 u8, 09 i8,
// 0B i16, 0C i32, 0D f32, 0E f64), the number of dimensions, then each
// dimension as a big-endian u32, then the data in big-endian C order.
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>

#include "data/file_io.h"
#include "data/source_array.h"

namespace sexpgpu::data {

namespace fs = std::filesystem;

namespace {

struct IdxHeader {
  uint8_t type = 0;
  std::vector<int64_t> dims;
  int64_t header_bytes() const { return 4 + 4 * static_cast<int64_t>(dims.size()); }
};

int64_t idx_type_bytes(uint8_t type) {
  switch (type) {
    case 0x08:
    case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C:
    case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

// What the type's values become: u8 stays, the other integers become i32.
ir::DType idx_field_dtype(uint8_t type) {
  switch (type) {
    case 0x08: return ir::DType::U8;
    case 0x0D: return ir::DType::F32;
    case 0x0E: return ir::DType::F64;
    default: return ir::DType::I32;
  }
}

template <class T>
Result<T> fail(const fs::path& path, const std::string& what) {
  return Result<T>::failure(quoted(path) + ": " + what);
}

uint32_t load_be32(const std::byte* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | static_cast<uint32_t>(p[3]);
}

Result<IdxHeader> parse_header(const fs::path& path) {
  Result<std::vector<std::byte>> prefix = read_prefix(path, 4 + 4 * 255);
  if (!prefix) return Result<IdxHeader>::failure(prefix.error());
  const std::vector<std::byte>& b = *prefix;
  if (b.size() < 4) return fail<IdxHeader>(path, "truncated: no IDX header");
  IdxHeader h;
  h.type = static_cast<uint8_t>(b[2]);
  int ndim = static_cast<int>(b[3]);
  if (b[0] != std::byte{0} || b[1] != std::byte{0} || idx_type_bytes(h.type) == 0 || ndim == 0) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "0x%08X", load_be32(b.data()));
    return fail<IdxHeader>(path, std::string("wrong magic number ") + magic +
                                     " (an IDX file starts with 00 00, a type code 08 09 0B "
                                     "0C 0D or 0E, and its number of dimensions)");
  }
  if (b.size() < static_cast<size_t>(4 + 4 * ndim)) {
    return fail<IdxHeader>(path, "truncated: the header is cut short");
  }
  for (int d = 0; d < ndim; ++d) h.dims.push_back(load_be32(b.data() + 4 + 4 * d));
  if (!checked_bytes(idx_type_bytes(h.type), h.dims)) {
    return fail<IdxHeader>(path, "the header's dimensions imply more bytes than a file can hold");
  }
  return h;
}

int64_t data_bytes(const IdxHeader& h) {
  int64_t n = idx_type_bytes(h.type);
  for (int64_t d : h.dims) n *= d;
  return n;
}

// The file's size agrees with its header: exactly, for a raw file; modulo
// 2^32 through the gzip trailer (which costs no decompression) for a gzip one.
Status check_size(const fs::path& path, const IdxHeader& h, bool gzip) {
  uint64_t expected = static_cast<uint64_t>(h.header_bytes() + data_bytes(h));
  std::string implied = "the header implies " + std::to_string(expected) + " bytes";
  if (gzip) {
    Result<uint32_t> stored = gzip_stored_size(path);
    if (!stored) return Status::failure(stored.error());
    if (*stored != static_cast<uint32_t>(expected)) {
      return fail<std::monostate>(path, "truncated or damaged: the gzip trailer gives " +
                                            std::to_string(*stored) + " bytes decompressed, " +
                                            implied);
    }
    return ok_status();
  }
  Result<uint64_t> size = regular_file_size(path);
  if (!size) return Status::failure(size.error());
  if (*size < expected) {
    return fail<std::monostate>(path, "truncated: " + std::to_string(*size) + " bytes, " + implied);
  }
  if (*size > expected) {
    return fail<std::monostate>(
        path, "size disagrees with the header: " + std::to_string(*size) + " bytes, " + implied);
  }
  return ok_status();
}

struct IdxFile {
  fs::path path;
  IdxHeader header;
  bool gzip = false;
};

Result<IdxFile> open_file(const fs::path& path) {
  Result<bool> gz = is_gzip(path);
  if (!gz) return Result<IdxFile>::failure(gz.error());
  Result<IdxHeader> header = parse_header(path);
  if (!header) return Result<IdxFile>::failure(header.error());
  IdxFile file{path, *header, *gz};
  if (Status s = check_size(path, file.header, file.gzip); !s) {
    return Result<IdxFile>::failure(s.error());
  }
  return file;
}

// One big-endian value of the on-disk type Raw (the host is little-endian).
template <class Raw>
Raw load_be(const std::byte* p) {
  static_assert(std::endian::native == std::endian::little);
  std::byte swapped[sizeof(Raw)];
  for (size_t i = 0; i < sizeof(Raw); ++i) swapped[i] = p[sizeof(Raw) - 1 - i];
  Raw v;
  std::memcpy(&v, swapped, sizeof v);
  return v;
}

template <class Raw, class T>
std::pair<std::shared_ptr<const void>, const std::byte*> decode_be(const std::byte* p,
                                                                   int64_t count) {
  std::vector<T> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(load_be<Raw>(p + i * sizeof(Raw)));
  return own(std::move(out));
}

// The file's values in its field dtype (as_labels: always i32); u8 images as
// they lie, without a copy beyond the map or the decompressed buffer.
Result<FieldLayout> load_values(const IdxFile& file,
                                std::vector<std::shared_ptr<const void>>& owners, bool as_labels) {
  int64_t total = file.header.header_bytes() + data_bytes(file.header);
  const std::byte* bytes = nullptr;
  if (file.gzip) {
    Result<std::vector<std::byte>> all = read_gzip(file.path, static_cast<uint64_t>(total));
    if (!all) return Result<FieldLayout>::failure(all.error());
    auto [owner, base] = own(std::move(all).value());
    owners.push_back(owner);
    bytes = base;
  } else {
    auto map = MappedFile::open(file.path);
    if (!map) return Result<FieldLayout>::failure(map.error());
    if (static_cast<int64_t>((*map)->size()) != total) {
      return Result<FieldLayout>::failure(quoted(file.path) + ": changed size since it was opened");
    }
    owners.push_back(*map);
    bytes = (*map)->data();
  }
  const std::byte* data = bytes + file.header.header_bytes();
  int64_t count = data_bytes(file.header) / idx_type_bytes(file.header.type);
  int64_t per_example = file.header.dims[0] > 0 ? count / file.header.dims[0] : 0;
  if (file.header.type == 0x08 && !as_labels) {
    return FieldLayout{data, per_example, ir::DType::U8};
  }
  ir::DType dtype = as_labels ? ir::DType::I32 : idx_field_dtype(file.header.type);
  std::pair<std::shared_ptr<const void>, const std::byte*> decoded;
  switch (file.header.type) {
    case 0x08: decoded = decode_be<uint8_t, int32_t>(data, count); break;
    case 0x09: decoded = decode_be<int8_t, int32_t>(data, count); break;
    case 0x0B: decoded = decode_be<int16_t, int32_t>(data, count); break;
    case 0x0C: decoded = decode_be<int32_t, int32_t>(data, count); break;
    case 0x0D: decoded = decode_be<float, float>(data, count); break;
    default: decoded = decode_be<double, double>(data, count); break;
  }
  owners.push_back(decoded.first);
  int64_t stride = per_example * static_cast<int64_t>(ir::size_bytes(dtype));
  return FieldLayout{decoded.second, stride, dtype};
}

}  // namespace

Result<SourcePtr> open_idx(const fs::path& images, const fs::path& labels) {
  using R = Result<SourcePtr>;
  Result<IdxFile> img = open_file(images);
  if (!img) return R::failure(img.error());
  Result<IdxFile> lab = open_file(labels);
  if (!lab) return R::failure(lab.error());
  uint8_t label_type = lab->header.type;
  if (lab->header.dims.size() != 1 || label_type == 0x0D || label_type == 0x0E) {
    return R::failure(quoted(labels) + ": shape disagrees: a labels file holds one integer per " +
                      "example (one dimension), this one has " +
                      std::to_string(lab->header.dims.size()) + " dimension(s) of " +
                      (label_type == 0x0D || label_type == 0x0E ? "floats" : "integers"));
  }
  if (lab->header.dims[0] != img->header.dims[0]) {
    return R::failure("shape disagrees: " + quoted(images) + " has " +
                      std::to_string(img->header.dims[0]) + " examples, " + quoted(labels) + " " +
                      std::to_string(lab->header.dims[0]));
  }
  ir::Shape image_shape(std::span<const int64_t>(img->header.dims).subspan(1));
  std::vector<Field> fields = {{"x", idx_field_dtype(img->header.type), image_shape},
                               {"y", ir::DType::I32, ir::Shape{}}};
  auto load = [img = *img, lab = *lab]() -> Result<ArrayData> {
    ArrayData data;
    Result<FieldLayout> x = load_values(img, data.owners, false);
    if (!x) return Result<ArrayData>::failure(x.error());
    Result<FieldLayout> y = load_values(lab, data.owners, true);
    if (!y) return Result<ArrayData>::failure(y.error());
    data.layouts = {*x, *y};
    return data;
  };
  std::string description = "idx " + images.string() + " " + labels.string();
  return SourcePtr(std::make_shared<ArraySource>(std::move(description),
                                                 std::vector{images, labels}, std::move(fields),
                                                 img->header.dims[0], 0, std::move(load)));
}

}  // namespace sexpgpu::data
