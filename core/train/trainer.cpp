// The training loop: setup, steps, logging, signals, the end (trainer_impl.h).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>

#include "ir/json.h"
#include "run/checkpoint.h"
#include "train/memory_plan.h"
#include "train/trainer_impl.h"
#include "util/atomic_file.h"
#include "util/log.h"

namespace sexpgpu::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Signals (observe.md): the first SIGINT/SIGTERM stops after the step with a
// checkpoint, a second stops at once; SIGUSR1 asks for a checkpoint.
std::atomic<int> g_stop_signals{0};
std::atomic<int> g_first_signal{0};
std::atomic<bool> g_checkpoint_request{false};

extern "C" void on_signal(int sig) {
  if (sig == SIGUSR1) {
    g_checkpoint_request = true;
    return;
  }
  int expected = 0;
  g_first_signal.compare_exchange_strong(expected, sig);
  g_stop_signals.fetch_add(1);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking wait returns to the loop
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

double now_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

// Finite numbers as JSON numbers, the others as null (JSON has no NaN).
json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

}  // namespace

std::string content_hash(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Trainer::Trainer(const spec::RunSpec& run, const RunOptions& options, host::PluginHost& plugins)
    : run_(run), opt_(options), plugins_(plugins) {
  steps_ = options.steps.value_or(run.steps);
  seed_ = options.seed.value_or(run.run.seed);
  if (const std::optional<spec::TargetDecl>& t = run.run.target) {
    target_.emplace();
    target_->metric = t->metric, target_->op = t->op, target_->value = t->value;
  }
  target_stop_ = run.run.target_stop;
  file_hash_ = content_hash(options.file_text);
  ir_json_ = ir::to_json(run.module).dump();
  ir_hash_ = content_hash(ir_json_);
  progress_tty_ = !options.quiet && isatty(STDERR_FILENO);
}

// ---- setup -------------------------------------------------------------------------------

Status Trainer::open_outputs() {
  if (!writer()) {
    // Rank 0 writes the run's record; the others keep their state in
    // memory only (their errors still reach standard error).
    events_.emplace(run::EventLog::discarding());
    status_.emplace("");
    return ok_status();
  }
  std::error_code ec;
  fs::create_directories(opt_.run_dir, ec);
  if (ec) return fail("E-IO", "cannot create " + opt_.run_dir + ": " + ec.message());
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    std::string e;
    if (!write_file_atomic(opt_.run_dir + "/" + name, text, &e)) return fail("E-IO", e);
    return ok_status();
  };
  if (Status f = write("run.lisp", opt_.file_text); !f) return f;
  for (const auto& [path, text] : opt_.modules) {
    fs::create_directories(opt_.run_dir + "/modules", ec);
    if (Status f = write("modules/" + fs::path(path).filename().string(), text); !f) return f;
  }
  if (Status f = write("selection.json", opt_.selection.dump(2) + "\n"); !f) return f;
  if (Status f = write("ir.json", ir_json_ + "\n"); !f) return f;
  Result<run::EventLog> log = run::EventLog::create(opt_.run_dir + "/events.jsonl");
  if (!log) return fail("E-IO", log.error());
  events_.emplace(std::move(log).value());
  events_->set_mirror([this](const std::string& line) {
    if (opt_.json) std::cout << line << "\n" << std::flush;
    feed_sinks(line);
  });
  status_.emplace(opt_.run_dir + "/status.json");
  status_->edit().steps = steps_;
  if (std::string e = status_->set_state("compiling"); !e.empty()) return fail("E-IO", e);
  return ok_status();
}

// A device's memory plan that does not fit is E-MEMORY (the plugin's
// message carries need and have); every other device failure E-DEVICE.
static const char* device_failure_code(const std::string& message) {
  return message.find("E-MEMORY") != std::string::npos ? "E-MEMORY" : "E-DEVICE";
}

Status Trainer::open_device() {
  // What every device is told: the run's precision mode and --deterministic
  // (the CPU device is deterministic and f32-exact anyway).
  json common = {{"precision", run_.run.precision}, {"deterministic", opt_.deterministic}};
  std::string name = opt_.device == "auto" ? "cpu" : opt_.device;
  if (opt_.device == "auto" && plugins_.device("cuda")) {
    json options = common;
    std::string gpu = "cuda";
    world_device(gpu, options);
    if (!options.contains("ordinal")) options["ordinal"] = 0;
    if (plugins_.device(gpu))
      if (Result<std::unique_ptr<Device>> d = Device::open(plugins_, gpu, options)) {
        device_ = std::move(d).value();
        ordinal_ = options["ordinal"].get<int>();
        return ok_status();
      }
  }
  json options = common;
  if (name == "cpu") options["threads"] = opt_.threads;
  // cuda:N names the plugin and the device's ordinal.
  if (size_t colon = name.find(':'); colon != std::string::npos) {
    std::optional<int> ordinal = device_ordinal(name);
    name = name.substr(0, colon);
    if (!ordinal)
      return fail("E-DEVICE", "device " + opt_.device +
                                  ": the ordinal after ':' must be a number from 0 to " +
                                  std::to_string(kMaxOrdinal));
    options["ordinal"] = *ordinal;
  }
  world_device(name, options);
  Result<std::unique_ptr<Device>> d = Device::open(plugins_, name, options);
  if (!d) return fail("E-DEVICE", d.error());
  device_ = std::move(d).value();
  ordinal_ = options.value("ordinal", 0);
  return ok_status();
}

// A device's probe may give each GPU's datasheet peak by precision
// ("peak_flops": {"bf16", "tf32", "f32"}); the run's precision picks one.
void Trainer::set_peak_flops() {
  for (const auto& [fn, flops] : run_.step_flops) step_flops_[fn] = flops.total();
  size_t ordinal = size_t(ordinal_);
  const json& devices = device_->probe().value("devices", json::array());
  if (!devices.is_array() || ordinal >= devices.size()) return;
  const json& peak = devices[ordinal].value("peak_flops", json::object());
  if (peak.is_object() && peak.contains(run_.run.precision) && peak[run_.run.precision].is_number())
    peak_flops_ = peak[run_.run.precision].get<double>();
}

