// Checkpoints and resume (trainer_impl.h, observe.md): everything a run
// needs to continue exactly: parameters, optimizer states, the loader's
// position, counters, the summary and the target.
#include <chrono>
#include <future>

#include "run/checkpoint.h"
#include "train/trainer_impl.h"
#include "util/host_block.h"
#include "util/log.h"

namespace sexpgpu::train {

using nlohmann::json;

Status Trainer::checkpoint() {
  if (!writer()) {
    // Rank 0 writes it: every rank holds the same parameters and states.
    last_checkpoint_step_ = step_;
    return ok_status();
  }
  (void)status_->set_state("checkpointing");
  // Every tensor goes to one host block (util/host_block.h: uninitialised,
  // in huge pages; GPT-2's is 1.5 GB) and the writer reads views of it. The
  // parameters come first; the writer then writes the model file on its
  // own thread while this one, the device's, downloads the optimizer state.
  std::vector<std::pair<const Buffer*, size_t>> parts;  // buffer and offset
  size_t total = 0;
  for (const spec::ParamEntry& p : run_.params) {
    parts.push_back({&params_.at(p.path).current, total});
    total += parts.back().first->bytes();
  }
  for (const spec::StateEntry& s : run_.states) {
    parts.push_back({&states_.at(s.tensor_name()).current, total});
    total += parts.back().first->bytes();
  }
  util::HostBlock host(total);
  auto download = [&](size_t from, size_t to) -> Status {
    for (size_t k = from; k < to; ++k)
      if (Status e = device_->download(*parts[k].first, host.data() + parts[k].second,
                                       parts[k].first->bytes());
          !e)
        return e;
    return device_->synchronize();
  };
  auto bytes_of = [&](size_t k) {
    return std::span<const std::byte>(host.data() + parts[k].second, parts[k].first->bytes());
  };
  run::CheckpointContent content;
  content.step = step_;
  size_t k = 0;
  for (const spec::ParamEntry& p : run_.params) {
    auto dims = p.type.shape.dims();
    content.params.push_back({p.path, p.type.dtype, {dims.begin(), dims.end()}, bytes_of(k++)});
  }
  for (const spec::StateEntry& s : run_.states) {
    auto dims = s.type.shape.dims();
    content.optimizer.push_back({run::optimizer_tensor_name(s.param, s.name),
                                 s.type.dtype,
                                 {dims.begin(), dims.end()},
                                 bytes_of(k++)});
  }
  json target = target_ ? target_->to_json() : json(nullptr);
  double wall = wall_before_resume_ +
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  content.state = {{"loaders", {{run_.train_loader, prefetch_->save()}}},
                   {"rng", {{"seed", seed_}}},
                   {"counters", {{"epoch", epoch_}, {"examples", examples_}, {"tokens", tokens_}}},
                   {"metrics", latest_},
                   {"summary", summary_.to_json()},
                   {"target", target},
                   {"skipped", skipped_total_},
                   {"stage", stage_},
                   {"wall_s", wall},
                   {"steps", steps_},
                   {"world_size", world().size},
                   {"file_hash", file_hash_},
                   {"ir_hash", ir_hash_},
                   {"selection", opt_.selection}};
  run::CheckpointOptions options;
  options.keep = run_.run.checkpoint_keep;
  log::Stopwatch copying_params;
  if (Status e = download(0, run_.params.size()); !e) return e;
  const double params_ms = copying_params.ms();
  // The writer's future before the promise it waits on: were this thread
  // to unwind, the promise goes first (the writer sees it broken) and then
  // the future's destructor joins the writer.
  std::future<Result<run::CheckpointWritten>> writing;
  std::promise<std::string> optimizer_copied;
  content.optimizer_ready = [ready = optimizer_copied.get_future().share()] { return ready.get(); };
  writing = std::async(std::launch::async, [&] {
    return run::write_checkpoint(opt_.run_dir + "/checkpoints", content, options);
  });
  log::Stopwatch copying_optimizer;
  Status copied = download(run_.params.size(), parts.size());
  const double optimizer_ms = copying_optimizer.ms();
  optimizer_copied.set_value(copied ? "" : "the optimizer state's download failed");
  Result<run::CheckpointWritten> w = writing.get();
  if (!copied) return copied;
  if (!w) return fail("E-IO", w.error());
  log::info(
      "checkpoint: {} bytes copied from the device: the parameters in {:.1f} ms, then the "
      "optimizer state in {:.1f} ms while the model file was written",
      total, params_ms, optimizer_ms);
  log::info("checkpoint: step {} written to {} ({} bytes) in {:.1f} ms; {} kept, {} removed", step_,
            w->path, w->bytes, w->ms, w->kept.size(), w->removed.size());
  (void)events_->checkpoint(step_, w->path, w->bytes, w->ms, w->kept, w->removed);
  (void)status_->on_checkpoint(step_, w->path);
  (void)status_->set_state("running");
  last_checkpoint_step_ = step_;
  return ok_status();
}

Status Trainer::check_resume(std::string& dir_out) {
  dir_out.clear();
  std::string which = opt_.resume;
  if (which == "latest") {
    std::optional<run::CheckpointInfo> latest = run::find_latest(opt_.run_dir + "/checkpoints");
    if (!latest) return ok_status();  // starts at step 0, and says so
    which = latest->path;
  }
  Result<std::string> dir = run::resolve_checkpoint(which);
  if (!dir) return fail("E-IO", dir.error());
  // Every byte is checked against checksums.json before it is trusted.
  std::vector<std::string> problems = run::verify_checkpoint(*dir);
  if (!problems.empty())
    return fail("E-IO",
                "checkpoint " + *dir + " is damaged: " + problems.front() +
                    (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) +
                                               " more; sexpgpu checkpoint verify lists them)"
                                         : ""));
  Result<run::Checkpoint> ck = run::load_checkpoint(*dir);
  if (!ck) return fail("E-IO", ck.error());
  const json& st = ck->state;
  std::vector<std::string> changed;
  if (st.value("file_hash", "") != file_hash_) changed.push_back("the run file");
  if (st.value("selection", json(nullptr)) != opt_.selection) changed.push_back("the selection");
  if (st.value("ir_hash", "") != ir_hash_) changed.push_back("the compiled IR");
  if (!changed.empty() && !opt_.allow_changed) {
    std::string what;
    for (const std::string& c : changed) what += (what.empty() ? "" : ", ") + c;
    return fail("E-RESUME-MISMATCH",
                "checkpoint " + *dir + " was written by another run: " + what +
                    " changed; resume with --allow-changed to continue anyway");
  }
  dir_out = *dir;
  return ok_status();
}

