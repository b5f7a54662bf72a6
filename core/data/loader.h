// A loader (spec/run-file.md, `defloader`): batches from a Source, with a
// split, shuffling, counters and a position that checkpoints save.
//
// Design:
// - The split is the examples [floor(FROM n), floor(TO n)) of the source's n
//   (a product within 1e-9 of an integer counts as that integer, so that
//   0.29 * 100 is 29 although the double 0.29 is a little less; every loader
//   rounds the same way, so (0.0 0.29) and (0.29 1.0) stay disjoint).
// - Epoch e visits the split in index order, or, with :shuffle, in a
//   permutation that is a pure function of (seed, loader name, e): a
//   Fisher-Yates shuffle whose k-th swap (k = 0 swaps the last element) draws
//   rng_u64(k) of the Philox stream stream_id("loader:" + name) at step e
//   (core/ir/philox.h), scaled to [0, i] by a 128-bit multiply. No state
//   but (epoch, offset) is needed to resume, and a changed batch size keeps
//   the order.
// - A batch never spans two epochs. Without :drop-last the last batch of an
//   epoch holds the remainder r = m mod batch examples and is reported as
//   such: Batch::size == r and every field's leading dimension is r. The IR
//   has static shapes, so the runtime compiles the step for both sizes;
//   last_batch_size() tells `check` the second one ahead of time (it equals
//   the batch when the split divides evenly, and always with :drop-last,
//   where the remainder is skipped). Training loaders normally use :drop-last;
//   evaluation loaders normally do not, so every example is scored once.
// - Counters count what next() has given: examples, batches, tokens
//   (examples times the source's tokens per example) and completed epochs.
//   An epoch completes with the batch that ends it, not at the next call.
// - The position is (epoch, offset): the next batch starts at element
//   `offset` of epoch `epoch`'s order. save() writes it with the counters and
//   the configuration that must match on restore (name, seed, shuffle,
//   drop-last, split, source size); the batch size may differ (a stage may
//   change it) and the loader then continues from the same offset.
// - :stages: apply_stage() changes the batch size now, and a token source's
//   :seq-len: the loader then reads the split's tokens through windows of
//   the new length (Source::windows). The split is fixed in the source as
//   opened, examples [b, e) of length N, whose tokens are [bN, eN] (the
//   last a target); at length N' the epoch is the floor((e-b)N / N')
//   windows of N' that those tokens hold, so a split never reaches into
//   another split's tokens at any length. The position moves with the
//   tokens: offset o at length N becomes ceil(o N / N') at N' (the first
//   window that starts at or after the tokens given so far). Without
//   :shuffle the epoch goes on exactly where it was; with it, the rest of
//   the epoch follows the new length's order (a permutation of more or
//   fewer windows) from that point, so in that one epoch some tokens may
//   come twice and others not at all. Going back to the length as opened
//   gives the source's own examples again.
// - stage_rows() gives every batch shape a loader can give as it goes
//   through a list of stages, entered at any step: the runtime compiles the
//   step for each (a stage that changes :batch mid-epoch can end that epoch
//   in a remainder of another size than the one batch and split alone give).
//   It follows every offset a stage can be entered at; a remainder depends
//   only on the offset a stage's batches start from.
// - Data parallel (docs/run.md, "Several GPUs and nodes"): a loader of rank
//   r among R walks the epoch in global batches of G = batch x R examples,
//   exactly as one loader of batch G does, and gives rank r the rows
//   [r batch, (r + 1) batch) of each. The position and the counters are the
//   global ones (an example index in the epoch's order, every rank's
//   examples counted), so a checkpoint resumes at any R. A global batch is
//   never split unevenly: with R > 1 an epoch must end in a whole global
//   batch (:drop-last, or an epoch a multiple of G), else create() says so.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/source.h"

namespace sexpgpu::data {

struct LoaderOptions {
  std::string name;  // the defloader's name: "train"
  int64_t batch = 1;
  bool shuffle = false;
  bool drop_last = false;
  double split_from = 0.0;
  double split_to = 1.0;
  uint64_t seed = 0;
  // This process's share of each global batch (see above): rank of ranks.
  int rank = 0;
  int ranks = 1;
};

struct LoaderCounters {
  int64_t examples = 0;
  int64_t batches = 0;
  int64_t epochs = 0;  // completed epochs
  int64_t tokens = 0;  // token sources only; 0 for the others
  friend bool operator==(const LoaderCounters&, const LoaderCounters&) = default;
};

struct LoaderState {
  int64_t epoch = 0;   // the epoch the next batch comes from
  int64_t offset = 0;  // where in that epoch's order the next batch starts
  LoaderCounters counters;
  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

// One field of a batch: shape (rows, per-example shape...), C order.
struct BatchField {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  ir::Shape shape;
  std::unique_ptr<std::byte[]> bytes;
  size_t size_bytes = 0;

