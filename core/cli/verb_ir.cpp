// sexpgpu ir FILE [--fn NAME] [--stage NAME] [--list] [--json] [--no-opt]:
// the IR the file stages, as text (tensors.md, "IR printed form") or as the
// JSON document that crosses the device ABI: for a run file, the functions
// the training loop runs (runfile/compile.h); for other files, those it
// stages with `stage-function` (docs/explain.md). --fn names any function
// --list lists (the diagnostics' included); --stage picks a function's
// variant for a curriculum stage's batch.
#include <algorithm>
#include <iostream>

#include "cli/settings.h"
#include "cli/verbs.h"
#include "ir/json.h"
#include "ir/passes.h"
#include "ir/print.h"
#include "runfile/compile.h"
#include "runfile/contract.h"
#include "runfile/session.h"
#include "stage/stager.h"

namespace sexpgpu::cli {

namespace {

// What a staged function is, by its name (spec/run_spec.h lists them).
std::string kind_of(const std::string& name, bool run_file) {
  if (!run_file) return "staged";
  auto base = name.substr(0, name.find('@'));
  if (base == "train_step") return "train";
  if (base.starts_with("eval:")) return "eval";
  if (base.starts_with("until:")) return "stage-condition";
  if (base.starts_with("diag:")) return "diagnostic";
  return base;  // init, update, accumulate
}

// The stages that run `fn` as their own batch's function ("" for none).
std::vector<std::string> stages_running(const runfile::CompiledRun* run, const std::string& fn) {
  std::vector<std::string> out;
  if (!run) return out;
  for (const spec::StageInfo& s : run->stages)
    for (const auto& [base, variant] : s.fns)
      if (variant == fn) out.push_back(s.name);
  return out;
}

struct Listed {
  const ir::Function* fn;
  std::string kind;
};

nlohmann::json list_json(const std::vector<Listed>& fns, const runfile::CompiledRun* run) {
  nlohmann::json out = nlohmann::json::array();
  for (const Listed& l : fns) {
    nlohmann::json inputs = nlohmann::json::array();
    int64_t params = 0;
    for (ir::NodeId id : l.fn->inputs) {
      const ir::Node& n = l.fn->node(id);
      if (n.op == ir::Op::Param) {
        ++params;
        continue;
      }
      inputs.push_back({{"name", n.attrs.name.value_or("")}, {"type", n.type.to_string()}});
    }
    out.push_back({{"name", l.fn->name},
                   {"kind", l.kind},
                   {"stages", stages_running(run, l.fn->name)},
                   {"inputs", inputs},
                   {"params", params},
                   {"outputs", l.fn->outputs.size()}});
  }
  return out;
}

// One line per function: name, kind, the stages it is the batch of, the
// batch inputs' types, and how many other inputs and parameters it takes.
void print_list(const std::vector<Listed>& fns, const runfile::CompiledRun* run) {
  size_t width = 0;
  for (const Listed& l : fns) width = std::max(width, l.fn->name.size());
  for (const Listed& l : fns) {
    std::string line = l.fn->name + std::string(width + 2 - l.fn->name.size(), ' ') + l.kind;
    std::vector<std::string> stages = stages_running(run, l.fn->name);
    if (!stages.empty()) {
      line += " (stage";
      for (const std::string& s : stages) line += " " + s;
      line += ")";
    }
    int64_t params = 0, others = 0;
    std::string batch;
    for (ir::NodeId id : l.fn->inputs) {
      const ir::Node& n = l.fn->node(id);
      std::string name = n.attrs.name.value_or("");
      if (n.op == ir::Op::Param)
        ++params;
      else if (name.starts_with("batch:"))
        batch += " " + name.substr(6) + ":" + n.type.to_string();
      else
        ++others;
    }
    line += " |" + batch;
    if (others) line += " +" + std::to_string(others) + " inputs";
    if (params) line += " +" + std::to_string(params) + " params";
    std::cout << line << "\n";
  }
}

// E-STAGE-UNKNOWN at the file's defcurriculum.
void report_stage(runfile::Session& s, const std::string& message, const std::string& fix) {
  Diagnostic d;
  d.code = "E-STAGE-UNKNOWN";
  d.severity = Severity::Error;
  d.message = message;
  d.fix = fix;
  const runfile::Contract& contract = runfile::contract_of(*s.interp);
  d.span = contract.curriculum_span;  // none without a defcurriculum: the message names the file
  std::cerr << render_human(s.sources, d, use_color_stderr());
}

}  // namespace

void add_ir(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, fn, stage;
    bool json = false, no_opt = false, list = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("ir", "print the IR a file stages (text or --json)");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_option("--fn", opts->fn, "only this function (any --list names)");
  cmd->add_option("--stage", opts->stage,
                  "the function as curriculum stage NAME compiles it (its :batch and :seq-len; "
                  "the train step unless --fn names another)");
  cmd->add_flag("--list", opts->list,
                "list the staged functions (diagnostics included): name, kind, stages, inputs");
  cmd->add_flag("--json", opts->json, "the JSON document devices receive");
  cmd->add_flag("--no-opt", opts->no_opt, "before the passes (folding, CSE, dead code, fusion)");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    if (!settings_or_report("ir", exit_code)) return;
    std::unique_ptr<runfile::Session> s =
        opts->limits.load(opts->file, "ir", exit_code, true, true, lazy_reducer_plugins());
    if (!s) {
      if (opts->json) std::cout << unreadable_file_json(opts->file).dump(2) << "\n";
      return;
    }
    // The process ends after the verb; the OS frees the heap.
    struct Leak {
      std::unique_ptr<runfile::Session>& s;
      ~Leak() { (void)s.release(); }
    } leak{s};
    if (s->sink.error_count()) {
      // With --json a file with errors is check --json's list, as explain gives it.
      if (opts->json) std::cout << diagnostics_json(*s).dump(2) << "\n";
      exit_code = kFileErrors;
      return;
    }
    const runfile::CompiledRun* run = s->compiled.get();
    const spec::DiagnosticPlan* diag = run ? run->diagnostics.get() : nullptr;
    // The scratch function of top-level tensors is not part of the program.
    ir::Module module = stage::stager_of(*s->interp).module();
    std::erase_if(module.functions, [](const ir::Function& f) { return f.name == "toplevel"; });

    if (opts->list) {
      std::vector<Listed> fns;
      for (const ir::Function& f : module.functions)
        fns.push_back({&f, kind_of(f.name, s->is_run_file)});
      if (diag)
        for (const ir::Function& f : diag->module.functions) fns.push_back({&f, "diagnostic"});
      if (opts->json)
        std::cout << list_json(fns, run).dump(1) << "\n";
      else
        print_list(fns, run);
      exit_code = kOk;
      return;
    }

    std::string want = opts->fn;
    if (!opts->stage.empty()) {
      std::string name = opts->stage.starts_with(':') ? opts->stage.substr(1) : opts->stage;
      if (!run || run->stages.empty()) {
        report_stage(*s,
                     "--stage " + name + ": " + opts->file + " has no defcurriculum, so no stages",
                     "leave out --stage: the train step is train_step (sexpgpu ir FILE --list "
                     "lists every function)");
        exit_code = kFileErrors;
        return;
      }
      auto stage = std::find_if(run->stages.begin(), run->stages.end(),
                                [&](const spec::StageInfo& st) { return st.name == name; });
      if (stage == run->stages.end()) {
        std::string names;
        for (const spec::StageInfo& st : run->stages)
          names += (names.empty() ? "" : ", ") + st.name;
        report_stage(*s,
                     "--stage " + name + ": the curriculum has no stage " + name +
                         "; its stages are " + names,
                     "name one of the stages of the defcurriculum");
        exit_code = kFileErrors;
        return;
      }
      // A base with a variant per stage (train_step, eval:PASS) gives the
      // stage's; one sized like the train step (diag:forward) takes its
      // suffix; any other function is the same in every stage.
      std::string base = want.empty() ? "train_step" : want;
      if (auto it = stage->fns.find(base); it != stage->fns.end()) {
        want = it->second;
      } else if (auto train = stage->fns.find("train_step"); train != stage->fns.end()) {
        size_t at = train->second.find('@');
        std::string sized = at == std::string::npos ? base : base + train->second.substr(at);
        bool exists =
            diag && std::any_of(diag->module.functions.begin(), diag->module.functions.end(),
                                [&](const ir::Function& f) { return f.name == sized; });
        want = exists ? sized : base;
      }
    }
    if (!want.empty()) {
      std::erase_if(module.functions, [&](const ir::Function& f) { return f.name != want; });
      if (module.functions.empty() && diag) {
        // A diagnostic's function lives in the plan's own module.
        module = diag->module;
        std::erase_if(module.functions, [&](const ir::Function& f) { return f.name != want; });
      }
      if (module.functions.empty()) {
        std::cerr << "sexpgpu ir: " << opts->file << " stages no function named '" << want
                  << "'\n  sexpgpu ir " << opts->file << " --list lists them\n";
        exit_code = kUsage;
        return;
      }
    }
    if (!opts->no_opt)
      for (ir::Function& f : module.functions) {
        std::string broken = ir::optimize(module, f);
        if (!broken.empty()) {
          std::cerr << "sexpgpu ir: internal error: a pass broke '" << f.name << "': " << broken
                    << "\n";
          exit_code = kFileErrors;
          return;
        }
      }
    if (opts->json)
      std::cout << ir::to_json(module).dump(1) << "\n";
    else
      std::cout << ir::to_text(module);
    exit_code = kOk;
  });
}

}  // namespace sexpgpu::cli
