// Data sources (spec/run-file.md, "Loaders and `prepare`"): what a `defloader`'s
// `:source` opens. A Source gives named fields, each with a per-example dtype
// and shape, a number of examples, and a gather that copies a list of examples
// into contiguous batch buffers.
//
// Opening is split in two so that `check` stays cheap:
//   open_*()  reads headers and sizes only and reports every malformed file
//             (missing, wrong magic number, truncated, shapes that disagree);
//   load()    brings the data into memory (raw files are memory-mapped, gzip
//             files decompressed once, CSV is already parsed at open) and is
//             what the loader calls before its first batch.
// Errors are messages naming the path and what is wrong; the caller attaches
// E-LOADER-SOURCE and the form's span.
//
// Field names are keyword names without the colon: "x", "y".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/types.h"
#include "util/result.h"

namespace sexpgpu::data {

// A step that gives nothing but may fail (util/result.h).
using sexpgpu::ok_status;
using sexpgpu::Status;

// One field of every example: a dtype and the shape of one example.
struct Field {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  ir::Shape shape;

  int64_t elements() const { return shape.numel().value_or(0); }
  int64_t example_bytes() const { return elements() * static_cast<int64_t>(ir::size_bytes(dtype)); }
};

class Source {
 public:
  virtual ~Source() = default;

  // The source as a user would name it, e.g. "idx /data/train-images.gz
  // /data/train-labels.gz": for messages, `explain` and checkpoints.
  virtual const std::string& description() const = 0;
  virtual const std::vector<Field>& fields() const = 0;
  // The files it reads, canonical (symlinks, `.` and `..` resolved), so that
  // two sources over one file are known to be the same data however their
  // paths were written (E-EVAL-LEAK). Empty for generated sources.
  virtual const std::vector<std::filesystem::path>& files() const {
    static const std::vector<std::filesystem::path> none;
    return none;
  }
  // The number of examples.
  virtual int64_t size() const = 0;
  // Tokens per example for token sources (their seq-len), 0 for the others:
  // the loader's token counter adds this per example.
  virtual int64_t tokens_per_example() const { return 0; }

  // A stage's :seq-len (loader.h): for token sources, the same stream cut
  // into windows of `seq_len` over its tokens [first, first + span]: example
  // i is the inputs [first + i seq_len, first + (i+1) seq_len) and their
  // next-token targets, so floor(span / seq_len) examples; `first` counts
  // from this source's first token. The result shares this source's data
  // (a load of either loads it once). Other sources have no :seq-len: a
  // failure saying so.
  virtual Result<std::shared_ptr<Source>> windows(int64_t seq_len, int64_t first,
                                                  int64_t span) const {
    (void)seq_len, (void)first, (void)span;
    return Result<std::shared_ptr<Source>>::failure(
        description() + " has no :seq-len (only the tokens, text and random-tokens sources do)");
  }

  // Brings the data into memory. Idempotent and thread-safe (two loaders may
  // share one source); the first failure is kept and returned every time.
  virtual Status load() = 0;

  // Copies examples indices[0..k) into out[f] for each field f, example j at
  // out[f] + j * fields()[f].example_bytes(). Preconditions: load()
  // succeeded, every index is in [0, size()), out has one pointer per field.
  virtual void gather(std::span<const int64_t> indices, std::span<std::byte* const> out) const = 0;
};

using SourcePtr = std::shared_ptr<Source>;

// `path` with symlinks, `.` and `..` resolved as far as it exists: what
// Source::files() holds.
std::filesystem::path canonical_file(const std::filesystem::path& path);

// ---------------------------------------------------------------------------
// The sources. Paths are already resolved (lookup.h).

// `(idx IMAGES LABELS)`: IDX files (gzip or raw). :x has the images file's
// dtype (u8 for MNIST; i32, f32 and f64 are kept, i8 and i16 widen to i32)
// and shape (its dimensions after the first); :y is i32 (), from any integer
// labels file of one dimension. At open a gzip file's header is decompressed
// and its total size checked against the gzip trailer; load() decompresses.
Result<SourcePtr> open_idx(const std::filesystem::path& images,
                           const std::filesystem::path& labels);

// `(tokens PATHS :dtype D :seq-len N)`: flat little-endian token files (D is
// u8, u16 or i32), read as one stream in order. Example i is the window
// starting at token i*N: :x i32 (N) = tokens [iN, iN+N), :y i32 (N) = tokens
// [iN+1, iN+N+1), the next-token targets. Windows do not overlap (the last
// target of one is the first input of the next), so a stream of T tokens has
// floor((T-1)/N) examples and the tokens after the last window are unused.
Result<SourcePtr> open_tokens(const std::vector<std::filesystem::path>& paths, ir::DType dtype,
                              int64_t seq_len);

// `(text PATHS :seq-len N)`: the files' bytes as tokens (vocabulary 256,
// UTF-8 is not decoded), with the fields and windows of `tokens`.
Result<SourcePtr> open_text(const std::vector<std::filesystem::path>& paths, int64_t seq_len);

// `(npy :x PATH :y PATH ...)`: one .npy file per field (format versions 1-3,
// C order, little-endian f32 f64 i32 i64 u8 u16 bool). A field's shape is the
// array's dimensions after the first; every first dimension must agree.
struct NpyField {
  std::string name;
  std::filesystem::path path;
};
Result<SourcePtr> open_npy(const std::vector<NpyField>& fields);

// `(csv PATH :columns ((:x :f32 (0 1 2 3)) (:y :i32 4)) :header t)`: a field
// takes a list of 0-based columns (shape (k)) or one column (shape ()).
// Values are parsed into the field's dtype (f32 f64 i32 i64 u8 u16 bool);
// fields may be quoted with "" (a doubled quote inside is one quote). The
// whole file is parsed at open, so a bad value is found by `check`.
struct CsvColumn {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> columns;
  bool scalar = false;  // one column given as a number, not a list: shape ()
};
Result<SourcePtr> open_csv(const std::filesystem::path& path, const std::vector<CsvColumn>& columns,
                           bool header);

// `(synthetic KIND ...)`: generated on demand, example i a pure function of
// (seed, i) through Philox (source_synthetic.cpp has the formulas).
enum class SyntheticKind { Regression, Blobs, RandomTokens };
struct SyntheticSpec {
  SyntheticKind kind = SyntheticKind::Regression;
  int64_t examples = 0;
  int64_t features = 0;  // :regression, :blobs
  int64_t classes = 0;   // :blobs
  int64_t vocab = 0;     // :random-tokens
  int64_t seq_len = 0;   // :random-tokens
  uint64_t seed = 0;
};
Result<SourcePtr> open_synthetic(const SyntheticSpec& spec);

}  // namespace sexpgpu::data
