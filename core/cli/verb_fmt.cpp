// sexpgpu fmt FILE... [--check] [--stdout]: the one layout (see lisp/fmt.h).
#include <filesystem>
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
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("fmt", "rewrite files in the one layout");
  cmd->add_option("files", opts->files, "files to format")->required();
  cmd->add_flag("--check", opts->check, "change nothing; exit 1 listing files that would change");
  cmd->add_flag("--stdout", opts->to_stdout, "print the formatted text instead of rewriting");
  cmd->add_flag("--json", opts->json,
                "one JSON document: each file, whether it changed (or would), its diagnostics");
  cmd->callback([opts, &exit_code]() {
    int code = kOk;
    nlohmann::json report = nlohmann::json::array();
    for (const std::string& path : opts->files) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec) || std::filesystem::is_directory(path, ec)) {
        std::cerr << "sexpgpu fmt: cannot read " << path
                  << (std::filesystem::exists(path, ec) ? ": a directory, not a file"
                                                        : ": no such file")
                  << "\n";
        exit_code = kUsage;
        return;
      }
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
      nlohmann::json entry = {
          {"file", path}, {"changed", false}, {"diagnostics", nlohmann::json::array()}};
      if (!lisp::format_source(text, out, err)) {
        code = kFileErrors;
        if (opts->json) {
          nlohmann::json d = bare_diagnostic("E-READ", err.message, path);
          d["line"] = err.line;
          d["col"] = err.col;
          entry["diagnostics"].push_back(d);
          report.push_back(entry);
        } else {
          std::cout << path << ":" << err.line << ":" << err.col << ": E-READ " << err.message
                    << "\n";
        }
        continue;
      }
      entry["changed"] = out != text;
      if (opts->to_stdout) {
        if (opts->json)
          entry["text"] = out;
        else
          std::cout << out;
      } else if (opts->check) {
        if (out != text) {
          if (!opts->json) std::cout << path << "\n";
          code = kFileErrors;
        }
      } else if (out != text) {
        std::string io_error;
        if (!write_file_atomic(path, out, &io_error)) {
          std::cerr << "sexpgpu fmt: " << io_error << "\n";
          entry["diagnostics"].push_back(bare_diagnostic("E-IO", io_error, path));
          code = kFileErrors;
        }
      }
      report.push_back(entry);
    }
    if (opts->json) std::cout << report.dump(2) << "\n";
    exit_code = code;
  });
}

}  // namespace sexpgpu::cli