// The memory plan against what the device has (its probe's memory_bytes,
// physical memory for the cpu device), before anything is allocated: a plan
// that cannot fit is E-MEMORY with both numbers, not an allocation failure
// half-way through compiling.
Status Trainer::check_memory() {
  size_t ordinal = size_t(ordinal_);
  const json& devices = device_->probe().value("devices", json::array());
  if (!devices.is_array() || ordinal >= devices.size()) return ok_status();
  const json& have = devices[ordinal].value("memory_bytes", json(nullptr));
  if (!have.is_number_unsigned() && !have.is_number_integer()) return ok_status();
  std::string name = device_->name() + (devices.size() > 1 ? ":" + std::to_string(ordinal) : "");
  RunMemory plan = plan_run_memory(run_);
  log::info(
      "memory plan: {} total (parameters {}, gradients {}, optimizer state {}, "
      "activations {} at {}, workspace {}) of {} on {}",
      bytes_text(uint64_t(plan.total())), bytes_text(uint64_t(plan.parameters)),
      bytes_text(uint64_t(plan.gradients)), bytes_text(uint64_t(plan.optimizer_state)),
      bytes_text(uint64_t(plan.activations)), plan.step_function,
      bytes_text(uint64_t(plan.workspace)), bytes_text(have.get<uint64_t>()), name);
  if (std::optional<std::string> e = memory_shortfall(plan, have.get<uint64_t>(), name))
    return fail("E-MEMORY", *e);
  return ok_status();
}

// Every loader's data in memory (each source loads once, whoever asks
// first), so a missing or unreadable file stops the run before it starts.
Status Trainer::load_data() {
  for (const spec::LoaderDecl& decl : run_.loaders.decls) {
    log::Stopwatch took;
    if (data::Status st = decl.source->load(); !st)
      return fail("E-LOADER-SOURCE", "loader " + decl.name + ": " + st.error());
    // The bytes of its files on disk (a synthetic source has none: it is
    // computed on demand); a source two loaders share loads once.
    uint64_t bytes = 0;
    std::error_code ec;
    for (const fs::path& f : decl.source->files())
      if (uintmax_t n = fs::file_size(f, ec); !ec) bytes += n;
    log::info("data: loader {}: {} ({} examples, {} files, {} bytes) loaded in {:.1f} ms",
              decl.name, decl.source->description(), decl.source->size(),
              decl.source->files().size(), bytes, took.ms());
    for (const fs::path& f : decl.source->files())
      log::debug("data: loader {} reads {}", decl.name, f.string());
  }
  // The ranks share the training loader's global batches evenly, or the
  // run does not start (data::Loader, "Data parallel").
  if (world().several()) {
    std::optional<data::Loader> shared;
    if (Status f = make_loader(*run_.loaders.find(run_.train_loader), shared); !f)
      return fail("E-WORLD", f.error());
  }
  return ok_status();
}

// What a run needs from outside the file (sinks, the device and its
// memory, the data) is resolved before the run directory is written, so a
// run refused here leaves nothing that blocks the corrected command.
//
// The data loads on a thread while the device opens (a GPU's takes 0.1-0.3
// s, the mlp's Fashion-MNIST 0.27 s to decompress); nothing else touches
// the loaders meanwhile.
Status Trainer::resolve() {
  std::future<Status> data = std::async(std::launch::async, [this] { return load_data(); });
  Status f = find_sinks();
  if (f) f = open_device();
  if (f) set_peak_flops();
  if (f) f = check_memory();
  Status loaded = data.get();
  return f ? loaded : f;
}

// The CLI prints a refusal's error and, with --json, its close event
// (unstarted_close_line).
RunOutcome Trainer::refuse(const Status& why) const {
  RunOutcome o;
  o.end = RunEnd::Refused;
  o.state = "failed";
  o.error = why.diagnostic();
  return o;
}

void Trainer::report(const std::string& message) const {
  if (opt_.report) opt_.report(message);
}

std::string unstarted_close_line(int exit_code, const nlohmann::json& error) {
  return run::event_line("close", std::chrono::system_clock::now(), std::nullopt,
                         {{"state", "failed"},
                          {"exit_code", exit_code},
                          {"summary", run::RunSummary{}.to_json()},
                          {"error", error}});
}

std::optional<int> device_ordinal(const std::string& spec) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos) return 0;
  std::string_view text = std::string_view(spec).substr(colon + 1);
  int ordinal = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ordinal);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || ordinal < 0 ||
      ordinal > kMaxOrdinal)
    return std::nullopt;
  return ordinal;
}

Status Trainer::compile() {
  log::Stopwatch took;
  for (const ir::Function& fn : run_.module.functions) {
    Result<std::unique_ptr<Program>> p = device_->compile(ir_json_, fn);
    if (!p) return fail(device_failure_code(p.error()), p.error());
    programs_[fn.name].program = std::move(p).value();
  }
  log::info("lower: {} functions compiled for {} in {:.1f} ms", run_.module.functions.size(),
            device_->name(), took.ms());
  return ok_status();
}

std::set<std::string> Trainer::updated_in_place() {
  std::set<std::string> out;
  auto it = programs_.find("update");
  if (it == programs_.end()) return out;
  const ir::Function& fn = it->second.program->function();
  std::vector<int64_t> over = update_in_place(*device_, *it->second.program);
  std::set<std::string> diagnosed = updates_diagnosed();
  for (size_t j = 0; j < over.size(); ++j)
    if (over[j] >= 0 && !diagnosed.count(fn.outputs[j].name)) out.insert(fn.outputs[j].name);
  return out;
}

