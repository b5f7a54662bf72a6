// The Trainer behind train() (trainer.h), shared by its files:
// trainer.cpp (setup and the step loop), trainer_eval.cpp (evaluation
// passes), trainer_checkpoint.cpp (checkpoints and resume).
//
// Device memory: every parameter and optimizer state has two buffers; the
// update writes the spare ones and they are swapped only when the step is
// finite, so a non-finite step never touches the parameters. Inputs and
// outputs are bound to programs by name (see spec/run_spec.h for the names),
// once per function (Bound::resolved), which keeps one table per kind of
// tensor instead of per program.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/prefetch.h"
#include "dist/store.h"
#include "run/events.h"
#include "run/status.h"
#include "run/summary.h"
#include "train/device.h"
#include "train/trainer.h"

namespace sexpgpu::train {

// A double-buffered tensor: `current` is read, `spare` written, then
// swapped. A parameter or state the device updates in place has no spare:
// the update writes `current` (the finite guard keeps its value on a step
// that is not applied).
struct Slot {
  Buffer current, spare;
  void swap() { std::swap(current, spare); }
  // Where an update writes: `current` in place (or when initialising).
  const Buffer& updated(bool initialising = false) const {
    return initialising || !spare.handle() ? current : spare;
  }
};

// A compiled function with the buffers only it uses (its batch inputs and
// scalar outputs), by name, and, once it has run outside initialisation,
// where each of its inputs and outputs lives (enqueue_fn): the step runs
// its functions thousands of times over buffers that stay put, only
// swapped within their slots.
struct Bound {
  std::unique_ptr<Program> program;
  std::map<std::string, Buffer> own;
  struct Resolved {
    std::vector<const Buffer*> inputs, outputs;
    // The f32 scalar outputs, downloaded behind a run that asks for them.
    std::vector<std::pair<const std::string*, const Buffer*>> scalars;
  };
  std::optional<Resolved> resolved;
};

// The step's scalar outputs, downloaded: "loss", "metric:acc", "grad-norm", "lr/default".
using Scalars = std::map<std::string, double>;

class Trainer {
 public:
  Trainer(const spec::RunSpec& run, const RunOptions& options, host::PluginHost& plugins);
  ~Trainer();
  RunOutcome run();

 private:
  // Setup (trainer.cpp).
  Status open_outputs();
  Status open_device();
  Status check_memory();
  Status load_data();
  Status resolve();  // sinks, device, memory, data: before the run directory
  // A run refused before its directory is written.
  RunOutcome refuse(const Status& why) const;
  Status compile();
  Status allocate();
  // The update's outputs (by name) written in place over what they update.
  std::set<std::string> updated_in_place();
  // The parameters whose updated value a selected diagnostic reads beside
  // the old one ("new:PATH", trainer_diag.cpp): those keep a spare.
  std::set<std::string> updates_diagnosed() const;
  Status initialise();
  Status make_loader(const spec::LoaderDecl& decl, std::optional<data::Loader>& out);
  Status start_loader(std::optional<nlohmann::json> saved);
  // Curriculum: moves the loaders to stage `index` and reports it.
  Status enter_stage(size_t index);
  Status check_stage_end();
  data::StageOverrides overrides_for(const spec::LoaderDecl& loader) const;
  nlohmann::json open_metadata() const;
  nlohmann::json memory_metadata() const;
  void set_peak_flops();

  // Running functions.
  Status run_fn(const std::string& fn, Scalars* scalars, bool init = false);
  // The scalars of runs enqueued without waiting: their downloads land in
  // these after the next synchronize (a deque: the addresses stay put).
  using PendingScalars = std::deque<std::pair<std::string, float>>;
  Status enqueue_fn(const std::string& fn, PendingScalars* pending, bool init = false);
  Status upload_batch(Bound& b, const data::Batch& batch);
  Bound::Resolved resolve(const Bound& bound, bool init);
  Status set_ctx(int64_t microbatch);
  Status upload_scalar(const Buffer& b, double value);
  // The rng's (seed, step, draw index), uploaded only when it changes.
  Status upload_rng(int64_t step, int64_t draw);
  // The function of `fns` compiled for the batch's shape, or null.
  static const std::string* sized_fn_for(const std::vector<spec::SizedFunction>& fns,
                                         const data::Batch& batch);
  static Failed no_sized_fn(const std::vector<spec::SizedFunction>& fns, const data::Batch& batch);

  // The loop (trainer.cpp).
  Status train_step(Scalars& out, bool& nonfinite, std::string& what);
  void report_step(const Scalars& s, double step_ms);
  Status after_step(bool& stop);
  // `why` is the failure of a Failed or NonFinite run.
  RunOutcome finish(RunEnd end, const Status& why = ok_status());
  void report(const std::string& message) const;

  // Diagnostics (trainer_diag.cpp): on a sampled step, after the update is
  // computed into the spare buffers and before they are swapped in, so
  // both the old and the new parameters are there.
  bool diagnostics_due() const;
  Status run_diagnostics();

  // Evaluation (trainer_eval.cpp).
  Status evaluate(const spec::EvalPass& pass);
  bool target_check(const std::string& metric, double value);

  // Checkpoints (trainer_checkpoint.cpp).
  Status checkpoint();
  // Before anything is written: the checkpoint --resume names (empty when
  // `latest` finds none), its checksums, and whether this run may continue it.
  Status check_resume(std::string& checkpoint_dir);
  Status resume(const std::string& checkpoint_dir);

