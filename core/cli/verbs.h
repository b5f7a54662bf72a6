// The verbs of the command line, one file each. Each registers its
// subcommand on the app; its callback stores the exit code. The CLI is the
// only place that turns diagnostics into exit codes (cli.md).
#pragma once

#include <CLI/CLI.hpp>

#include "lisp/interp.h"

namespace sexpgpu::cli {

enum Exit { kOk = 0, kFileErrors = 1, kUsage = 2, kCannotRun = 5 };

// The evaluation-limit flags every verb that reads a run file takes.
struct LimitFlags {
  lisp::Limits limits;
  void add_to(CLI::App* cmd);
};

// True when standard error is a terminal and NO_COLOR is unset.
bool use_color_stderr();
bool use_color_stdout();

void add_check(CLI::App& app, int& exit_code);
void add_eval(CLI::App& app, int& exit_code);
void add_fmt(CLI::App& app, int& exit_code);
void add_doctor(CLI::App& app, int& exit_code);
void add_docs(CLI::App& app, int& exit_code);
void add_ir(CLI::App& app, int& exit_code);

}  // namespace sexpgpu::cli