Status Trainer::allocate() {
  auto alloc = [&](const ir::TensorType& t, Buffer& into) -> Status {
    Result<Buffer> b = device_->alloc(t);
    if (!b) return fail(device_failure_code(b.error()), b.error());
    into = std::move(b).value();
    return ok_status();
  };
  const std::set<std::string> in_place = updated_in_place();
  log::info("memory: {} of the update's parameters and states written in place", in_place.size());
  for (const spec::ParamEntry& p : run_.params) {
    Slot& s = params_[p.path];
    if (Status f = alloc(p.type, s.current); !f) return f;
    if (p.trainable && !in_place.count("param:" + p.path))
      if (Status f = alloc(p.type, s.spare); !f) return f;
    if (!p.trainable) continue;
    if (Status f = alloc(p.type, grads_[p.path]); !f) return f;
    if (run_.run.microbatches > 1) {
      if (Status f = alloc(p.type, acc_[p.path].current); !f) return f;
      if (Status f = alloc(p.type, acc_[p.path].spare); !f) return f;
    }
  }
  for (const spec::StateEntry& s : run_.states) {
    Slot& slot = states_[s.tensor_name()];
    if (Status f = alloc(s.type, slot.current); !f) return f;
    if (!in_place.count("state:" + s.tensor_name()))
      if (Status f = alloc(s.type, slot.spare); !f) return f;
  }
  if (Status f = alloc(ir::TensorType{ir::DType::I64, ir::Shape{3}}, rng_); !f) return f;
  // Each program's own buffers: inputs and outputs no table above holds.
  for (auto& [name, bound] : programs_) {
    const ir::Function& fn = bound.program->function();
    for (ir::NodeId id : fn.inputs) {
      const ir::Node& n = fn.node(id);
      if (n.op != ir::Op::Input) continue;
      const std::string& in = *n.attrs.name;
      if (auto key = spec::ctx_key_of_input(in)) {
        if (!ctx_.count(*key))
          if (Status f = alloc(n.type, ctx_[*key]); !f) return f;
      } else if (in.rfind("batch:", 0) == 0) {
        if (Status f = alloc(n.type, bound.own[in]); !f) return f;
      }
    }
    for (const ir::Output& o : fn.outputs) {
      const std::string& out = o.name;
      bool shared = out.rfind("grad:", 0) == 0 || out.rfind("param:", 0) == 0 ||
                    out.rfind("state:", 0) == 0 || out.rfind("sum:", 0) == 0;
      if (!shared)
        if (Status f = alloc(fn.type(o.node), bound.own[out]); !f) return f;
    }
  }
  return ok_status();
}

Status Trainer::upload_scalar(const Buffer& b, double value) {
  std::byte bytes[8] = {};
  switch (b.type().dtype) {
    case ir::DType::I64: {
      int64_t v = int64_t(value);
      std::memcpy(bytes, &v, 8);
      break;
    }
    case ir::DType::I32: {
      int32_t v = int32_t(value);
      std::memcpy(bytes, &v, 4);
      break;
    }
    case ir::DType::Bool: bytes[0] = std::byte(value != 0); break;
    default: {
      float v = float(value);
      std::memcpy(bytes, &v, 4);
    }
  }
  if (Status e = device_->upload(b, bytes, b.bytes()); !e) return e;
  return ok_status();
}

Status Trainer::initialise() {
  // Initialisers draw with the last microbatch index of step 0, which no
  // training step uses, so their numbers are not a dropout mask's.
  if (Status e = upload_rng(0, 65535); !e) return e;
  log::Stopwatch init_fn;
  if (Status f = run_fn("init", nullptr, true); !f) return f;
  const double init_fn_ms = init_fn.ms();
  // Set where the state lives (GPT-2's AdamW has 296 states, 950 MiB):
  // no host copy to upload, unless the plugin lacks sg_device_fill.
  log::Stopwatch filling;
  for (const spec::StateEntry& s : run_.states) {
    const Buffer& b = states_[s.tensor_name()].current;
    if (s.type.dtype != ir::DType::F32)
      return fail("E-DEVICE", "optimizer state " + s.tensor_name() + " is " + s.type.to_string() +
                                  "; only f32 states are supported");
    const float value = float(s.fill);
    if (Status e = device_->fill(b, std::as_bytes(std::span(&value, 1))); !e) return e;
  }
  if (Status e = device_->synchronize(); !e) return e;
  log::info("init: the init function ran in {:.1f} ms, {} optimizer states filled in {:.1f} ms",
            init_fn_ms, run_.states.size(), filling.ms());
  return ok_status();
}

// A loader of the file at its start, seeded by the run unless it has its
// own :seed, in the current stage.
Status Trainer::make_loader(const spec::LoaderDecl& decl, std::optional<data::Loader>& out) {
  data::LoaderOptions o = decl.options;
  if (!decl.has_seed) o.seed = uint64_t(seed_);
  // The training loader is shared by the ranks; every rank evaluates whole.
  if (decl.name == run_.train_loader) o.rank = world().rank, o.ranks = world().size;
  Result<data::Loader> loader = data::Loader::create(decl.source, o);
  if (!loader) return fail("E-LOADER-SOURCE", loader.error());
  out.emplace(std::move(loader).value());
  if (data::Status st = out->apply_stage(overrides_for(decl)); !st)
    return fail("E-LOADER-SOURCE", st.error());
  return ok_status();
}

Status Trainer::start_loader(std::optional<json> saved) {
  std::optional<data::Loader> made;
  if (Status f = make_loader(*run_.loaders.find(run_.train_loader), made); !f) return f;
  data::Loader& l = *made;
  if (saved)
    if (data::Status s = l.restore(*saved); !s) return fail("E-RESUME-MISMATCH", s.error());
  prefetch_ = std::make_unique<data::Prefetcher>(std::move(l), 4);
  return ok_status();
}

// The loader's options in the current stage (LoaderDecl::overrides_for).
data::StageOverrides Trainer::overrides_for(const spec::LoaderDecl& loader) const {
  if (run_.stages.empty()) return {};
  return loader.overrides_for(run_.stages[stage_].name);
}

