// The training loop across several processes (trainer_impl.h; docs/run.md,
// "Several GPUs and nodes"): meeting at rank 0's store, the device each rank
// opens, the step's scalars and signals agreed by every rank, and a rank's
// failure named.
//
// The gradients are reduced inside the step (the IR's all_reduce op, one
// per bucket), so that the ranks' parameters stay identical without any
// call here. What this file adds runs once a step, after the step: one
// small all_reduce of the per-pass scalars (the loss and metrics, which
// differ by rank) and of two flags (a stop or a checkpoint asked by a
// signal on any rank), so that every rank reports, stops and skips alike.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "train/trainer_impl.h"
#include "util/log.h"

namespace sexpgpu::train {

using nlohmann::json;

// The rng's third word is the microbatch index, and initialisers draw
// with 65535 (Trainer::initialise): ranks times microbatches stay below it.
constexpr int64_t kMaxDraws = 65535;

Trainer::~Trainer() {
  if (store_) plugins_.set_store(nullptr);
}

int64_t Trainer::draw_index(int64_t microbatch) const {
  return microbatch * world().size + world().rank;
}

Status Trainer::join_world() {
  if (!world().several()) return ok_status();
  if (run_.run.microbatches * world().size >= kMaxDraws)
    return fail("E-WORLD", std::to_string(world().size) + " ranks of " +
                               std::to_string(run_.run.microbatches) +
                               " microbatches each: their product must be below " +
                               std::to_string(kMaxDraws) +
                               " (the random draws' microbatch index)\n  fix: fewer "
                               ":microbatches, or fewer ranks");
  log::info("world: rank {} of {} (local rank {}) from {}; rank 0's store at {}", world().rank,
            world().size, world().local_rank, world().origin, world().master());
  log::Stopwatch took;
  Result<std::unique_ptr<dist::Store>> s = dist::Store::join(world());
  if (!s) return s.failed();
  store_ = std::move(s).value();
  plugins_.set_store(store_.get());
  log::info("world: {} ranks met in {:.1f} ms", world().size, took.ms());
  return ok_status();
}

void Trainer::world_device(std::string& name, json& options) const {
  if (!world().several()) return;
  // Through the nccl device, which is the cuda device with NCCL peers.
  bool gpu = name == "cuda" || name == "nccl";
  if (gpu) {
    name = "nccl";
    if (!options.contains("ordinal")) options["ordinal"] = world().local_rank;
  }
  options["world"] = {{"rank", world().rank},
                      {"size", world().size},
                      {"local_rank", world().local_rank},
                      {"master", world().master()},
                      {"timeout_ms", world().timeout.count()}};
}

Status Trainer::reduce_step(Scalars& passes, bool stop, bool checkpoint) {
  stop_agreed_ = stop, checkpoint_agreed_ = checkpoint;
  if (!world().several()) return ok_status();
  // The same keys on every rank (the same function ran), in map order.
  std::vector<float> values;
  for (const auto& [k, v] : passes) values.push_back(float(v));
  values.push_back(stop ? 1.0f : 0.0f);
  values.push_back(checkpoint ? 1.0f : 0.0f);
  ir::TensorType type{ir::DType::F32, ir::Shape{int64_t(values.size())}};
  if (!reduced_.handle() || reduced_.type() != type) {
    Result<Buffer> b = device_->alloc(type);
    if (!b) return b.failed();
    reduced_ = std::move(b).value();
  }
  if (Status e = device_->upload(reduced_, values.data(), reduced_.bytes()); !e) return e;
  if (Status e = device_->all_reduce(reduced_, /*mean=*/false); !e) return e;
  if (Status e = device_->download(reduced_, values.data(), reduced_.bytes()); !e) return e;
  if (Status e = device_->synchronize(); !e) return e;
  // Summed, then divided here: the mean of the ranks' means, which is the
  // mean over the global batch (every rank holds as many examples).
  size_t i = 0;
  for (auto& [k, v] : passes) v = double(values[i++]) / double(world().size);
  stop_agreed_ = values[i] > 0.5f;
  checkpoint_agreed_ = values[i + 1] > 0.5f;
  return ok_status();
}

Status Trainer::rank_failure(const Status& why) {
  if (why || !store_ || why.code() == "E-RANK") return why;
  // The store learns of a rank's end from its connection, which may close
  // a moment after the collective's did: ask again for up to a second.
  Result<std::vector<int>> gone = store_->gone();
  for (int i = 0; i < 10 && gone && gone->empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gone = store_->gone();
  }
  std::string ranks;
  if (!gone) {
    ranks = "rank 0";  // its store is unreachable: rank 0 itself is gone
  } else {
    for (int r : *gone) ranks += (ranks.empty() ? "rank " : ", ") + std::to_string(r);
  }
  if (ranks.empty()) {
    // Every rank still connected: a collective that timed out (a rank that
    // hangs) says so in the device's message, which is kept.
    std::string said = why.error();
    std::transform(said.begin(), said.end(), said.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (said.find("timed out") == std::string::npos && said.find("timeout") == std::string::npos)
      return why;
    return fail("E-RANK", "a rank did not answer within " +
                              std::to_string(world().timeout.count() / 1000) +
                              " s (SEXPGPU_RANK_TIMEOUT): " + why.error() +
                              "\n  fix: see the ranks' logs, then resume from the last checkpoint");
  }
  return fail("E-RANK", ranks + " of " + std::to_string(world().size) +
                            " stopped during the run (" + why.error() +
                            ")\n  fix: see that rank's log, then resume from the last checkpoint");
}

Status Trainer::agree_on_start() {
  if (!store_) return ok_status();
  const std::string mine = std::to_string(step_);
  std::vector<std::byte> bytes(mine.size());
  std::transform(mine.begin(), mine.end(), bytes.begin(), [](char c) { return std::byte(c); });
  if (Status e = store_->set("start/" + std::to_string(world().rank), bytes); !e) return e;
  for (int r = 0; r < world().size; ++r) {
    Result<std::vector<std::byte>> theirs =
        store_->get("start/" + std::to_string(r), world().timeout);
    if (!theirs) return theirs.failed();
    std::string step(theirs->size(), ' ');
    std::transform(theirs->begin(), theirs->end(), step.begin(),
                   [](std::byte b) { return char(b); });
    if (step != mine)
      return fail("E-WORLD", "rank " + std::to_string(r) + " starts at step " + step +
                                 " and rank " + std::to_string(world().rank) + " at step " + mine +
                                 ": they found different checkpoints\n  fix: give every rank the "
                                 "same run directory (a filesystem they all see) or the same "
                                 "--resume PATH");
  }
  return ok_status();
}

}  // namespace sexpgpu::train
