// sexpgpu explain FILE [selection] [--device D] [--json]: what the compiler
// made of a run file (docs/explain.md): the selection, loaders, parameters,
// optimizer groups, FLOPs per step and per token, and memory from the core's
// own plan (ir/cost.h), which needs no device. With --device, also each
// function of the step as that device's plugin lowers it.
//
// The report is built once as JSON; the text form is rendered from it, so
// the two always hold the same content.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/explain_report.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "data/loader.h"
#include "host/plugin_host.h"
#include "ir/cost.h"
#include "ir/json.h"
#include "runfile/compile.h"
#include "runfile/loaders.h"
#include "train/device.h"
#include "train/memory_plan.h"
#include "train/trainer.h"

namespace sexpgpu::cli {

using json = nlohmann::ordered_json;

namespace {

json shape_json(const ir::Shape& s) {
  return json(std::vector<int64_t>(s.begin(), s.end()));
}

// FLOPs are doubles (cost.h); whole numbers print as integers.
json flops_json(double f) {
  return f < 9.0e18 ? json(int64_t(std::llround(f))) : json(f);
}

// ---- the report as JSON ----------------------------------------------------------------------

json selection_json(lisp::Interp& in, const select::Selection& sel, const std::string& stem) {
  json knobs = json::array();
  for (const select::Knob& k : sel.knobs)
    knobs.push_back({{"name", lower(k.name->name)},
                     {"value", in.show(k.value)},
                     {"default", in.show(k.default_value)}});
  return {{"slug", sel.slug(in, stem)}, {"knobs", knobs}};
}

json loader_json(const runfile::LoaderDecl& l, const runfile::CompiledRun& run) {
  json fields = json::array();
  for (const runfile::BatchFieldType& f : l.batch_types())
    fields.push_back({{"name", f.name},
                      {"dtype", ir::ir_name(f.type.dtype)},
                      {"shape", shape_json(f.type.shape)}});
  ir::Result<data::Loader> made = data::Loader::create(l.source, l.options);
  std::optional<data::Loader> loader;
  if (made) loader.emplace(std::move(made).value());
  json evals = json::array();
  // The batch shapes its functions are compiled for (compile.h): the train
  // step's for the train loader, else the first pass's that reads it.
  const std::vector<runfile::SizedFunction>* sized =
      l.name == run.train_loader ? &run.train_fns : nullptr;
  for (const runfile::EvalPass& e : run.evals)
    if (e.decl.loader == l.name) {
      evals.push_back(e.decl.name);
      if (!sized) sized = &e.fns;
    }
  json compiled = json::array();
  if (sized)
    for (const runfile::SizedFunction& f : *sized)
      compiled.push_back({{"function", f.fn}, {"rows", f.rows}, {"seq_len", f.seq_len}});
  const int64_t examples = loader ? loader->examples_per_epoch() : 0;
  // Each curriculum stage: the loader's batch, window length and epoch in it.
  json stages = json::array();
  for (const runfile::StageInfo& s : run.stages) {
    data::StageOverrides o = l.overrides_for(s.name);
    json stage = {{"stage", s.name}, {"batch", *o.batch}};
    if (o.seq_len) stage["seq_len"] = *o.seq_len;
    if (loader && loader->apply_stage(o)) {
      stage["examples"] = loader->examples_per_epoch();
      stage["batches_per_epoch"] = loader->batches_per_epoch();
    }
    stages.push_back(stage);
  }
  return {{"name", l.name},
          {"source", l.source->description()},
          {"batch", l.options.batch},
          {"shuffle", l.options.shuffle},
          {"drop_last", l.options.drop_last},
          {"split", {l.options.split_from, l.options.split_to}},
          {"examples", examples},
          {"batches_per_epoch", l.batches_per_epoch},
          {"last_batch", l.last_batch_size},
          {"tokens_per_example", l.source->tokens_per_example()},
          {"fields", fields},
          {"stages", stages},
          {"compiled", compiled},
          {"train", l.name == run.train_loader},
          {"evals", evals}};
}

std::pair<json, json> parameters_json(const runfile::CompiledRun& run) {
  json list = json::array();
  int64_t count = 0, trainable = 0, bytes = 0;
  for (const runfile::ParamEntry& p : run.params) {
    int64_t n = p.type.shape.numel().value_or(0);
    list.push_back({{"path", p.path},
                    {"shape", shape_json(p.type.shape)},
                    {"dtype", ir::ir_name(p.type.dtype)},
                    {"count", n},
                    {"bytes", ir::type_bytes(p.type)},
                    {"trainable", p.trainable},
                    {"init", p.init},
                    {"group", p.group},
                    {"tied", p.tied}});
    count += n;
    bytes += ir::type_bytes(p.type);
    if (p.trainable) trainable += n;
  }
  json totals = {{"tensors", run.params.size()},
                 {"count", count},
                 {"trainable", trainable},
                 {"frozen", count - trainable},
                 {"bytes", bytes}};
  return {list, totals};
}

json groups_json(const runfile::CompiledRun& run) {
  json groups = json::array();
  for (const runfile::GroupEntry& g : run.groups)
    groups.push_back({{"name", g.name},
                      {"optimizer", g.optimizer},
                      {"members", g.params.size()},
                      {"params", g.params},
                      {"series", g.series}});
  return groups;
}

json functions_json(const ir::Module& module) {
  json list = json::array();
  for (const ir::Function& fn : module.functions) {
    ir::Cost c = ir::function_cost(fn);
    ir::MemoryUse m = ir::plan_memory(fn);
    // Gradient buckets (devices.md): the all_reduce ops of data parallel.
    int64_t buckets = std::count_if(fn.nodes.begin(), fn.nodes.end(),
                                    [](const ir::Node& n) { return n.op == ir::Op::AllReduce; });
    list.push_back({{"name", fn.name},
                    {"nodes", fn.nodes.size()},
                    {"buckets", buckets},
                    {"flops", flops_json(c.flops)},
                    {"bytes_read", c.bytes_read},
                    {"bytes_written", c.bytes_written},
                    {"input_bytes", m.input_bytes},
                    {"param_bytes", m.param_bytes},
                    {"output_bytes", m.output_bytes},
                    {"intermediate_peak", m.intermediate_peak}});
  }
  return list;
}

// FLOPs per step: every microbatch's forward and backward (split where the
// staged train_step's gradient nodes begin), the gradient sums between
// microbatches, one update.
json flops_per_step(const runfile::CompiledRun& run, int64_t tokens_per_example) {
  const int64_t micro = run.run.microbatches;
  const spec::StepFlops f = run.full_batch_flops();
  const double forward = f.forward, backward = f.backward, acc = f.accumulate, upd = f.update;
  const double total = f.total();
  const int64_t examples = run.train_fns.front().rows * micro;
  const int64_t tokens = examples * tokens_per_example;
  return {{"forward", flops_json(forward)},
          {"backward", flops_json(backward)},
          {"accumulate", flops_json(acc)},
          {"update", flops_json(upd)},
          {"total", flops_json(total)},
          {"per_example", examples ? total / double(examples) : 0.0},
          {"tokens_per_step", tokens},
          {"per_token", tokens ? json(total / double(tokens)) : json(nullptr)},
          {"run", flops_json(total * double(run.steps))}};
}

// Memory from the core's plan (train/memory_plan.h): what the loop keeps
// between steps and the largest arenas of its functions.
json memory_json(const runfile::CompiledRun& run) {
  const train::RunMemory m = train::plan_run_memory(run);
  return {{"step_function", m.step_function},
          {"parameters", m.parameters},
          {"gradients", m.gradients},
          {"optimizer_state", m.optimizer_state},
          {"update_outputs", m.update_outputs},
          {"batch", m.batch},
          {"activations", m.activations},
          {"workspace", m.workspace},
          {"workspace_function", m.workspace_function},
          {"total", m.total()}};
}

}  // namespace

json explain_report(runfile::Session& s, const std::string& file) {
  lisp::Interp& in = *s.interp;
  const runfile::CompiledRun& run = *s.compiled;
  const spec::Loaders& loaders = run.loaders;
  const runfile::LoaderDecl* train = loaders.find(run.train_loader);
  json doc;
  doc["file"] = file;
  doc["selection"] = selection_json(in, s.selection(), std::filesystem::path(file).stem().string());
  doc["loaders"] = json::array();
  for (const runfile::LoaderDecl& l : loaders.decls) doc["loaders"].push_back(loader_json(l, run));
  auto [params, totals] = parameters_json(run);
  doc["parameters"] = params;
  doc["parameter_totals"] = totals;
  doc["groups"] = groups_json(run);
  const int64_t rows = run.train_fns.front().rows;
  doc["training"] = {{"steps", run.steps},
                     {"batch", rows},
                     {"microbatches", run.run.microbatches},
                     {"effective_batch", rows * run.run.microbatches}};
  doc["flops"] = flops_per_step(run, train ? train->source->tokens_per_example() : 0);
  doc["functions"] = functions_json(run.module);
  doc["memory"] = memory_json(run);
  return doc;
}

namespace {

// ---- the lowering report of a device plugin ---------------------------------------------------

// Each function of the step as device `spec` ("cuda", "cuda:1") compiles it,
// into doc["lowering"]. Exit code kUsage when the plugin is not loaded,
// kRunFailed when it cannot open or compile (`why` says why, E-DEVICE);
// kOk otherwise.
int add_lowering(json& doc, const runfile::CompiledRun& run, const std::string& spec,
                 std::string& why) {
  size_t colon = spec.find(':');
  std::string name = spec.substr(0, colon);
  // "plan": a GPU plugin on a machine without its GPU still plans (for the
  // GPU it assumes) rather than refusing; the precision decides tf32.
  json options = {{"plan", true}, {"precision", run.run.precision}};
  if (colon != std::string::npos) {
    std::optional<int> ordinal = train::device_ordinal(spec);
    if (!ordinal) {
      why = "--device " + spec + ": write NAME or NAME:N, N from 0 to " +
            std::to_string(train::kMaxOrdinal);
      return kUsage;
    }
    options["ordinal"] = *ordinal;
  }
  host::PluginHost plugins(plugin_search_path());
  const host::PluginRecord* record = plugins.find(name);
  if (!record || !record->loaded || !plugins.device(name)) {
    why = "the lowering report comes from the " + name + " device plugin's compile, and " +
          (!record           ? "no plugin of that name is on the plugin path"
           : !record->loaded ? "it did not load: " + record->reason
                             : "that plugin is not a device") +
          "\n  fix: `sexpgpu doctor` lists the plugins found and why each did or did not "
          "load; leave out --device for the report without it";
    return kUsage;
  }
  ir::Result<std::unique_ptr<train::Device>> device = train::Device::open(plugins, name, options);
  if (!device) {
    why = device.error();
    return kRunFailed;
  }
  const std::string ir_json = ir::to_json(run.module).dump();
  json lowering = {{"device", spec}, {"functions", json::array()}};
  int64_t in_place_bytes = 0;  // update outputs the device writes over their inputs
  for (const std::string& fn_name :
       {run.train_fns.front().fn, std::string("accumulate"), std::string("update")}) {
    const ir::Function* fn = run.module.find(fn_name);
    if (!fn) continue;
    auto program = (*device)->compile(ir_json, *fn);
    if (!program) {
      why = program.error();
      return kRunFailed;
    }
    if (fn_name == "update") {
      std::vector<int64_t> over = train::update_in_place(**device, **program);
      for (size_t j = 0; j < over.size(); ++j)
        if (over[j] >= 0) in_place_bytes += ir::type_bytes(fn->type(fn->outputs[j].node));
    }
    json report = json::parse((*program)->report(), nullptr, false);
    if (report.is_discarded()) report = (*program)->report();
    lowering["functions"].push_back({{"function", fn_name},
                                     {"memory_plan_bytes", (*program)->plan_bytes()},
                                     {"report", report}});
  }
  // The device's peak as a run measures it (memory-bytes): every function's
  // plan at once (each is allocated at compile) and the trainer's buffers,
  // where the update outputs it writes in place need none of their own.
  const json& m = doc["memory"];
  int64_t update_outputs = m["update_outputs"].get<int64_t>() - in_place_bytes;
  int64_t peak = m["parameters"].get<int64_t>() + m["gradients"].get<int64_t>() +
                 m["optimizer_state"].get<int64_t>() + update_outputs + m["batch"].get<int64_t>();
  for (const json& f : lowering["functions"]) peak += f["memory_plan_bytes"].get<int64_t>();
  lowering["peak_bytes"] = peak;
  lowering["update_outputs_bytes"] = update_outputs;
  doc["lowering"] = lowering;
  return kOk;
}

// ---- the text form ----------------------------------------------------------------------------

std::string commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string scaled(double v, double base, const char* const* units, int n_units, const char* sep) {
  int u = 0;
  while (u + 1 < n_units && std::fabs(v) >= base) v /= base, ++u;
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f%s%s", v, sep, units[0]);
  else
    std::snprintf(buf, sizeof buf, "%.*f%s%s", v >= 100 ? 1 : v >= 10 ? 2 : 3, v, sep, units[u]);
  return buf;
}

}  // namespace

std::string bytes_text(int64_t b) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(double(b), 1024, units, 6, " ");
}