Status Trainer::resume(const std::string& checkpoint_dir) {
  const std::string* dir = &checkpoint_dir;
  Result<run::Checkpoint> ck = run::load_checkpoint(checkpoint_dir);
  if (!ck) return fail("E-IO", ck.error());
  const json& st = ck->state;
  auto restore = [&](const run::SafetensorsFile& file, const std::string& name,
                     const ir::TensorType& type, const Buffer& into) -> Status {
    const run::TensorEntry* t = file.find(name);
    auto dims = type.shape.dims();
    if (!t || t->dtype != type.dtype || t->shape != std::vector<int64_t>(dims.begin(), dims.end()))
      return fail("E-RESUME-MISMATCH",
                  "checkpoint " + *dir + " has no tensor " + name + " of type " + type.to_string());
    if (Status e = device_->upload(into, t->data.data(), t->data.size()); !e) return e;
    return ok_status();
  };
  for (const spec::ParamEntry& p : run_.params)
    if (Status f = restore(*ck->model, p.path, p.type, params_.at(p.path).current); !f) return f;
  for (const spec::StateEntry& s : run_.states)
    if (Status f = restore(*ck->optimizer, run::optimizer_tensor_name(s.param, s.name), s.type,
                           states_.at(s.tensor_name()).current);
        !f)
      return f;
  if (Status e = device_->synchronize(); !e) return e;
  step_ = ck->step;
  const json counters = st.value("counters", json::object());
  epoch_ = counters.value("epoch", int64_t(0));
  examples_ = counters.value("examples", int64_t(0));
  tokens_ = counters.value("tokens", int64_t(0));
  const json latest = st.value("metrics", json::object());
  for (auto& [k, v] : latest.items()) latest_[k] = v.is_number() ? v.get<double>() : std::nan("");
  if (Result<run::RunSummary> s = run::RunSummary::from_json(st.value("summary", json::object())))
    summary_ = *s;
  if (target_ && st.contains("target") && st["target"].is_object() &&
      st["target"].value("reached", false)) {
    target_->reached = true;
    if (st["target"].contains("step") && st["target"]["step"].is_number_integer())
      target_->step = st["target"]["step"].get<int64_t>();
  }
  skipped_total_ = st.value("skipped", int64_t(0));
  stage_ = st.value("stage", size_t(0));
  if (stage_ >= std::max<size_t>(run_.stages.size(), 1))
    return fail("E-RESUME-MISMATCH", "checkpoint " + *dir + " is in stage " +
                                         std::to_string(stage_) + ", which this run does not have");
  wall_before_resume_ = st.value("wall_s", 0.0);
  resumed_world_ = st.value("world_size", int64_t(1));
  const json loaders = st.value("loaders", json::object());
  json saved = loaders.value(run_.train_loader, json(nullptr));
  return start_loader(saved.is_null() ? std::nullopt : std::optional<json>(saved));
}

}  // namespace sexpgpu::train