Status Trainer::enter_stage(size_t index) {
  stage_ = index;
  if (prefetch_) {
    data::Loader l = std::move(*prefetch_).stop();
    prefetch_.reset();
    if (data::Status st = l.apply_stage(overrides_for(*run_.loaders.find(run_.train_loader))); !st)
      return fail("E-LOADER-SOURCE", st.error());
    prefetch_ = std::make_unique<data::Prefetcher>(std::move(l), 4);
  }
  json shapes = json::object();
  for (const spec::LoaderDecl& l : run_.loaders.decls) {
    data::StageOverrides o = overrides_for(l);
    shapes[l.name] = {{"batch", o.batch.value_or(l.options.batch)}};
    if (o.seq_len) shapes[l.name]["seq_len"] = *o.seq_len;
  }
  (void)events_->stage(step_, run_.stages[index].name, int64_t(index), shapes);
  status_->edit().stage = run_.stages[index].name;
  return ok_status();
}

// At a step boundary: while the stage's :until holds, the next stage.
Status Trainer::check_stage_end() {
  while (stage_ + 1 < run_.stages.size() && !run_.stages[stage_].until_fn.empty()) {
    if (Status f = set_ctx(0); !f) return f;
    Scalars s;
    if (Status f = run_fn(run_.stages[stage_].until_fn, &s); !f) return f;
    if (s["until"] < 0.5) break;
    if (Status f = enter_stage(stage_ + 1); !f) return f;
  }
  return ok_status();
}

// ---- sinks -------------------------------------------------------------------------------

Status Trainer::find_sinks() {
  for (const std::string& spec : opt_.sinks) {
    size_t colon = spec.find(':');
    SinkConnection c{spec.substr(0, colon),
                     colon == std::string::npos ? "" : spec.substr(colon + 1)};
    c.api = plugins_.sink(c.name);
    if (!c.api) {
      const host::PluginRecord* r = plugins_.find(c.name);
      return fail("E-IO", "--sink " + spec + ": " +
                              (r ? "the plugin did not load: " + r->reason
                                 : "no sink plugin named '" + c.name + "' on the plugin path"));
    }
    sinks_.push_back(std::move(c));
  }
  return ok_status();
}

// A failing sink is reported once on standard error and dropped: the run's
// own record is events.jsonl, which a sink only copies.
void Trainer::feed_sinks(const std::string& line) {
  for (SinkConnection& c : sinks_) {
    if (!c.api) continue;
    sg_error* err = nullptr;
    if (!c.sink) {
      err = c.api->open(opt_.run_dir.data(), opt_.run_dir.size(), line.data(), line.size(),
                        c.arg.data(), c.arg.size(), &c.sink);
    } else {
      err = c.api->event(c.sink, line.data(), line.size());
    }
    if (!err) continue;
    report("sink " + c.name + ": " + host::take_error(c.api, err));
    if (c.sink) (void)host::take_error(c.api, c.api->close(c.sink));
    c.api = nullptr;
    c.sink = nullptr;
  }
}

void Trainer::close_sinks() {
  for (SinkConnection& c : sinks_) {
    if (!c.api || !c.sink) continue;
    if (std::string e = host::take_error(c.api, c.api->close(c.sink)); !e.empty())
      report("sink " + c.name + ": " + e);
    c.sink = nullptr;
  }
}

// ---- running a function ------------------------------------------------------------------

Status Trainer::run_fn(const std::string& name, Scalars* scalars, bool init) {
  if (!scalars) return enqueue_fn(name, nullptr, init);
  PendingScalars pending;
  if (Status f = enqueue_fn(name, &pending, init); !f) return f;
  if (Status e = device_->synchronize(); !e) return e;
  for (const auto& [k, v] : pending) (*scalars)[k] = v;
  return ok_status();
}

// Where the function's inputs and outputs are (spec/run_spec.h names
// them). A pointer to a Slot's member stays valid across its swaps.
Bound::Resolved Trainer::resolve(const Bound& bound, bool init) {
  const ir::Function& fn = bound.program->function();
  const bool update = fn.name == "update";
  Bound::Resolved r;
  for (ir::NodeId id : fn.inputs) {
    const ir::Node& n = fn.node(id);
    const std::string& s = *n.attrs.name;
    const Buffer* b = nullptr;
    if (n.op == ir::Op::Param) {
      b = &params_.at(s).current;
    } else if (s == "rng") {
      b = &rng_;
    } else if (auto key = spec::ctx_key_of_input(s)) {
      b = &ctx_.at(*key);
    } else if (s.rfind("grad:", 0) == 0) {
      std::string path = s.substr(5);
      b = update && run_.run.microbatches > 1 ? &acc_.at(path).current : &grads_.at(path);
    } else if (s.rfind("acc:", 0) == 0) {
      b = &acc_.at(s.substr(4)).current;
    } else if (s.rfind("state:", 0) == 0) {
      b = &states_.at(s.substr(6)).current;
    } else {
      b = &bound.own.at(s);
    }
    r.inputs.push_back(b);
  }
  for (const ir::Output& o : fn.outputs) {
    const std::string& s = o.name;
    const Buffer* b = nullptr;
    if (s.rfind("grad:", 0) == 0)
      b = &grads_.at(s.substr(5));
    else if (s.rfind("param:", 0) == 0)
      b = &params_.at(s.substr(6)).updated(init);
    else if (s.rfind("state:", 0) == 0)
      b = &states_.at(s.substr(6)).updated();
    else if (s.rfind("sum:", 0) == 0)
      b = &acc_.at(s.substr(4)).spare;
    else
      b = &bound.own.at(s);
    r.outputs.push_back(b);
    auto own = bound.own.find(s);
    if (own != bound.own.end() && own->second.type().shape.is_scalar() &&
        own->second.type().dtype == ir::DType::F32)
      r.scalars.emplace_back(&o.name, &own->second);
  }
  return r;
}

