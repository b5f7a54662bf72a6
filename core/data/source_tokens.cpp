// The `tokens` and `text` sources (source.h): a stream of tokens from one or
// more flat files, cut into non-overlapping windows of seq-len inputs, each
// with its next-token targets.
#include <cstring>

#include "data/file_io.h"
#include "data/source_array.h"

namespace sexpgpu::data {

namespace fs = std::filesystem;

namespace {

struct TokenFiles {
  std::vector<fs::path> paths;
  std::vector<uint64_t> bytes;
  uint64_t total_bytes = 0;
};

ir::Result<TokenFiles> measure(const std::vector<fs::path>& paths, ir::DType dtype) {
  using R = ir::Result<TokenFiles>;
  TokenFiles files{paths, {}, 0};
  uint64_t token_bytes = ir::size_bytes(dtype);
  for (const fs::path& path : paths) {
    ir::Result<uint64_t> size = regular_file_size(path);
    if (!size) return R::failure(size.error());
    if (*size % token_bytes != 0) {
      return R::failure(quoted(path) + ": truncated: " + std::to_string(*size) +
                        " bytes is not a whole number of " + std::string(ir::ir_name(dtype)) +
                        " tokens (" + std::to_string(token_bytes) + " bytes each)");
    }
    files.bytes.push_back(*size);
    files.total_bytes += *size;
  }
  return files;
}

// The stream in memory: the file's map, or the files concatenated in order.
ir::Result<ArrayData> load_stream(const TokenFiles& files, ir::DType dtype, int64_t seq_len) {
  using R = ir::Result<ArrayData>;
  ArrayData data;
  const std::byte* base = nullptr;
  if (files.paths.size() == 1) {
    auto map = MappedFile::open(files.paths[0]);
    if (!map) return R::failure(map.error());
    if ((*map)->size() != files.total_bytes) {
      return R::failure(quoted(files.paths[0]) + ": changed size since it was opened");
    }
    data.owners.push_back(*map);
    base = (*map)->data();
  } else {
    std::vector<std::byte> stream(files.total_bytes);
    uint64_t at = 0;
    for (size_t i = 0; i < files.paths.size(); ++i) {
      auto map = MappedFile::open(files.paths[i]);
      if (!map) return R::failure(map.error());
      if ((*map)->size() != files.bytes[i]) {
        return R::failure(quoted(files.paths[i]) + ": changed size since it was opened");
      }
      if (files.bytes[i] > 0) std::memcpy(stream.data() + at, (*map)->data(), files.bytes[i]);
      at += files.bytes[i];
    }
    auto [owner, first] = own(std::move(stream));
    data.owners.push_back(owner);
    base = first;
  }
  int64_t token_bytes = static_cast<int64_t>(ir::size_bytes(dtype));
  int64_t stride = seq_len * token_bytes;
  data.layouts = {FieldLayout{base, stride, dtype}, FieldLayout{base + token_bytes, stride, dtype}};
  return data;
}

std::string join_paths(const std::vector<fs::path>& paths) {
  std::string out;
  for (const fs::path& p : paths) out += " " + p.string();
  return out;
}

ir::Result<SourcePtr> open_stream(std::string_view kind, const std::vector<fs::path>& paths,
                                  ir::DType dtype, int64_t seq_len) {
  using R = ir::Result<SourcePtr>;
  std::string who = std::string(kind) + " source";
  if (paths.empty()) return R::failure(who + ": no files given");
  if (seq_len < 1)
    return R::failure(who + ": :seq-len must be at least 1, not " + std::to_string(seq_len));
  ir::Result<TokenFiles> files = measure(paths, dtype);
  if (!files) return R::failure(files.error());
  int64_t tokens = static_cast<int64_t>(files->total_bytes / ir::size_bytes(dtype));
  if (tokens < seq_len + 1) {
    return R::failure(who + join_paths(paths) + ": too short: " + std::to_string(tokens) +
                      " tokens, and one window of :seq-len " + std::to_string(seq_len) + " needs " +
                      std::to_string(seq_len + 1));
  }
  int64_t examples = (tokens - 1) / seq_len;
  std::vector<Field> fields = {{"x", ir::DType::I32, ir::Shape{seq_len}},
                               {"y", ir::DType::I32, ir::Shape{seq_len}}};
  std::string description = std::string(kind) + join_paths(paths);
  if (kind == "tokens") description += " :dtype " + std::string(ir::lisp_keyword(dtype));
  description += " :seq-len " + std::to_string(seq_len);
  auto load = [files = *files, dtype, seq_len] { return load_stream(files, dtype, seq_len); };
  return SourcePtr(std::make_shared<ArraySource>(std::move(description), paths, std::move(fields),
                                                 examples, seq_len, std::move(load)));
}

}  // namespace

ir::Result<SourcePtr> open_tokens(const std::vector<fs::path>& paths, ir::DType dtype,
                                  int64_t seq_len) {
  if (dtype != ir::DType::U8 && dtype != ir::DType::U16 && dtype != ir::DType::I32) {
    return ir::Result<SourcePtr>::failure("tokens source: :dtype " +
                                          std::string(ir::lisp_keyword(dtype)) +
                                          " is not a token dtype (:u8 :u16 :i32)");
  }
  return open_stream("tokens", paths, dtype, seq_len);
}

ir::Result<SourcePtr> open_text(const std::vector<fs::path>& paths, int64_t seq_len) {
  return open_stream("text", paths, ir::DType::U8, seq_len);
}

}  // namespace sexpgpu::data