  // Several processes (trainer_world.cpp; docs/run.md, "Several GPUs and
  // nodes"). Rank 0 alone writes the run directory; every rank runs every
  // step, evaluation and diagnostic, so they stay in step.
  const dist::World& world() const { return opt_.world; }
  bool writer() const { return opt_.world.rank == 0; }
  // Meets the other ranks at rank 0's store, which the plugins then reach.
  Status join_world();
  // The device's name and options at this world: cuda becomes nccl at a
  // world above one, on GPU LOCAL_RANK unless the ordinal is given.
  void world_device(std::string& name, nlohmann::json& options) const;
  // The mean over the ranks of the step's per-pass scalars, and whether
  // any rank was asked to stop or to checkpoint (the signals), so every
  // rank decides alike at the same step.
  // `stop` and `checkpoint` are this rank's own requests.
  Status reduce_step(Scalars& passes, bool stop, bool checkpoint);
  // A failure at a world above one, as E-RANK naming the ranks that are
  // gone when some are (a collective fails when a peer dies), else as is.
  Status rank_failure(const Status& why);
  // After a resume: every rank starts from the same step, or none does.
  Status agree_on_start();
  // The microbatch index the rng and the loader see: ranks and
  // microbatches together count like one process's microbatches.
  int64_t draw_index(int64_t microbatch) const;

  const spec::RunSpec& run_;
  const RunOptions& opt_;
  host::PluginHost& plugins_;
  std::unique_ptr<dist::Store> store_;  // before the device: it outlives it
  std::unique_ptr<Device> device_;
  int ordinal_ = 0;  // the device's ordinal among the plugin's devices
  Buffer reduced_;   // reduce_step's scalars
  bool stop_agreed_ = false, checkpoint_agreed_ = false;
  int64_t resumed_world_ = 1;  // the world of the checkpoint resumed from
  std::string ir_json_, ir_hash_, file_hash_;
  std::map<std::string, Bound> programs_;
  std::map<std::string, Slot> params_, states_, acc_;
  std::map<std::string, Buffer> grads_, ctx_;
  Buffer rng_;
  // What set_ctx last uploaded, by key, and the rng's last value: a step
  // sets the ctx before each microbatch and the update with mostly the same
  // values, and each upload costs the host a copy call.
  std::map<std::string, double> ctx_uploaded_;
  std::optional<std::array<int64_t, 3>> rng_uploaded_;

  // --sink NAME[:ARG]: sink plugins that receive every event line; opened
  // with the open event, closed after the close event.
  struct SinkConnection {
    std::string name, arg;
    const sg_sink_api* api = nullptr;
    sg_sink* sink = nullptr;
  };
  std::vector<SinkConnection> sinks_;
  Status find_sinks();
  void feed_sinks(const std::string& line);
  void close_sinks();

  std::optional<run::EventLog> events_;
  std::optional<run::StatusFile> status_;
  std::unique_ptr<data::Prefetcher> prefetch_;

  int64_t steps_ = 0;  // total
  int64_t step_ = 0;   // the next step to run (completed steps)
  int64_t seed_ = 0;
  int64_t skips_in_row_ = 0, skipped_total_ = 0;
  size_t stage_ = 0;  // the curriculum stage (0 without one)
  int64_t epoch_ = 0, examples_ = 0, tokens_ = 0;
  std::map<std::string, double> latest_;           // every series' latest value, for ctx and status
  std::map<std::string, int64_t> last_eval_step_;  // pass name -> step of its latest run
  run::RunSummary summary_;
  std::optional<run::Target> target_;
  bool target_stop_ = false;
  std::optional<int64_t> last_checkpoint_step_;
  std::chrono::steady_clock::time_point started_;
  double wall_before_resume_ = 0;
  // The log interval's accumulated time and examples.
  double interval_ms_ = 0;
  // The mfu series: the interval's FLOPs (the spec's step_flops of each
  // step's batch shape, by train function) over its time and the device's peak
  // rate at the run's precision (0: the device names none, so no mfu series).
  std::map<std::string, double> step_flops_;
  double interval_flops_ = 0, peak_flops_ = 0;
  int64_t interval_steps_ = 0, interval_examples_ = 0, interval_tokens_ = 0;
  // Where the steps' time went, for the log at the end (`steps: ...`): the
  // host taking batches from the loader, enqueueing the work (uploads, runs,
  // downloads), and waiting in the device's synchronize, against the steps'
  // whole time. A wait near zero says the host, not the device, sets the pace.
  struct StepTimes {
    double total_ms = 0, loader_ms = 0, enqueue_ms = 0, wait_ms = 0;
    int64_t steps = 0;
  } step_times_;
  bool progress_tty_ = false;

  // ---- diagnostics' own state (trainer_diag.cpp) ----
  // Last, so the programs and buffers go before the device that made them.
  struct DiagRuntime;                  // the selected diagnostics' programs and buffers
  std::shared_ptr<DiagRuntime> diag_;  // made at the first finite step that has a selection
  std::string last_train_fn_;          // the train_step the step's last microbatch ran
  Status prepare_diagnostics();
  Status run_diag_program(Bound& program, const std::string& train_fn);
  // ---- end of the diagnostics' state ----
};

}  // namespace sexpgpu::train
