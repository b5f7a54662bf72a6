// The `tokens` and `text` sources (source.h): a stream of tokens from one or
// more flat files, cut into non-overlapping windows of seq-len inputs, each
// with its next-token targets. A stage's :seq-len views the same stream
// (loaded once) through other windows (Source::windows).
#include <cstring>
#include <mutex>
#include <tuple>

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

Result<TokenFiles> measure(const std::vector<fs::path>& paths, ir::DType dtype) {
  using R = Result<TokenFiles>;
  TokenFiles files{paths, {}, 0};
  uint64_t token_bytes = ir::size_bytes(dtype);
  for (const fs::path& path : paths) {
    Result<uint64_t> size = regular_file_size(path);
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

// The stream a source and its windowed views (a stage's :seq-len) share:
// mapped or concatenated once, by whichever loads first.
struct SharedStream {
  TokenFiles files;
  ir::DType dtype = ir::DType::U8;
  std::string kind;  // "tokens" or "text"
  std::mutex mutex;
  bool attempted = false;
  std::string error;
  std::shared_ptr<const void> owner;
  const std::byte* base = nullptr;

  Result<const std::byte*> load();
  // The layouts of windows of `seq_len` starting at token `first`.
  Result<ArrayData> windows(int64_t first, int64_t seq_len);
};

Result<const std::byte*> SharedStream::load() {
  using R = Result<const std::byte*>;
  std::lock_guard<std::mutex> lock(mutex);
  if (!attempted) {
    attempted = true;
    if (files.paths.size() == 1) {
      auto map = MappedFile::open(files.paths[0]);
      if (!map)
        error = map.error();
      else if ((*map)->size() != files.total_bytes)
        error = quoted(files.paths[0]) + ": changed size since it was opened";
      else
        owner = *map, base = (*map)->data();
    } else {
      std::vector<std::byte> stream(files.total_bytes);
      uint64_t at = 0;
      for (size_t i = 0; i < files.paths.size() && error.empty(); ++i) {
        auto map = MappedFile::open(files.paths[i]);
        if (!map)
          error = map.error();
        else if ((*map)->size() != files.bytes[i])
          error = quoted(files.paths[i]) + ": changed size since it was opened";
        else if (files.bytes[i] > 0)
          std::memcpy(stream.data() + at, (*map)->data(), files.bytes[i]);
        at += files.bytes[i];
      }
      if (error.empty()) std::tie(owner, base) = own(std::move(stream));
    }
  }
  if (!error.empty()) return R::failure(error);
  return base;
}

Result<ArrayData> SharedStream::windows(int64_t first, int64_t seq_len) {
  Result<const std::byte*> stream = load();
  if (!stream) return Result<ArrayData>::failure(stream.error());
  int64_t token_bytes = static_cast<int64_t>(ir::size_bytes(dtype));
  const std::byte* start = *stream + first * token_bytes;
  int64_t stride = seq_len * token_bytes;
  ArrayData data;
  data.owners.push_back(owner);
  data.layouts = {FieldLayout{start, stride, dtype},
                  FieldLayout{start + token_bytes, stride, dtype}};
  return data;
}

std::string join_paths(const std::vector<fs::path>& paths) {
  std::string out;
  for (const fs::path& p : paths) out += " " + p.string();
  return out;
}

// The windows of `seq_len` tokens from token `first` of a shared stream: an
// ArraySource (its gather widens u8 and u16 to i32) that can make views.
class TokenSource final : public Source {
 public:
  TokenSource(std::shared_ptr<SharedStream> stream, int64_t first, int64_t seq_len,
              int64_t examples)
      : stream_(std::move(stream)), first_(first), seq_len_(seq_len) {
    std::string description = stream_->kind + join_paths(stream_->files.paths);
    if (stream_->kind == "tokens")
      description += " :dtype " + std::string(ir::lisp_keyword(stream_->dtype));
    description += " :seq-len " + std::to_string(seq_len);
    if (first > 0) description += " from token " + std::to_string(first);
    std::vector<Field> fields = {{"x", ir::DType::I32, ir::Shape{seq_len}},
                                 {"y", ir::DType::I32, ir::Shape{seq_len}}};
    auto load = [stream = stream_, first, seq_len] { return stream->windows(first, seq_len); };
    array_ = std::make_unique<ArraySource>(std::move(description), stream_->files.paths,
                                           std::move(fields), examples, seq_len, std::move(load));
  }

  const std::string& description() const override { return array_->description(); }
  const std::vector<Field>& fields() const override { return array_->fields(); }
  const std::vector<fs::path>& files() const override { return array_->files(); }
  int64_t size() const override { return array_->size(); }
  int64_t tokens_per_example() const override { return seq_len_; }
  Status load() override { return array_->load(); }
  void gather(std::span<const int64_t> indices, std::span<std::byte* const> out) const override {
    array_->gather(indices, out);
  }
  Result<SourcePtr> windows(int64_t seq_len, int64_t first, int64_t span) const override {
    using R = Result<SourcePtr>;
    // This source's windows cover its tokens [0, size() * seq_len_].
    if (seq_len < 1 || first < 0 || span < 0 || span > size() * seq_len_ - first)
      return R::failure(description() + ": no windows of :seq-len " + std::to_string(seq_len) +
                        " in its tokens [" + std::to_string(first) + ", " +
                        std::to_string(first + span) + "]");
    return SourcePtr(
        std::make_shared<TokenSource>(stream_, first_ + first, seq_len, span / seq_len));
  }

 private:
  std::shared_ptr<SharedStream> stream_;
  int64_t first_, seq_len_;
  std::unique_ptr<ArraySource> array_;
};

Result<SourcePtr> open_stream(std::string_view kind, const std::vector<fs::path>& paths,
                              ir::DType dtype, int64_t seq_len) {
  using R = Result<SourcePtr>;
  std::string who = std::string(kind) + " source";
  if (paths.empty()) return R::failure(who + ": no files given");
  if (seq_len < 1)
    return R::failure(who + ": :seq-len must be at least 1, not " + std::to_string(seq_len));
  Result<TokenFiles> files = measure(paths, dtype);
  if (!files) return R::failure(files.error());
  int64_t tokens = static_cast<int64_t>(files->total_bytes / ir::size_bytes(dtype));
  if (tokens < seq_len + 1) {
    return R::failure(who + join_paths(paths) + ": too short: " + std::to_string(tokens) +
                      " tokens, and one window of :seq-len " + std::to_string(seq_len) + " needs " +
                      std::to_string(seq_len + 1));
  }
  auto stream = std::make_shared<SharedStream>();
  stream->files = std::move(files).value();
  stream->dtype = dtype;
  stream->kind = std::string(kind);
  return SourcePtr(
      std::make_shared<TokenSource>(std::move(stream), 0, seq_len, (tokens - 1) / seq_len));
}

}  // namespace

Result<SourcePtr> open_tokens(const std::vector<fs::path>& paths, ir::DType dtype,
                              int64_t seq_len) {
  if (dtype != ir::DType::U8 && dtype != ir::DType::U16 && dtype != ir::DType::I32) {
    return Result<SourcePtr>::failure("tokens source: :dtype " +
                                      std::string(ir::lisp_keyword(dtype)) +
                                      " is not a token dtype (:u8 :u16 :i32)");
  }
  return open_stream("tokens", paths, dtype, seq_len);
}

Result<SourcePtr> open_text(const std::vector<fs::path>& paths, int64_t seq_len) {
  return open_stream("text", paths, ir::DType::U8, seq_len);
}

}  // namespace sexpgpu::data