std::string flops_text(const json& f) {
  if (f.is_null()) return "-";
  static const char* const units[] = {"", "k", "M", "G", "T", "P", "E"};
  return scaled(f.get<double>(), 1000, units, 7, " ");
}

namespace {

// Characters as a terminal shows them: UTF-8 continuation bytes add none
// (init texts hold a "±").
size_t display_width(const std::string& s) {
  return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

// Columns padded to their widest cell, two spaces apart, each row indented.
void print_table(std::ostream& os, const std::vector<std::vector<std::string>>& rows,
                 const std::string& indent) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (c >= width.size()) width.push_back(0);
      width[c] = std::max(width[c], display_width(row[c]));
    }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c)
      line += row[c] +
              (c + 1 < row.size() ? std::string(width[c] - display_width(row[c]) + 2, ' ') : "");
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
  }
}

namespace {

std::string shape_text(const json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(int64_t(shape[i]));
  return s + "]";
}

std::string joined(const json& list, const char* sep) {
  std::string out;
  for (const auto& v : list) out += (out.empty() ? "" : sep) + v.get<std::string>();
  return out;
}

void print_selection(std::ostream& os, const json& sel) {
  os << "selection: " << sel["slug"].get<std::string>() << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& k : sel["knobs"]) {
    std::string value = k["value"];
    if (k["value"] != k["default"]) value += "  (default " + k["default"].get<std::string>() + ")";
    rows.push_back({k["name"], "= " + value});
  }
  print_table(os, rows, "  ");
}