// Enqueues one run of `name` and, with `pending`, the downloads of its f32
// scalar outputs behind it (plugins.md: complete after synchronize).
Status Trainer::enqueue_fn(const std::string& name, PendingScalars* pending, bool init) {
  Bound& bound = programs_.at(name);
  std::optional<Bound::Resolved> fresh;
  if (init)
    fresh = resolve(bound, true);  // initialisation writes parameters in place
  else if (!bound.resolved)
    bound.resolved = resolve(bound, false);
  const Bound::Resolved& r = init ? *fresh : *bound.resolved;
  std::vector<sg_buffer*> in(r.inputs.size()), out(r.outputs.size());
  for (size_t k = 0; k < in.size(); ++k) in[k] = r.inputs[k]->handle();
  for (size_t j = 0; j < out.size(); ++j) out[j] = r.outputs[j]->handle();
  if (Status e = device_->run(*bound.program, in, out); !e) return e;
  if (!pending) return ok_status();
  for (const auto& [output, buffer] : r.scalars) {
    pending->emplace_back(*output, 0.0f);
    if (Status e = device_->download(*buffer, &pending->back().second, 4); !e) return e;
  }
  return ok_status();
}

Status Trainer::upload_batch(Bound& b, const data::Batch& batch) {
  for (const data::BatchField& f : batch.fields) {
    auto it = b.own.find("batch:" + f.name);
    if (it == b.own.end()) continue;  // a field no function reads
    if (it->second.bytes() != f.size_bytes)
      return fail("E-LOADER-SOURCE",
                  "field :" + f.name + " of a batch has " + std::to_string(f.size_bytes) +
                      " bytes, the step expects " + std::to_string(it->second.bytes()));
    if (Status e = device_->upload(it->second, f.bytes.get(), f.size_bytes); !e) return e;
  }
  return ok_status();
}

Status Trainer::set_ctx(int64_t microbatch) {
  for (auto& [key, buffer] : ctx_) {
    double v = std::nan("");
    if (key == "step")
      v = double(step_);
    else if (key == "steps")
      v = double(steps_);
    else if (key == "progress")
      v = double(step_) / double(std::max<int64_t>(steps_, 1));
    else if (key == "microbatch")
      v = double(microbatch);
    else if (key == "microbatches")
      v = double(run_.run.microbatches);
    else if (key == "epoch")
      v = double(epoch_);
    else if (key == "examples")
      v = double(examples_);
    else if (key == "tokens")
      v = double(tokens_);
    else if (key == "stage")
      v = double(stage_);
    else if (key == "seed")
      v = double(seed_);
    else if (key == "rank")
      v = double(world().rank);
    else if (key == "world-size")
      v = double(world().size);
    else if (auto it = latest_.find(key); it != latest_.end())
      v = it->second;
    // Compared bit for bit: a NaN (a series not yet seen) is uploaded once.
    auto last = ctx_uploaded_.find(key);
    if (last != ctx_uploaded_.end() && std::memcmp(&last->second, &v, sizeof v) == 0) continue;
    if (Status f = upload_scalar(buffer, v); !f) return f;
    ctx_uploaded_[key] = v;
  }
  return upload_rng(step_, draw_index(microbatch));
}

Status Trainer::upload_rng(int64_t step, int64_t draw) {
  const std::array<int64_t, 3> rng = {seed_, step, draw};
  if (rng_uploaded_ == rng) return ok_status();
  rng_uploaded_.reset();  // unknown if the upload fails
  if (Status e = device_->upload(rng_, rng.data(), sizeof rng); !e) return e;
  rng_uploaded_ = rng;
  return ok_status();
}

const std::string* Trainer::sized_fn_for(const std::vector<spec::SizedFunction>& fns,
                                         const data::Batch& batch) {
  for (const spec::SizedFunction& f : fns)
    if (f.rows == batch.size && f.seq_len == batch.seq_len) return &f.fn;
  return nullptr;
}

// A batch of a shape nothing was compiled for: compile_run compiles every
// shape the loader can give, so this is a bug, said as such.
Failed Trainer::no_sized_fn(const std::vector<spec::SizedFunction>& fns, const data::Batch& batch) {
  std::string compiled;
  for (const spec::SizedFunction& f : fns)
    compiled += (compiled.empty() ? "" : ", ") + std::to_string(f.rows) +
                (f.seq_len ? "x" + std::to_string(f.seq_len) : "");
  return fail("E-LOADER-SOURCE",
              "internal error, please report: a batch of " + std::to_string(batch.size) + " rows" +
                  (batch.seq_len ? " of :seq-len " + std::to_string(batch.seq_len) : "") +
                  ", and " + fns.front().fn + " is compiled for " + compiled);
}

// ---- the step ----------------------------------------------------------------------------

