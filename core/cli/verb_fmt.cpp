// sexpgpu fmt FILE... [--check] [--stdout]: the one layout (see lisp/fmt.h).
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/verbs.h"
#include "lisp/fmt.h"
#include "util/atomic_file.h"

namespace sexpgpu::cli {

void add_fmt(CLI::App& app, int& exit_code) {
  struct Opts {
    std::vector<std::string> files;
    bool check = false;
    bool to_stdout = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("fmt", "rewrite files in the one layout");
  cmd->add_option("files", opts->files, "files to format")->required();
  cmd->add_flag("--check", opts->check, "change nothing; exit 1 listing files that would change");
  cmd->add_flag("--stdout", opts->to_stdout, "print the formatted text instead of rewriting");
  cmd->callback([opts, &exit_code]() {
    int code = kOk;
    for (const std::string& path : opts->files) {
      std::ifstream f(path, std::ios::binary);
      if (!f) {
        std::cerr << "sexpgpu fmt: cannot read " << path << "\n";
        exit_code = kUsage;
        return;
      }
      std::stringstream ss;
      ss << f.rdbuf();
      std::string text = ss.str(), out;
      lisp::FmtError err;
      if (!lisp::format_source(text, out, err)) {
        std::cout << path << ":" << err.line << ":" << err.col << ": E-READ " << err.message << "\n";
        code = kFileErrors;
        continue;
      }
      if (opts->to_stdout) {
        std::cout << out;
      } else if (opts->check) {
        if (out != text) {
          std::cout << path << "\n";
          code = kFileErrors;
        }
      } else if (out != text) {
        std::string io_error;
        if (!write_file_atomic(path, out, &io_error)) {
          std::cerr << "sexpgpu fmt: " << io_error << "\n";
          code = kFileErrors;
        }
      }
    }
    exit_code = code;
  });
}

}  // namespace sexpgpu::cli