void print_loaders(std::ostream& os, const json& loaders) {
  os << "\nloaders:\n";
  for (const auto& l : loaders) {
    os << "  " << l["name"].get<std::string>() << ": " << l["source"].get<std::string>() << "\n";
    os << "    " << commas(l["examples"]) << " examples, batch " << commas(l["batch"]) << ", "
       << commas(l["batches_per_epoch"]) << " batches per epoch";
    if (l["last_batch"] != l["batch"]) os << " (the last of " << commas(l["last_batch"]) << ")";
    if (int64_t t = l["tokens_per_example"]; t > 0)
      os << ", " << commas(t) << " tokens per example";
    os << "\n    fields:";
    for (const auto& f : l["fields"])
      os << " " << f["name"].get<std::string>() << " " << f["dtype"].get<std::string>()
         << shape_text(f["shape"]);
    for (const auto& s : l["stages"]) {
      os << "\n    stage " << s["stage"].get<std::string>() << ": batch " << commas(s["batch"]);
      if (s.contains("seq_len")) os << ", seq-len " << commas(s["seq_len"]);
      if (s.contains("examples"))
        os << ", " << commas(s["examples"]) << " examples, " << commas(s["batches_per_epoch"])
           << " batches per epoch";
    }
    if (l["compiled"].size() > 1) {
      os << "\n    compiled for batches of:";
      for (const auto& f : l["compiled"]) {
        os << " " << commas(f["rows"]);
        if (int64_t n = f["seq_len"]; n > 0 && n != l["tokens_per_example"].get<int64_t>())
          os << "x" << commas(n);
      }
    }
    std::vector<std::string> users;
    if (l["train"].get<bool>()) users.push_back("training");
    for (const auto& e : l["evals"]) users.push_back("eval " + e.get<std::string>());
    os << "\n    used by: ";
    for (size_t i = 0; i < users.size(); ++i) os << (i ? ", " : "") << users[i];
    os << (users.empty() ? "nothing\n" : "\n");
  }
}

