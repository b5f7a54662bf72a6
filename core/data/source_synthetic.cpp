// The `synthetic` source (source.h): examples computed on demand, each a pure
// function of (seed, example index) through the Philox streams of
// core/ir/philox.h, so nothing is held in memory and any split, shuffle or
// resume sees the same data.
//
// Each draw below is from the stream stream_id("data:synthetic:" + NAME)
// keyed by the seed, at step 0, microbatch 0; n(s, k) is rng_normal_f32 and
// u(s, k, B) the 64-bit draw rng_u64(s, k) scaled to [0, B) by a 128-bit
// multiply (bias below B / 2^64).
//   :regression   w_j = n(regression:w, j) / sqrt(F),  b = n(regression:b, 0),
//                 x_ij = n(regression:x, iF + j),
//                 y_i = sum_j w_j x_ij + b (in f64, then rounded): noise-free,
//                 so a linear model can fit it exactly.
//   :blobs        c_kj = 3 n(blobs:centers, kF + j), y_i = u(blobs:y, i, K),
//                 x_ij = c_{y_i j} + n(blobs:x, iF + j).
//   :random-tokens a token stream s_k = u(random-tokens, k, V), windowed as
//                 the tokens source does: x_it = s_{iT+t}, y_it = s_{iT+t+1}
//                 (a stage's :seq-len view starts at s_first: s_{first+iT+t}).
#include <cmath>
#include <cstring>

#include "data/source.h"
#include "ir/philox.h"

namespace sexpgpu::data {

namespace {

using stage::RngStream;

RngStream stream_for(uint64_t seed, std::string_view name) {
  return *stage::make_rng_stream(seed, stage::stream_id("data:synthetic:" + std::string(name)), 0,
                                 0);
}

int64_t below(const RngStream& s, uint64_t k, int64_t bound) {
  unsigned __int128 wide =
      static_cast<unsigned __int128>(stage::rng_u64(s, k)) * static_cast<uint64_t>(bound);
  return static_cast<int64_t>(wide >> 64);
}

class SyntheticSource final : public Source {
 public:
  // first_token: where the :random-tokens windows start in the stream (a
  // stage's :seq-len view, windows() below); 0 for the source as written.
  explicit SyntheticSource(const SyntheticSpec& spec, int64_t first_token = 0)
      : spec_(spec), first_token_(first_token) {
    const int64_t f = spec.features, t = spec.seq_len;
    switch (spec.kind) {
      case SyntheticKind::Regression:
        description_ = "synthetic :regression";
        fields_ = {{"x", ir::DType::F32, ir::Shape{f}}, {"y", ir::DType::F32, ir::Shape{1}}};
        for (int64_t j = 0; j < f; ++j) {
          weights_.push_back(stage::rng_normal_f32(stream_for(spec.seed, "regression:w"), j) /
                             std::sqrt(static_cast<double>(f)));
        }
        bias_ = stage::rng_normal_f32(stream_for(spec.seed, "regression:b"), 0);
        x_stream_ = stream_for(spec.seed, "regression:x");
        break;
      case SyntheticKind::Blobs:
        description_ = "synthetic :blobs :classes " + std::to_string(spec.classes);
        fields_ = {{"x", ir::DType::F32, ir::Shape{f}}, {"y", ir::DType::I32, ir::Shape{}}};
        for (int64_t k = 0; k < spec.classes * f; ++k) {
          weights_.push_back(3.0 *
                             stage::rng_normal_f32(stream_for(spec.seed, "blobs:centers"), k));
        }
        x_stream_ = stream_for(spec.seed, "blobs:x");
        y_stream_ = stream_for(spec.seed, "blobs:y");
        break;
      case SyntheticKind::RandomTokens:
        description_ = "synthetic :random-tokens :vocab " + std::to_string(spec.vocab) +
                       " :seq-len " + std::to_string(t);
        fields_ = {{"x", ir::DType::I32, ir::Shape{t}}, {"y", ir::DType::I32, ir::Shape{t}}};
        x_stream_ = stream_for(spec.seed, "random-tokens");
        break;
    }
    if (spec.kind != SyntheticKind::RandomTokens) {
      description_ += " :features " + std::to_string(f);
    }
    description_ +=
        " :examples " + std::to_string(spec.examples) + " :seed " + std::to_string(spec.seed);
    if (first_token > 0) description_ += " from token " + std::to_string(first_token);
  }

  const std::string& description() const override { return description_; }
  const std::vector<Field>& fields() const override { return fields_; }
  int64_t size() const override { return spec_.examples; }
  int64_t tokens_per_example() const override {
    return spec_.kind == SyntheticKind::RandomTokens ? spec_.seq_len : 0;
  }
  Status load() override { return ok_status(); }

