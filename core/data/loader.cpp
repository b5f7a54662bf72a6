// Loader (loader.h): split, order, batches, counters, save and restore.
#include "data/loader.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "ir/philox.h"

namespace sexpgpu::data {

namespace {

// The permutation of [0, m) for one epoch (the Fisher-Yates of loader.h).
std::vector<int64_t> shuffled(int64_t m, uint64_t seed, const std::string& name, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::optional<stage::RngStream> stream = stage::make_rng_stream(
      seed, stage::stream_id("loader:" + name), static_cast<uint64_t>(epoch), 0);
  if (!stream) return order;  // epoch >= 2^48: unreachable in practice
  for (int64_t i = m - 1, k = 0; i > 0; --i, ++k) {
    unsigned __int128 wide =
        static_cast<unsigned __int128>(stage::rng_u64(*stream, k)) * static_cast<uint64_t>(i + 1);
    std::swap(order[i], order[static_cast<int64_t>(wide >> 64)]);
  }
  return order;
}

// (rows, example...). Built by push_back: moving a Dims trips GCC 12's
// -Wstringop-overread false positive on boost::small_vector.
ir::Shape with_rows(const ir::Shape& example, int64_t rows) {
  ir::Shape shape{rows};
  for (int64_t d : example) shape.push_back(d);
  return shape;
}

BatchField allocate(const Field& field, int64_t rows) {
  BatchField out;
  out.name = field.name;
  out.dtype = field.dtype;
  out.shape = with_rows(field.shape, rows);
  out.size_bytes = static_cast<size_t>(rows * field.example_bytes());
  out.bytes = std::make_unique_for_overwrite<std::byte[]>(out.size_bytes);
  return out;
}

// "" when an epoch of m examples splits into the batches of `ranks` ranks
// of `batch` each (loader.h), else why not.
std::string global_batch_problem(int64_t m, int64_t batch, int ranks, bool drop_last) {
  const int64_t global = batch * ranks;
  std::string of = ranks > 1 ? "one global batch of " + std::to_string(global) + " (:batch " +
                                   std::to_string(batch) + " x " + std::to_string(ranks) + " ranks)"
                             : "one batch of " + std::to_string(batch);
  if (drop_last && m < global)
    return "the split has " + std::to_string(m) + " examples, fewer than " + of +
           ", and :drop-last drops it";
  if (ranks > 1 && !drop_last && m % global != 0)
    return "the split's " + std::to_string(m) + " examples end in a remainder of " +
           std::to_string(m % global) + " after whole global batches of " + std::to_string(global) +
           " (:batch " + std::to_string(batch) + " x " + std::to_string(ranks) +
           " ranks), which the ranks cannot share evenly\n  fix: give the loader :drop-last t "
           "(the remainder is skipped, as one process with :batch " +
           std::to_string(global) + " skips it), or a :batch that divides the split";
  return "";
}

}  // namespace

int64_t split_index(double fraction, int64_t n) {
  double exact = fraction * static_cast<double>(n);
  double nearest = std::round(exact);
  return static_cast<int64_t>(std::abs(exact - nearest) <= 1e-9 * std::max(1.0, std::abs(exact))
                                  ? nearest
                                  : std::floor(exact));
}

const BatchField* Batch::find(std::string_view name) const {
  for (const BatchField& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Result<Loader> Loader::create(SourcePtr source, LoaderOptions options) {
  using R = Result<Loader>;
  std::string who = "loader " + options.name;
  if (options.batch < 1) {
    return R::failure(who + ": :batch must be at least 1, not " + std::to_string(options.batch));
  }
  double from = options.split_from, to = options.split_to;
  if (!(from >= 0.0 && from <= to && to <= 1.0)) {
    return R::failure(who + ": :split (" + std::to_string(from) + " " + std::to_string(to) +
                      ") is not two fractions 0 <= FROM <= TO <= 1");
  }
  int64_t n = source->size();
  int64_t begin = split_index(from, n), end = split_index(to, n);
  if (end <= begin) {
    return R::failure(who + ": the split [" + std::to_string(begin) + ", " + std::to_string(end) +
                      ") of " + std::to_string(n) + " examples is empty");
  }
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks) {
    return R::failure(who + ": rank " + std::to_string(options.rank) + " of " +
                      std::to_string(options.ranks) + " is not a rank of the world");
  }
  int64_t global = 0;
  if (__builtin_mul_overflow(options.batch, int64_t(options.ranks), &global))
    return R::failure(who + ": :batch " + std::to_string(options.batch) + " times " +
                      std::to_string(options.ranks) + " ranks does not fit in 64 bits");
  if (std::string e =
          global_batch_problem(end - begin, options.batch, options.ranks, options.drop_last);
      !e.empty())
    return R::failure(who + ": " + e);
  return Loader(std::move(source), std::move(options), begin, end);
}

int64_t Loader::batches_per_epoch() const {
  int64_t m = examples_per_epoch(), b = global_batch();
  return options_.drop_last ? m / b : (m + b - 1) / b;
}

int64_t Loader::last_batch_size() const {
  int64_t r = examples_per_epoch() % global_batch();
  return options_.drop_last || r == 0 ? options_.batch : r;
}

std::vector<ir::TensorType> Loader::batch_types(int64_t rows) const {
  std::vector<ir::TensorType> types;
  for (const Field& f : source_->fields()) {
    ir::TensorType& t = types.emplace_back();  // shape built in place: see with_rows
    t.dtype = f.dtype;
    t.shape.push_back(rows);
    for (int64_t d : f.shape) t.shape.push_back(d);
  }
  return types;
}

std::vector<int64_t> Loader::epoch_order(int64_t epoch) const {
  int64_t m = examples_per_epoch();
  std::vector<int64_t> order(static_cast<size_t>(m));
  if (options_.shuffle) {
    order = shuffled(m, options_.seed, options_.name, epoch);
  } else {
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  for (int64_t& i : order) i += begin_;
  return order;
}

const std::vector<int64_t>& Loader::cached_order() {
  if (order_epoch_ != state_.epoch) {
    order_ = shuffled(examples_per_epoch(), options_.seed, options_.name, state_.epoch);
    order_epoch_ = state_.epoch;
  }
  return order_;
}

void Loader::settle() {
  int64_t left = examples_per_epoch() - state_.offset;
  if (left <= 0 || (options_.drop_last && left < global_batch())) {
    ++state_.epoch;
    state_.offset = 0;
    ++state_.counters.epochs;
  }
}

Result<Batch> Loader::next() {
  if (!loaded_) {
    if (Status s = source_->load(); !s) return Result<Batch>::failure(who() + ": " + s.error());
    loaded_ = true;
  }
  settle();
  // The global batch, and this rank's rows of it (loader.h).
  const int64_t global = std::min(global_batch(), examples_per_epoch() - state_.offset);
  if (options_.ranks > 1 && global < global_batch())
    return Result<Batch>::failure(
        who() + ": epoch " + std::to_string(state_.epoch) + " ends in " + std::to_string(global) +
        " examples, less than a global batch of " + std::to_string(global_batch()) +
        ", which the ranks cannot share evenly (a stage changed :batch mid-epoch)\n  fix: give "
        "the loader :drop-last t");
  const int64_t first = state_.offset + options_.rank * options_.batch;
  const int64_t rows = std::min(options_.batch, global);
  indices_.resize(static_cast<size_t>(rows));
  if (options_.shuffle) {
    const std::vector<int64_t>& order = cached_order();
    for (int64_t k = 0; k < rows; ++k) indices_[k] = begin_ + order[first + k];
  } else {
    for (int64_t k = 0; k < rows; ++k) indices_[k] = begin_ + first + k;
  }
  Batch batch;
  batch.size = rows;
  batch.seq_len = seq_len();
  batch.epoch = state_.epoch;
  std::vector<std::byte*> out;
  for (const Field& f : source_->fields()) {
    batch.fields.push_back(allocate(f, rows));
    out.push_back(batch.fields.back().bytes.get());
  }
  source_->gather(indices_, out);
  state_.offset += global;
  state_.counters.examples += global;
  state_.counters.batches += 1;
  state_.counters.tokens += global * source_->tokens_per_example();
  settle();
  return batch;
}

nlohmann::json Loader::save(const LoaderState& at) const {
  const LoaderCounters& c = at.counters;
  nlohmann::json saved = {{"format", 1},
                          {"name", options_.name},
                          {"source", opened_->description()},
                          {"source_examples", opened_->size()},
                          {"split", {split_begin_, split_end_}},
                          {"seed", options_.seed},
                          {"shuffle", options_.shuffle},
                          {"drop_last", options_.drop_last},
                          {"batch", options_.batch},
                          {"ranks", options_.ranks},
                          {"epoch", at.epoch},
                          {"offset", at.offset},
                          {"counters",
                           {{"examples", c.examples},
                            {"batches", c.batches},
                            {"epochs", c.epochs},
                            {"tokens", c.tokens}}}};
  // The window length the offset counts in (a stage's :seq-len).
  if (seq_len() > 0) saved["seq_len"] = seq_len();
  return saved;
}

namespace {

// "" when equal, else "the checkpoint's KEY is A, this loader's B".
template <class T>
std::string mismatch(const nlohmann::json& saved, const char* key, const T& mine) {
  T theirs = saved.at(key).get<T>();
  if (theirs == mine) return "";
  return std::string("the checkpoint's ") + key + " is " + nlohmann::json(theirs).dump() +
         ", this loader's " + nlohmann::json(mine).dump();
}

}  // namespace

Status Loader::restore(const nlohmann::json& saved) {
  try {
    if (saved.at("format").get<int>() != 1) {
      return Status::failure(who() + ": loader state format " + saved.at("format").dump() +
                             " is not supported (1 is)");
    }
    std::vector<int64_t> split = {split_begin_, split_end_};
    // A checkpoint from before stages could change :seq-len counts in the
    // source's own windows.
    nlohmann::json with_len = saved;
    if (seq_len() > 0 && !with_len.contains("seq_len"))
      with_len["seq_len"] = opened_->tokens_per_example();
    for (const std::string& why :
         {mismatch(saved, "name", options_.name), mismatch(saved, "seed", options_.seed),
          mismatch(saved, "shuffle", options_.shuffle),
          mismatch(saved, "drop_last", options_.drop_last),
          mismatch(saved, "source_examples", opened_->size()), mismatch(saved, "split", split),
          seq_len() > 0 ? mismatch(with_len, "seq_len", seq_len()) : std::string()}) {
      if (!why.empty()) return Status::failure(who() + ": cannot resume: " + why);
    }
    LoaderState state;
    state.epoch = saved.at("epoch").get<int64_t>();
    state.offset = saved.at("offset").get<int64_t>();
    const nlohmann::json& c = saved.at("counters");
    state.counters = {c.at("examples").get<int64_t>(), c.at("batches").get<int64_t>(),
                      c.at("epochs").get<int64_t>(), c.at("tokens").get<int64_t>()};
    if (state.epoch < 0 || state.offset < 0 || state.offset >= examples_per_epoch()) {
      return Status::failure(who() + ": cannot resume: epoch " + std::to_string(state.epoch) +
                             ", offset " + std::to_string(state.offset) + " is outside the split");
    }
    set_state(state);
    return ok_status();
  } catch (const nlohmann::json::exception& e) {
    return Status::failure(who() + ": malformed loader state: " + e.what());
  }
}

void Loader::set_state(const LoaderState& state) {
  state_ = state;
}

Status Loader::apply_stage(const StageOverrides& overrides) {
  int64_t b = overrides.batch.value_or(options_.batch);
  if (b < 1)
    return Status::failure(who() + ": a stage's :batch must be at least 1, not " +
                           std::to_string(b));
  SourcePtr source = source_;
  int64_t begin = begin_, end = end_;
  const int64_t length = seq_len();
  if (overrides.seq_len && *overrides.seq_len != length) {
    const int64_t n = *overrides.seq_len, opened = opened_->tokens_per_example();
    if (n < 1)
      return Status::failure(who() + ": a stage's :seq-len must be at least 1, not " +
                             std::to_string(n));
    if (opened == 0)
      return Status::failure(who() + ": a stage's :seq-len " + std::to_string(n) + ": " +
                             opened_->windows(n, 0, 0).error());
    source = opened_, begin = split_begin_, end = split_end_;
    if (n != opened) {
      int64_t first = 0, span = 0;
      if (__builtin_mul_overflow(split_begin_, opened, &first) ||
          __builtin_mul_overflow(split_end_ - split_begin_, opened, &span))
        return Status::failure(who() + ": the split's tokens do not fit in 64 bits");
      Result<SourcePtr> view = opened_->windows(n, first, span);
      if (!view) return Status::failure(who() + ": " + view.error());
      if ((*view)->size() < 1)
        return Status::failure(who() + ": a stage's :seq-len " + std::to_string(n) + " needs " +
                               std::to_string(uint64_t(n) + 1) + " tokens, and the split has " +
                               std::to_string(uint64_t(span) + 1));
      source = *view, begin = 0, end = (*view)->size();
    }
  }
  if (int64_t global = 0; __builtin_mul_overflow(b, int64_t(options_.ranks), &global))
    return Status::failure(who() + ": a stage's :batch " + std::to_string(b) + " times " +
                           std::to_string(options_.ranks) + " ranks does not fit in 64 bits");
  if (std::string e = global_batch_problem(end - begin, b, options_.ranks, options_.drop_last);
      !e.empty())
    return Status::failure(who() + ": a stage's :batch " + std::to_string(b) +
                           (source != source_
                                ? " at :seq-len " + std::to_string(source->tokens_per_example())
                                : std::string()) +
                           ": " + e);
  if (source != source_) {
    // The first window at or after the tokens the epoch has given.
    const int64_t n = source->tokens_per_example();
    state_.offset = (state_.offset * length + n - 1) / n;
    source_ = std::move(source), begin_ = begin, end_ = end;
    loaded_ = false;
    order_epoch_ = -1;
  }
  options_.batch = b;
  settle();
  return ok_status();
}

Result<std::vector<std::vector<Loader::Shape>>> Loader::stage_rows(
    std::span<const StageOverrides> stages, bool restart, int64_t scan_limit) const {
  using R = Result<std::vector<std::vector<Shape>>>;
  // Each stage's epoch (m examples), batch and window length, as the loader
  // has them after entering it.
  struct Geometry {
    int64_t m, b, n;
  };
  std::vector<Geometry> geometry;
  Loader l = *this;
  l.set_state({});
  bool small = true;
  for (const StageOverrides& o : stages) {
    if (Status s = l.apply_stage(o); !s) return R::failure(s.error());
    geometry.push_back({l.examples_per_epoch(), l.options_.batch, l.seq_len()});
    small = small && geometry.back().m <= scan_limit;
  }
  std::vector<std::vector<Shape>> out;
  // Exactly: the offsets each stage may be entered at and reach, one flag
  // per offset. Above scan_limit examples, a superset in O(1): every offset
  // reached is a multiple of g, the gcd of the batches so far (carried
  // through a length change when the tokens divide, else g = 1).
  std::vector<char> reach;
  int64_t g = 0, last_len = 0;
  for (size_t j = 0; j < geometry.size(); ++j) {
    const auto [m, b, n] = geometry[j];
    std::vector<Shape>& shapes = out.emplace_back();
    auto add = [&](int64_t rows) {
      if (std::find(shapes.begin(), shapes.end(), Shape{rows, n}) == shapes.end())
        shapes.push_back({rows, n});
    };
    add(std::min(b, m));
    if (options_.drop_last) continue;
    std::vector<int64_t> remainders;
    if (restart || geometry.size() == 1) {
      if (m > b && m % b != 0) remainders.push_back(m % b);
    } else if (!small) {
      if (j > 0 && n != last_len && g > 0) g = (g * last_len) % n == 0 ? g * last_len / n : 1;
      g = std::gcd(g, b);
      // r = m - o for a multiple o of g in (m - b, m]: r = m mod g, + g, ...
      for (int64_t r = m % g == 0 ? g : m % g; r < b && r <= m; r += g) {
        if (remainders.size() > kMaxRemainders) break;  // too many: said below
        remainders.push_back(r);
      }
    } else {
      // A stage is entered where the last one reached, moved with the tokens
      // as apply_stage moves it, or at an epoch's start; a full batch moves
      // on by b, and the epoch's end (its remainder) back to 0.
      std::vector<char> enter(static_cast<size_t>(m), 0);
      enter[0] = 1;
      for (size_t o = 0; o < reach.size(); ++o) {
        if (!reach[o]) continue;
        int64_t moved = n == last_len ? int64_t(o) : (int64_t(o) * last_len + n - 1) / n;
        enter[static_cast<size_t>(moved < m ? moved : 0)] = 1;
      }
      reach.assign(static_cast<size_t>(m), 0);
      for (int64_t o = 0; o < m; ++o) {
        reach[size_t(o)] = enter[size_t(o)] || (o >= b && reach[size_t(o - b)]);
        if (reach[size_t(o)] && m - o < b) remainders.push_back(m - o);
      }
    }
    if (remainders.size() > kMaxRemainders)
      return R::failure(who() + ": in stage " + std::to_string(j + 1) + " (batch " +
                        std::to_string(b) + ") an epoch can end in more than " +
                        std::to_string(kMaxRemainders) +
                        " different remainders, each a compiled step: give the loader "
                        ":drop-last t, or stage batch sizes that divide one another");
    std::sort(remainders.begin(), remainders.end(), std::greater<>());
    for (int64_t r : remainders) add(r);
    last_len = n;
  }
  return out;
}

}  // namespace sexpgpu::data