void print_parameters(std::ostream& os, const json& params, const json& totals) {
  os << "\nparameters:\n";
  std::vector<std::vector<std::string>> rows = {
      {"path", "shape", "dtype", "count", "init", "group", "tied"}};
  for (const auto& p : params)
    rows.push_back({p["path"], shape_text(p["shape"]), p["dtype"], commas(p["count"]), p["init"],
                    p["trainable"].get<bool>() ? p["group"].get<std::string>() : "(frozen)",
                    joined(p["tied"], ", ")});
  print_table(os, rows, "  ");
  os << "  total " << commas(totals["count"]) << " in " << totals["tensors"].get<size_t>()
     << " tensors (" << commas(totals["trainable"]) << " trainable, " << commas(totals["frozen"])
     << " frozen), " << bytes_text(totals["bytes"]) << "\n";
}

void print_groups(std::ostream& os, const json& groups) {
  os << "\noptimizer groups:\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : groups) {
    size_t n = g["members"];
    std::string series = g["series"].empty() ? "" : "series: " + joined(g["series"], ", ");
    rows.push_back({g["name"], g["optimizer"],
                    std::to_string(n) + (n == 1 ? " parameter" : " parameters"), series});
  }
  print_table(os, rows, "  ");
}

void print_flops(std::ostream& os, const json& t, const json& f) {
  os << "\ntraining: " << commas(t["steps"]) << " steps, batch " << commas(t["batch"]) << " x "
     << commas(t["microbatches"]) << " microbatches = effective batch "
     << commas(t["effective_batch"]) << " (per device)";
  if (int64_t tokens = f["tokens_per_step"]; tokens > 0)
    os << ", " << commas(tokens) << " tokens per step";
  os << "\n\nFLOPs per step:\n";
  std::vector<std::vector<std::string>> rows = {{"forward", flops_text(f["forward"])},
                                                {"backward", flops_text(f["backward"])}};
  if (f["accumulate"].get<double>() > 0)
    rows.push_back({"accumulate", flops_text(f["accumulate"])});
  rows.push_back({"update", flops_text(f["update"])});
  rows.push_back({"total", flops_text(f["total"])});
  rows.push_back({"per example", flops_text(f["per_example"])});
  if (!f["per_token"].is_null()) rows.push_back({"per token", flops_text(f["per_token"])});
  rows.push_back({"whole run", flops_text(f["run"])});
  print_table(os, rows, "  ");
}

