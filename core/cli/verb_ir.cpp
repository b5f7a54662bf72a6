// sexpgpu ir FILE [--fn NAME] [--json] [--no-opt]: the IR the file stages,
// as text (tensors.md, "IR printed form") or as the JSON document that
// crosses the device ABI: for a run file, the functions the training loop
// runs (runfile/compile.h); for other files, those it stages with
// `stage-function` (docs/explain.md).
#include <iostream>

#include "cli/settings.h"
#include "cli/verbs.h"
#include "ir/json.h"
#include "ir/passes.h"
#include "ir/print.h"
#include "runfile/session.h"
#include "stage/stager.h"

namespace sexpgpu::cli {

void add_ir(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, fn;
    bool json = false, no_opt = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("ir", "print the IR a file stages (text or --json)");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_option("--fn", opts->fn, "only this function");
  cmd->add_flag("--json", opts->json, "the JSON document devices receive");
  cmd->add_flag("--no-opt", opts->no_opt, "before the passes (folding, CSE, dead code, fusion)");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    if (!settings_or_report("ir", exit_code)) return;
    std::unique_ptr<runfile::Session> s =
        opts->limits.load(opts->file, "ir", exit_code, true, true, lazy_reducer_plugins());
    if (!s) return;
    if (s->sink.error_count()) {
      exit_code = kFileErrors;
      (void)s.release();
      return;
    }
    // The scratch function of top-level tensors is not part of the program.
    ir::Module module = stage::stager_of(*s->interp).module();
    std::erase_if(module.functions, [](const ir::Function& f) { return f.name == "toplevel"; });
    if (!opts->fn.empty()) {
      std::erase_if(module.functions, [&](const ir::Function& f) { return f.name != opts->fn; });
      if (module.functions.empty()) {
        std::cerr << "sexpgpu ir: " << opts->file << " stages no function named '" << opts->fn
                  << "'\n";
        exit_code = kUsage;
        (void)s.release();
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
          (void)s.release();
          return;
        }
      }
    if (opts->json)
      std::cout << ir::to_json(module).dump(1) << "\n";
    else
      std::cout << ir::to_text(module);
    exit_code = kOk;
    (void)s.release();  // the process ends next; the OS frees the heap
  });
}

}  // namespace sexpgpu::cli