// One optimizer step: every microbatch's forward and backward, the gradient
// sum, then the update, enqueued back to back and waited for once. The
// update itself applies the finite guard (compile.cpp): on a step whose loss
// or gradient norm is not finite it writes the old values back, so it may
// write parameters and states in place; those it does not (the device's
// choice, or a diagnostic reading the old and new values) go to the spare
// buffers, swapped in only for a finite step. `nonfinite` says the step must
// not be counted as applied and `what` names the value.
Status Trainer::train_step(Scalars& out, bool& nonfinite, std::string& what) {
  const int64_t micro = run_.run.microbatches;
  std::vector<PendingScalars> passes(static_cast<size_t>(micro));  // sized once: no deque moves
  for (int64_t mb = 0; mb < micro; ++mb) {
    log::Stopwatch taking;
    Result<data::Batch> batch = prefetch_->next();
    step_times_.loader_ms += taking.ms();
    if (!batch) return fail("E-LOADER-SOURCE", batch.error());
    log::Stopwatch enqueueing;
    const std::string* found = sized_fn_for(run_.train_fns, *batch);
    if (!found) return no_sized_fn(run_.train_fns, *batch);
    const std::string& fn = *found;
    last_train_fn_ = fn;  // diagnostics over activations rerun this batch
    if (Status f = upload_batch(programs_.at(fn), *batch); !f) return f;
    epoch_ = batch->epoch;
    if (Status f = set_ctx(mb); !f) return f;
    if (Status f = enqueue_fn(fn, &passes[size_t(mb)]); !f) return f;
    step_times_.enqueue_ms += enqueueing.ms();
    const data::LoaderCounters c = prefetch_->state().counters;
    interval_examples_ += c.examples - examples_;  // every rank's
    examples_ = c.examples;
    interval_tokens_ += c.tokens - tokens_;
    tokens_ = c.tokens;
    if (micro > 1) {
      if (mb == 0) {
        for (auto& [path, slot] : acc_) std::swap(slot.current, grads_.at(path));
      } else {
        if (Status f = enqueue_fn("accumulate", nullptr); !f) return f;
        for (auto& [path, slot] : acc_) slot.swap();
      }
    }
  }
  log::Stopwatch enqueueing;
  if (Status f = set_ctx(0); !f) return f;
  PendingScalars update;
  if (Status f = enqueue_fn("update", &update); !f) return f;
  step_times_.enqueue_ms += enqueueing.ms();
  log::Stopwatch waiting;
  if (Status e = device_->synchronize(); !e) return e;
  step_times_.wait_ms += waiting.ms();
  std::map<std::string, double> sums;
  for (const PendingScalars& pass : passes)
    for (const auto& [k, v] : pass) sums[k] += v / double(micro);
  bool stop = world().several() && g_stop_signals.load() > 0;
  bool checkpoint = world().several() && g_checkpoint_request.exchange(false);
  if (Status f = reduce_step(sums, stop, checkpoint); !f) return f;
  out = sums;
  if (!std::isfinite(out["loss"])) {
    nonfinite = true;
    what = "loss";
    return ok_status();
  }
  for (const auto& [k, v] : update) out[k] = v;
  if (!std::isfinite(out["grad-norm"])) {
    nonfinite = true;
    what = "grad-norm";
  }
  return ok_status();
}

void Trainer::report_step(const Scalars& s, double step_ms) {
  json metrics = json::object();
  for (auto& [k, v] : s) {
    std::string series = k == "loss"                  ? "train/loss"
                         : k.rfind("metric:", 0) == 0 ? "train/" + k.substr(7)
                                                      : k;
    metrics[series] = number(v);
    latest_[series] = v;
  }
  double secs = interval_ms_ / 1000.0;
  metrics["step-ms"] = interval_steps_ ? interval_ms_ / double(interval_steps_) : step_ms;
  if (peak_flops_ > 0 && interval_ms_ > 0)
    metrics["mfu"] = interval_flops_ / (interval_ms_ / 1000.0) / peak_flops_;
  metrics["examples-per-s"] = secs > 0 ? double(interval_examples_) / secs : 0.0;
  if (interval_tokens_ > 0) metrics["tokens-per-s"] = double(interval_tokens_) / secs;
  metrics["epoch"] = epoch_;
  if (json mem = device_->memory_stats(); mem.is_object() && mem.contains("peak_bytes_in_use"))
    metrics["memory-bytes"] = mem["peak_bytes_in_use"];
  // Schedules (lr/GROUP, ...) have a last value but no best one.
  for (auto& [k, v] : metrics.items()) {
    if (!v.is_number()) continue;
    bool schedule = false;
    for (const spec::GroupEntry& g : run_.groups)
      schedule = schedule || std::find(g.series.begin(), g.series.end(), k) != g.series.end();
    if (schedule)
      summary_.observe_final(k, v.get<double>());
    else
      summary_.observe(k, v.get<double>(), step_);
  }
  for (auto& [k, v] : s) {
    std::string series = k == "loss"                  ? "train/loss"
                         : k.rfind("metric:", 0) == 0 ? "train/" + k.substr(7)
                                                      : k;
    target_check(series, v);
  }
  json throughput = {{"step-ms", metrics["step-ms"]},
                     {"examples-per-s", metrics["examples-per-s"]}};
  if (metrics.contains("tokens-per-s")) throughput["tokens-per-s"] = metrics["tokens-per-s"];
  double per_step = interval_steps_ ? interval_ms_ / double(interval_steps_) / 1000.0 : 0;
  std::optional<double> eta = double(steps_ - step_) * per_step;
  (void)events_->step(step_, metrics);
  (void)status_->on_step(step_, metrics, throughput, eta);
  if (!opt_.quiet) {
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f  %.1f ms/step  eta %.0fs",
                  static_cast<long long>(step_), static_cast<long long>(steps_),
                  s.count("loss") ? s.at("loss") : 0.0, double(metrics["step-ms"]), *eta);
    if (progress_tty_)
      std::cerr << "\r\033[K" << line << std::flush;
    else
      std::cerr << line << "\n";
  }
  interval_ms_ = interval_flops_ = 0;
  interval_steps_ = interval_examples_ = interval_tokens_ = 0;
}

// The device's memory once the run is set up: each compiled function's
// memory plan (its arena) and the device's bytes in use and at peak, which
// include the parameters, gradients, optimizer states and batches.
nlohmann::json Trainer::memory_metadata() const {
  json plans = json::object();
  for (const auto& [name, bound] : programs_)
    if (bound.program) plans[name] = bound.program->plan_bytes();
  json m = {{"plan_bytes", plans}};
  json stats = device_->memory_stats();
  if (stats.is_object())
    for (const char* k : {"bytes_in_use", "peak_bytes_in_use", "bytes_limit"})
      if (stats.contains(k)) m[k] = stats[k];
  return m;
}