  std::span<const std::byte> data() const { return {bytes.get(), size_bytes}; }
  std::span<std::byte> data() { return {bytes.get(), size_bytes}; }
  template <class T>
  std::span<const T> values() const {
    return {reinterpret_cast<const T*>(bytes.get()), size_bytes / sizeof(T)};
  }
};

struct Batch {
  int64_t size = 0;     // rows: the batch size, or the remainder (see above)
  int64_t seq_len = 0;  // the window length of a token source; 0 for the others
  int64_t epoch = 0;    // the epoch it belongs to
  std::vector<BatchField> fields;
  const BatchField* find(std::string_view name) const;
};

// What a stage of `:stages` may override; absent means the base option.
struct StageOverrides {
  std::optional<int64_t> batch;
  std::optional<int64_t> seq_len;
};

class Loader {
 public:
  // Checks the options against the source: batch >= 1, 0 <= FROM <= TO <= 1,
  // a non-empty split, and with :drop-last at least one whole (global)
  // batch; with several ranks, an epoch of whole global batches.
  static Result<Loader> create(SourcePtr source, LoaderOptions options);

  const LoaderOptions& options() const { return options_; }
  // The source as the loader reads it now: the one opened, or a stage's
  // :seq-len view of it.
  const Source& source() const { return *source_; }
  // The split, in the opened source's examples.
  int64_t split_begin() const { return split_begin_; }
  int64_t split_end() const { return split_end_; }
  // The window length now (token sources), 0 for the others.
  int64_t seq_len() const { return source_->tokens_per_example(); }
  int64_t examples_per_epoch() const { return end_ - begin_; }
  // The examples one step of every rank takes: batch x ranks.
  int64_t global_batch() const { return options_.batch * options_.ranks; }
  int64_t batches_per_epoch() const;
  // The rows of an epoch's last batch: the batch size, or the remainder.
  int64_t last_batch_size() const;
  // Each field's type in a batch of `rows` rows.
  std::vector<ir::TensorType> batch_types(int64_t rows) const;

  // The next batch; the first call loads the source (its errors come here).
  Result<Batch> next();

  const LoaderState& state() const { return state_; }
  const LoaderCounters& counters() const { return state_.counters; }
  // The split's example indices in the order epoch `epoch` visits them.
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  // The position for a checkpoint (state.json), at `at` (default: now).
  nlohmann::json save() const { return save(state_); }
  nlohmann::json save(const LoaderState& at) const;
  // Continues from a saved position; an error names what does not match.
  Status restore(const nlohmann::json& saved);
  // Moves to a state this loader (or one of the same configuration) had.
  void set_state(const LoaderState& state);

  // A stage's overrides (defcurriculum), at once: the batch, and a token
  // source's window length (see above). An override equal to the current
  // value changes nothing.
  Status apply_stage(const StageOverrides& overrides);

  // Every batch size (rows) and window length this loader can give in each
  // of `stages`, entered in order at any step boundary (one may last no
  // step), starting from its start; `restart` says the loader starts over in
  // each stage instead (an evaluation pass). out[j] is stage j's (rows,
  // seq_len) pairs, the full batch first. An error when a stage cannot apply.
  struct Shape {
    int64_t rows = 0, seq_len = 0;
    friend bool operator==(const Shape&, const Shape&) = default;
  };
  // Up to `scan_limit` examples per epoch it is exact (a flag per offset);
  // above, a superset that may hold remainders no schedule reaches (a step
  // compiled for nothing, never a shape missed), in constant memory.
  static constexpr int64_t kScanLimit = int64_t(1) << 24;
  // More remainders than this in one stage is an error (not a list to compile).
  static constexpr size_t kMaxRemainders = 64;
  Result<std::vector<std::vector<Shape>>> stage_rows(std::span<const StageOverrides> stages,
                                                     bool restart,
                                                     int64_t scan_limit = kScanLimit) const;

 private:
  Loader(SourcePtr source, LoaderOptions options, int64_t begin, int64_t end)
      : opened_(source),
        source_(std::move(source)),
        options_(std::move(options)),
        split_begin_(begin),
        split_end_(end),
        begin_(begin),
        end_(end) {}
  // Moves to the next epoch while the current one has no batch left.
  void settle();
  const std::vector<int64_t>& cached_order();
  std::string who() const { return "loader " + options_.name; }

  SourcePtr opened_;  // the source as opened
  SourcePtr source_;  // opened_, or a :seq-len view of its split
  LoaderOptions options_;
  int64_t split_begin_ = 0, split_end_ = 0;  // the split, in opened_'s examples
  int64_t begin_ = 0, end_ = 0;              // the split, in source_'s examples
  LoaderState state_;
  bool loaded_ = false;
  int64_t order_epoch_ = -1;      // the epoch `order_` is for (-1: none yet)
  std::vector<int64_t> order_;    // offsets into the split, shuffled
  std::vector<int64_t> indices_;  // the current batch's source indices
};

// floor(fraction * n), with the tolerance above.
int64_t split_index(double fraction, int64_t n);

}  // namespace sexpgpu::data