  // The stream's windows of `seq_len` from token `first` (source.h).
  Result<SourcePtr> windows(int64_t seq_len, int64_t first, int64_t span) const override {
    using R = Result<SourcePtr>;
    if (spec_.kind != SyntheticKind::RandomTokens) return Source::windows(seq_len, first, span);
    using wide = __int128;  // the bounds of a stream no gather could index overflow
    if (seq_len < 1 || first < 0 || span < 0 ||
        wide(first) + span > wide(spec_.examples) * spec_.seq_len)
      return R::failure(description_ + ": no windows of :seq-len " + std::to_string(seq_len) +
                        " in its tokens [" + std::to_string(first) + ", " +
                        std::to_string(first + span) + "]");
    SyntheticSpec spec = spec_;
    spec.seq_len = seq_len;
    spec.examples = span / seq_len;
    auto view = std::make_shared<SyntheticSource>(spec, first_token_ + first);
    return SourcePtr(view);
  }

  void gather(std::span<const int64_t> indices, std::span<std::byte* const> out) const override {
    for (size_t j = 0; j < indices.size(); ++j) {
      switch (spec_.kind) {
        case SyntheticKind::Regression: regression(indices[j], out, j); break;
        case SyntheticKind::Blobs: blobs(indices[j], out, j); break;
        case SyntheticKind::RandomTokens: random_tokens(indices[j], out, j); break;
      }
    }
  }

 private:
  void regression(int64_t i, std::span<std::byte* const> out, size_t j) const {
    const int64_t f = spec_.features;
    float* x = reinterpret_cast<float*>(out[0]) + j * f;
    double y = bias_;
    for (int64_t k = 0; k < f; ++k) {
      x[k] = stage::rng_normal_f32(x_stream_, static_cast<uint64_t>(i * f + k));
      y += weights_[k] * x[k];
    }
    reinterpret_cast<float*>(out[1])[j] = static_cast<float>(y);
  }

  void blobs(int64_t i, std::span<std::byte* const> out, size_t j) const {
    const int64_t f = spec_.features;
    int64_t label = below(y_stream_, static_cast<uint64_t>(i), spec_.classes);
    float* x = reinterpret_cast<float*>(out[0]) + j * f;
    for (int64_t k = 0; k < f; ++k) {
      float noise = stage::rng_normal_f32(x_stream_, static_cast<uint64_t>(i * f + k));
      x[k] = static_cast<float>(weights_[label * f + k]) + noise;
    }
    reinterpret_cast<int32_t*>(out[1])[j] = static_cast<int32_t>(label);
  }

  void random_tokens(int64_t i, std::span<std::byte* const> out, size_t j) const {
    const int64_t t = spec_.seq_len, start = first_token_ + i * t;
    int32_t* x = reinterpret_cast<int32_t*>(out[0]) + j * t;
    int32_t* y = reinterpret_cast<int32_t*>(out[1]) + j * t;
    int32_t previous =
        static_cast<int32_t>(below(x_stream_, static_cast<uint64_t>(start), spec_.vocab));
    for (int64_t k = 0; k < t; ++k) {
      int32_t next =
          static_cast<int32_t>(below(x_stream_, static_cast<uint64_t>(start + k + 1), spec_.vocab));
      x[k] = previous;
      y[k] = next;
      previous = next;
    }
  }

  SyntheticSpec spec_;
  int64_t first_token_ = 0;
  std::string description_;
  std::vector<Field> fields_;
  std::vector<double> weights_;  // :regression w_j; :blobs the centres c_kj
  double bias_ = 0;
  RngStream x_stream_{};
  RngStream y_stream_{};
};

Status check_spec(const SyntheticSpec& s) {
  auto at_least = [](std::string_view what, int64_t v, int64_t min) -> Status {
    if (v >= min) return ok_status();
    return Status::failure("synthetic source: " + std::string(what) + " must be at least " +
                           std::to_string(min) + ", not " + std::to_string(v));
  };
  Status st = at_least(":examples", s.examples, 1);
  if (st && s.kind != SyntheticKind::RandomTokens) st = at_least(":features", s.features, 1);
  if (st && s.kind == SyntheticKind::Blobs) st = at_least(":classes", s.classes, 1);
  if (st && s.kind == SyntheticKind::RandomTokens) st = at_least(":vocab", s.vocab, 1);
  if (st && s.kind == SyntheticKind::RandomTokens) st = at_least(":seq-len", s.seq_len, 1);
  if (st && s.vocab > INT32_MAX) {
    return Status::failure("synthetic source: :vocab " + std::to_string(s.vocab) +
                           " does not fit the i32 token fields");
  }
  return st;
}

}  // namespace

Result<SourcePtr> open_synthetic(const SyntheticSpec& spec) {
  if (Status s = check_spec(spec); !s) return Result<SourcePtr>::failure(s.error());
  return SourcePtr(std::make_shared<SyntheticSource>(spec));
}

}  // namespace sexpgpu::data
