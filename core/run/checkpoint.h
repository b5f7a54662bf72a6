// Checkpoint directories (spec/observe.md, "Checkpoints and resume").
//
//   checkpoints/
//     step-00000500/
//       model.safetensors      the parameters by path (f32 masters under bf16)
//       optimizer.safetensors  every optimizer state tensor, named PATH/STATE
//       state.json             the loop's JSON (step, loaders, RNG, counters...)
//       checksums.json         bytes and CRC-32 of each file above, and of each tensor
//     latest -> step-00000500  a relative symlink
//
// The write is crash-safe at every point: everything goes into
// `.tmp-step-N/`, each file fsynced, checksums.json last, the directory
// fsynced, then renamed to `step-NNNNNNNN` (atomically exchanged with an
// existing one of the same step) and the parent fsynced; only then is
// `latest` replaced (a symlink made under a temporary name and renamed over
// it) and `:keep N` applied (each old one renamed to `.trash-step-N` before
// it is deleted, so no half-deleted checkpoint is ever visible). Names
// starting with '.' are never checkpoints: list and latest ignore them, and
// the next write removes them.
//
// Checksums live in their own file rather than in state.json so that
// state.json is covered too and stays the loop's alone. CRC-32 (zlib's, the
// same as Python's zlib.crc32) finds the damage that matters here (torn
// writes, bit rot, truncation) at memory speed; it is not a defence against
// tampering. Per-tensor CRCs let `verify` name the tensor that is damaged.
//
// latest is the symlink's target when it names a checkpoint that is there,
// else the highest step (a crash between the rename and the symlink leaves
// the symlink on the previous, complete, checkpoint: safe, one interval lost).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"
#include "run/safetensors.h"

namespace sexpgpu::run {

inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";
inline constexpr const char* kStateFile = "state.json";
inline constexpr const char* kChecksumsFile = "checksums.json";
inline constexpr const char* kLatestLink = "latest";

// "step-00000500" (at least 8 digits); the step of such a name, else nullopt.
std::string checkpoint_dir_name(int64_t step);
std::optional<int64_t> parse_checkpoint_dir_name(std::string_view name);
// "fc/w" and "m" give "fc/w/m".
std::string optimizer_tensor_name(const std::string& param_path, const std::string& state);
// The file's CRC-32 as 8 lowercase hex digits.
std::string crc32_hex(std::span<const std::byte> bytes);

struct CheckpointContent {
  int64_t step = 0;
  std::vector<TensorView> params;
  std::vector<TensorView> optimizer;
  nlohmann::json state = nlohmann::json::object();  // "step" is added; if present it must agree
  // When set, called after the model file is written and before a byte of
  // `optimizer` is read: the caller may still be filling them (the trainer
  // downloads the optimizer state while the model file is written). A
  // message is an error: the write stops there, as a crash would.
  std::function<std::string()> optimizer_ready;
};

// The stages of a write, in order, for simulating a crash after one.
enum class WriteStage { kModel, kOptimizer, kState, kChecksums, kRenamed, kLatest };

struct CheckpointOptions {
  std::optional<int64_t> keep;  // `:keep N`: at most N checkpoints up to this one
  // Tests only: return an error right after this stage, leaving the disk
  // exactly as a crash there would.
  std::optional<WriteStage> crash_after;
};

// What the `checkpoint` event reports.
struct CheckpointWritten {
  std::string path;  // the checkpoint's directory
  uint64_t bytes = 0;
  double ms = 0;
  std::vector<std::string> kept, removed;  // directory names, by step
};

// Writes step's checkpoint under checkpoints_dir (created if missing).
ir::Result<CheckpointWritten> write_checkpoint(const std::string& checkpoints_dir,
                                               const CheckpointContent& content,
                                               const CheckpointOptions& options = {});

struct CheckpointInfo {
  int64_t step = 0;
  std::string name, path;
  uint64_t bytes = 0;  // of the files in it
  bool latest = false;
};

// Every checkpoint (step-* directory) by step; a missing directory has none.
ir::Result<std::vector<CheckpointInfo>> list_checkpoints(const std::string& checkpoints_dir);
std::optional<CheckpointInfo> find_latest(const std::string& checkpoints_dir);

// A checkpoint directory from what a person typed: a checkpoint directory,
// a checkpoints directory or a run directory (their latest), or `latest`.
ir::Result<std::string> resolve_checkpoint(const std::string& arg);

struct Checkpoint {
  int64_t step = 0;
  std::string path;
  std::shared_ptr<const SafetensorsFile> model, optimizer;
  nlohmann::json state, checksums;
};

// Opens and validates the files (format, state.json's step); checksums are
// verify's job, which reads every byte.
ir::Result<Checkpoint> load_checkpoint(const std::string& dir);

// The content of checksums.json for the files now in dir: {"algorithm":
// "crc32", "files": {FILE: {"bytes", "crc32"}}, "tensors": {FILE: {NAME:
// crc32}}}. Opening the safetensors files validates them on the way.
ir::Result<nlohmann::json> compute_checksums(const std::string& dir);

// Every problem of one checkpoint, each a sentence naming the file (and
// tensor); empty when it is sound: every file present and parseable, sizes
// and CRCs as recorded, state.json's step matching the directory's name.
std::vector<std::string> verify_checkpoint(const std::string& dir);

}  // namespace sexpgpu::run