nlohmann::json Trainer::open_metadata() const {
  json devices = device_->probe().value("devices", json::array());
  json plugins = json::array();
  for (const host::PluginRecord& p : plugins_.plugins())
    if (p.loaded) plugins.push_back({{"name", p.name}, {"kind", p.kind}, {"version", p.version}});
  json modules = json::array();
  for (const auto& [path, text] : opt_.modules)
    modules.push_back({{"path", path}, {"hash", content_hash(text)}});
  int64_t param_count = 0;
  for (const spec::ParamEntry& p : run_.params) param_count += p.type.shape.numel().value_or(0);
  const spec::LoaderDecl* train = run_.loaders.find(run_.train_loader);
  char time[64];
  std::time_t t = std::time(nullptr);
  std::strftime(time, sizeof time, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return {{"version", SEXPGPU_VERSION},
          {"ir_version", ir::kIrVersion},
          {"file", opt_.file},
          {"file_hash", file_hash_},
          {"modules", modules},
          {"ir_hash", ir_hash_},
          {"selection", opt_.selection},
          {"slug", opt_.slug},
          {"device",
           {{"name", device_->name()},
            {"version", device_->version()},
            {"devices", devices},
            {"memory", memory_metadata()}}},
          {"plugins", plugins},
          {"params", param_count},
          {"steps", steps_},
          {"seed", seed_},
          {"effective_batch", train->options.batch * run_.run.microbatches * world().size},
          {"world",
           {{"size", world().size},
            {"origin", world().origin.empty() ? json(nullptr) : json(world().origin)},
            {"master", world().several() ? json(world().master()) : json(nullptr)}}},
          {"host", host_name()},
          {"started", time},
          {"command", opt_.argv}};
}

Status Trainer::after_step(bool& stop) {
  const int64_t done = step_;
  for (const spec::EvalPass& pass : run_.evals) {
    bool periodic = pass.decl.every > 0 && done % pass.decl.every == 0 && done < steps_;
    bool at_end = pass.decl.at_end && done == steps_;
    if (periodic || at_end)
      if (Status f = evaluate(pass); !f) return f;
  }
  bool asked = world().several() ? checkpoint_agreed_ : g_checkpoint_request.exchange(false);
  bool want = (run_.run.checkpoint_every && done % *run_.run.checkpoint_every == 0) || asked;
  // The last step's checkpoint is the :at-end one, unless that is off.
  if (want && (done < steps_ || !run_.run.checkpoint_at_end))
    if (Status f = checkpoint(); !f) return f;
  if (target_ && target_->reached && target_stop_) stop = true;
  return ok_status();
}

namespace {

const char* state_of(RunEnd end) {
  switch (end) {
    case RunEnd::Finished: return "finished";
    case RunEnd::Refused:
    case RunEnd::Failed: return "failed";
    case RunEnd::NonFinite: return "nonfinite";
    case RunEnd::Stopped:
    case RunEnd::Interrupted: return "stopped";
    case RunEnd::Preempted: return "preempted";
  }
  return "failed";
}

}  // namespace

RunOutcome Trainer::finish(RunEnd end, const Status& why) {
  RunOutcome o;
  o.end = end;
  o.state = state_of(end);
  if (!why) o.error = why.diagnostic();
  const int exit_code = opt_.exit_code_of(o);
  const std::string& state = o.state;
  double wall = wall_before_resume_ + now_ms(started_) / 1000.0;
  summary_.set_counts(step_, wall, tokens_, examples_);
  if (target_) summary_.set_target(*target_);
  json summary = summary_.to_json();
  json err = why ? json(nullptr) : json{{"code", why.code()}, {"message", why.error()}};
  std::optional<std::string> next;
  if (state == "stopped" || state == "preempted" || (!why && why.code() == "E-RANK"))
    next = run::resume_command(opt_.argv);
  if (const StepTimes& t = step_times_; t.steps > 0) {
    auto per_step = [&](double ms) { return ms / double(t.steps); };
    log::info(
        "steps: {} in {:.1f} ms, {:.4f} ms a step: {:.4f} taking batches from the loader, "
        "{:.4f} enqueueing, {:.4f} waiting in the device's synchronize, {:.4f} the rest",
        t.steps, t.total_ms, per_step(t.total_ms), per_step(t.loader_ms), per_step(t.enqueue_ms),
        per_step(t.wait_ms), per_step(t.total_ms - t.loader_ms - t.enqueue_ms - t.wait_ms));
  }
  if (status_) status_->edit().step = step_;
  if (events_) (void)events_->close(step_, state, exit_code, summary, err);
  close_sinks();
  if (status_) (void)status_->finish(state, exit_code, summary, err, next);
  if (progress_tty_) std::cerr << "\n";
  // A goodbye when every rank ends alike (a failure is seen as a rank gone).
  if (store_ && (end == RunEnd::Finished || end == RunEnd::Stopped || end == RunEnd::Preempted))
    store_->leave();
  o.step = step_;
  o.steps = steps_;
  o.wall_s = wall;
  for (auto& [k, v] : summary_.final_values())
    if (run::RunSummary::has_best(k)) o.final_values.emplace_back(k, v);
  o.target = target_;
  o.resume_command = next;
  return o;
}

RunOutcome Trainer::run() {
  started_ = std::chrono::steady_clock::now();
  install_signal_handlers();
  // Writing to a closed pipe (run --json | head) fails the write instead of
  // killing the run half-way through a checkpoint.
  std::signal(SIGPIPE, SIG_IGN);
  // A checkpoint that cannot be resumed is refused before anything in the
  // run directory is touched: its record stays the earlier run's.
  std::string resume_from;
  if (!opt_.resume.empty())
    if (Status f = check_resume(resume_from); !f) return refuse(f);
  if (Status f = join_world(); !f) return refuse(f);
  if (Status f = resolve(); !f) return refuse(f);
  if (Status f = open_outputs(); !f) return refuse(f);
  Status f = compile();
  // Timed for the start-up's breakdown (bench/startup.py): on a GPU the
  // buffers' allocation and the init function are a visible part of it.
  log::Stopwatch allocating;
  if (f) f = allocate();
  if (f) log::info("memory: buffers allocated in {:.1f} ms", allocating.ms());
  log::Stopwatch initialising;
  if (f) f = initialise();
  if (f)
    log::info("init: parameters and optimizer state initialised in {:.1f} ms", initialising.ms());
  if (f && !opt_.resume.empty()) {
    if (resume_from.empty()) {
      f = start_loader(std::nullopt);
      (void)events_->open(device_ ? open_metadata() : json::object());
      (void)events_->warning(
          std::nullopt, "W-RESUME-NONE",
          "--resume latest: no checkpoint yet in " + opt_.run_dir + "; starting from step 0");
    } else {
      f = resume(resume_from);
      json resumed_from = {{"step", step_}, {"checkpoint", resume_from}};
      if (opt_.allow_changed) resumed_from["allow_changed"] = true;
      if (resumed_world_ != world().size) resumed_from["world_size"] = resumed_world_;
      if (f) (void)events_->open(open_metadata(), resumed_from);
      if (f && resumed_world_ != world().size) {
        const int64_t per_rank =
            run_.loaders.find(run_.train_loader)->options.batch * run_.run.microbatches;
        (void)events_->warning(step_, "W-WORLD-CHANGED",
                               "the checkpoint was taken on " + std::to_string(resumed_world_) +
                                   " ranks (effective batch " +
                                   std::to_string(per_rank * resumed_world_) + "); this run has " +
                                   std::to_string(world().size) + " (effective batch " +
                                   std::to_string(per_rank * world().size) +
                                   "): the loader goes on from the same example");
      }
    }
  } else if (f) {
    f = start_loader(std::nullopt);
    if (f) (void)events_->open(open_metadata());
  }
  if (f) f = agree_on_start();
  if (!f) return finish(RunEnd::Failed, rank_failure(f));
  if (run_.run.precision == "tf32" && device_->name() == "cpu")
    (void)events_->warning(std::nullopt, "W-PRECISION",
                           ":precision :tf32 asks for TF32 matrix products; the cpu device "
                           "computes them in f32");
  (void)status_->set_state("running");
  if (!run_.stages.empty())
    if (Status e = enter_stage(stage_); !e) return finish(RunEnd::Failed, e);
  if (step_ == 0)
    for (const spec::EvalPass& pass : run_.evals)
      if (pass.decl.at_start)
        if (Status e = evaluate(pass); !e) return finish(RunEnd::Failed, e);

  bool stop = false;
  while (step_ < steps_ && !stop) {
    // At a world above one the ranks stop together (reduce_step).
    if (!world().several() && g_stop_signals.load() > 0) break;
    if (Status e = check_stage_end(); !e) return finish(RunEnd::Failed, e);
    auto t0 = std::chrono::steady_clock::now();
    Scalars s;
    bool nonfinite = false;
    std::string what;
    if (Status e = train_step(s, nonfinite, what); !e)
      return finish(RunEnd::Failed, rank_failure(e));
    if (nonfinite) {
      if (!run_.run.skip_nonfinite) {
        return finish(RunEnd::NonFinite,
                      fail("E-NONFINITE", "step " + std::to_string(step_) + ": " + what +
                                              " is not finite; the parameters keep their values "
                                              "from before the step"));
      }
      ++skips_in_row_, ++skipped_total_;
      (void)events_->warning(
          step_, "W-NONFINITE-SKIP",
          "step " + std::to_string(step_) + ": " + what + " is not finite; the step was skipped");
      if (skips_in_row_ > run_.run.max_skips)
        return finish(RunEnd::NonFinite, fail("E-NONFINITE", std::to_string(skips_in_row_) +
                                                                 " non-finite steps in a row"));
    } else {
      skips_in_row_ = 0;
      if (diagnostics_due())
        if (Status e = run_diagnostics(); !e) return finish(RunEnd::Failed, e);
      for (auto& [path, slot] : params_)
        if (slot.spare.handle()) slot.swap();
      for (auto& [name, slot] : states_)
        if (slot.spare.handle()) slot.swap();
    }
    double ms = now_ms(t0);
    step_times_.total_ms += ms, ++step_times_.steps;
    interval_ms_ += ms;
    interval_flops_ += step_flops_[last_train_fn_];
    ++interval_steps_;
    ++step_;
    if (!nonfinite && (step_ % run_.run.log_every == 0 || step_ == steps_ || step_ == 1))
      report_step(s, ms);
    if (Status e = after_step(stop); !e) return finish(RunEnd::Failed, e);
    if (world().several() && stop_agreed_) break;
  }
  int signals = g_stop_signals.load();
  if (world().several()) signals = stop_agreed_ ? std::max(signals, 1) : 0;
  if (signals > 0) {
    bool term = g_first_signal.load() == SIGTERM;
    std::string name = term ? "SIGTERM" : "SIGINT";
    if (signals > 1) {
      (void)events_->signal(step_, name, "stop-now");
      return finish(RunEnd::Interrupted);
    }
    (void)events_->signal(step_, name, "checkpoint-and-stop");
    if (Status e = checkpoint(); !e) return finish(RunEnd::Failed, e);
    if (g_stop_signals.load() > 1) return finish(RunEnd::Interrupted);
    return finish(term ? RunEnd::Preempted : RunEnd::Stopped);
  }
  if (step_ == steps_ || stop) {
    if (stop)
      for (const spec::EvalPass& pass : run_.evals) {
        auto last = last_eval_step_.find(pass.decl.name);
        bool done_here = last != last_eval_step_.end() && last->second == step_;
        if (pass.decl.at_end && !done_here)
          if (Status e = evaluate(pass); !e) return finish(RunEnd::Failed, e);
      }
    if (run_.run.checkpoint_at_end)
      if (Status e = checkpoint(); !e) return finish(RunEnd::Failed, e);
  }
  return finish(RunEnd::Finished);
}

RunOutcome train(const spec::RunSpec& run, const RunOptions& options, host::PluginHost& plugins) {
  Trainer t(run, options, plugins);
  return t.run();
}

}  // namespace sexpgpu::train