void print_functions(std::ostream& os, const json& fns) {
  os << "\nfunctions:\n";
  std::vector<std::vector<std::string>> rows = {
      {"name", "nodes", "FLOPs", "read", "written", "inputs", "params", "outputs", "peak"}};
  for (const auto& f : fns)
    rows.push_back({f["name"], commas(f["nodes"]), flops_text(f["flops"]),
                    bytes_text(f["bytes_read"]), bytes_text(f["bytes_written"]),
                    bytes_text(f["input_bytes"]), bytes_text(f["param_bytes"]),
                    bytes_text(f["output_bytes"]), bytes_text(f["intermediate_peak"])});
  print_table(os, rows, "  ");
}

void print_memory(std::ostream& os, const json& m) {
  os << "\nmemory (the core's plan, no device):\n";
  std::string workspace = m["workspace_function"].get<std::string>();
  std::vector<std::vector<std::string>> rows = {
      {"parameters", bytes_text(m["parameters"])},
      {"gradients", bytes_text(m["gradients"])},
      {"optimizer state", bytes_text(m["optimizer_state"])},
      {"update outputs", bytes_text(m["update_outputs"]), "new parameters and states"},
      {"batch", bytes_text(m["batch"]), "the step's inputs"},
      {"activations", bytes_text(m["activations"]),
       "the step's intermediates at their peak" +
           (m["step_function"] != "train_step" ? " (" + m["step_function"].get<std::string>() + ")"
                                               : std::string())},
      {"workspace", bytes_text(m["workspace"]), workspace.empty() ? "" : "for " + workspace},
      {"total", bytes_text(m["total"])}};
  print_table(os, rows, "  ");
}

// A report with per-step roofline times (the cuda plugin's) as a table, one
// row per kernel or library call; any other report as its JSON.
void print_kernel_table(std::ostream& os, const json& report) {
  char total[160];
  std::snprintf(total, sizeof total, "%zu kernels, %s FLOP, %s moved, roofline %.1f us on %s",
                report["steps"].size(), flops_text(report["flops"]).c_str(),
                bytes_text(int64_t(report["bytes"].get<double>())).c_str(),
                report["roofline_us"].get<double>(),
                report.value("roofline_gpu", std::string("?")).c_str());
  os << "    " << total << "\n";
  std::vector<std::vector<std::string>> rows = {{"#", "KERNEL", "OPS", "FLOP", "BYTES", "US"}};
  size_t k = 0;
  for (const auto& st : report["steps"]) {
    std::string ops;
    for (const auto& o : st["ops"]) ops += (ops.empty() ? "" : ",") + o.get<std::string>();
    if (ops.size() > 40) ops = ops.substr(0, 37) + "...";
    char us[32];
    std::snprintf(us, sizeof us, "%.2f", st["roofline_us"].get<double>());
    rows.push_back({std::to_string(k++), st["kernel"].get<std::string>(), ops.empty() ? "-" : ops,
                    flops_text(st["flops"]), bytes_text(int64_t(st["bytes"].get<double>())), us});
  }
  print_table(os, rows, "    ");
}

void print_lowering(std::ostream& os, const json& lowering) {
  os << "\nlowering on " << lowering["device"].get<std::string>() << ":\n";
  os << "  peak " << bytes_text(lowering["peak_bytes"])
     << ": the functions' memory plans, parameters, gradients, optimizer state, update outputs "
        "and the batch\n";
  os << "  update outputs " << bytes_text(lowering["update_outputs_bytes"])
     << ": what the update writes beside its inputs (its scalars; parameters and states not "
        "updated in place)\n";
  for (const auto& f : lowering["functions"]) {
    os << "  " << f["function"].get<std::string>() << ": memory plan "
       << bytes_text(f["memory_plan_bytes"]) << "\n";
    const json& r = f["report"];
    if (r.is_object() && r.contains("roofline_us") && r.contains("steps")) {
      print_kernel_table(os, r);
      continue;
    }
    std::string report = r.dump(2);
    size_t start = 0;
    while (start < report.size()) {
      size_t end = report.find('\n', start);
      if (end == std::string::npos) end = report.size();
      os << "    " << report.substr(start, end - start) << "\n";
      start = end + 1;
    }
  }
}

void print_report(std::ostream& os, const json& doc) {
  print_selection(os, doc["selection"]);
  print_loaders(os, doc["loaders"]);
  print_parameters(os, doc["parameters"], doc["parameter_totals"]);
  print_groups(os, doc["groups"]);
  print_flops(os, doc["training"], doc["flops"]);
  print_functions(os, doc["functions"]);
  print_memory(os, doc["memory"]);
  if (doc.contains("lowering")) print_lowering(os, doc["lowering"]);
}

}  // namespace

void add_explain(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, device;
    bool json = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "what the compiler made of a run file: parameters, FLOPs, memory");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_option("--device", opts->device,
                  "also the lowering report of this device's plugin (cuda, cuda:N, cpu)");
  cmd->add_flag("--json", opts->json, "one JSON document");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    // With --json a failure is the diagnostics list check --json gives, on
    // standard output (and the human form on standard error, as always).
    auto fail_json = [&](const nlohmann::json& diagnostics) {
      if (opts->json) std::cout << diagnostics.dump(2) << "\n";
    };
    if (!settings_or_report("explain", exit_code)) return;
    std::unique_ptr<runfile::Session> s =
        opts->limits.load(opts->file, "explain", exit_code, true, true, lazy_reducer_plugins());
    if (!s) {
      fail_json(unreadable_file_json(opts->file));
      return;
    }
    if (s->sink.error_count() > 0 || !s->is_run_file || !s->compiled) {
      if (s->sink.error_count() == 0) {
        std::string message = opts->file + " is not a run file (no defrun)";
        std::cerr << "sexpgpu explain: " << message << "\n";
        fail_json(
            nlohmann::json::array({bare_diagnostic("E-CONTRACT-MISSING", message, opts->file)}));
      } else {
        fail_json(diagnostics_json(*s));
      }
      exit_code = kFileErrors;
      (void)s.release();
      return;
    }
    json doc = explain_report(*s, opts->file);
    exit_code = kOk;
    std::string why;
    if (!opts->device.empty()) exit_code = add_lowering(doc, *s->compiled, opts->device, why);
    if (exit_code != kOk) {
      std::cerr << "sexpgpu explain: " << why << "\n";
      fail_json(
          nlohmann::json::array({bare_diagnostic("E-DEVICE", why.substr(0, why.find('\n')))}));
    } else if (opts->json) {
      std::cout << doc.dump(2) << "\n";
    } else {
      print_report(std::cout, doc);
    }
    (void)s.release();  // the process ends next; the OS frees the heap
  });
}

}  // namespace sexpgpu::cli
