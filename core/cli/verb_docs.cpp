// sexpgpu docs [PAGE or CODE] [--list]: the documentation, embedded in the
// binary (docs/*.md at build time), for people and agents, offline.
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "util/embedded.h"

namespace sexpgpu::cli {

namespace {

const char* find_page(const std::string& name) {
  for (size_t i = 0; i < kDocPages_count; ++i)
    if (name == kDocPages[i].name) return kDocPages[i].text;
  return nullptr;
}

// The "## CODE" section of errors.md, up to the next "## ".
std::string code_entry(const std::string& code) {
  const char* errors = find_page("errors");
  if (!errors) return "";
  std::string text(errors);
  std::string head = "\n## " + code + "\n";
  size_t at = text.find(head);
  if (at == std::string::npos) return "";
  size_t end = text.find("\n## ", at + head.size());
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

void add_docs(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string topic;
    bool list = false;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("docs", "print a documentation page, or a diagnostic code's entry");
  cmd->add_option("topic", opts->topic, "a page (lisp, check, errors, ...) or a code (E-UNBOUND)");
  cmd->add_flag("--list", opts->list, "list every page (llms.txt)");
  cmd->add_flag("--json", opts->json,
                "one JSON document: {page, text}, {code, text}, or with --list {pages: [...]}");
  cmd->callback([opts, &exit_code]() {
    std::string topic = opts->topic;
    if (topic.size() > 3 && topic.compare(topic.size() - 3, 3, ".md") == 0)
      topic.resize(topic.size() - 3);
    if (opts->list || topic.empty()) {
      if (opts->json) {
        nlohmann::json pages = nlohmann::json::array();
        for (size_t i = 0; i < kDocPages_count; ++i)
          if (std::strcmp(kDocPages[i].name, "llms.txt") != 0) pages.push_back(kDocPages[i].name);
        std::cout << nlohmann::json{{"pages", pages}, {"text", find_page("llms.txt")}}.dump(2)
                  << "\n";
      } else {
        std::cout << find_page("llms.txt");
      }
      exit_code = kOk;
      return;
    }
    if (topic.size() > 2 && (topic[0] == 'E' || topic[0] == 'W') && topic[1] == '-') {
      std::string entry = code_entry(topic);
      if (entry.empty()) {
        std::cerr << "sexpgpu docs: no diagnostic code " << topic
                  << " (see: sexpgpu docs errors)\n";
        exit_code = kUsage;
        return;
      }
      if (opts->json)
        std::cout << nlohmann::json{{"code", topic}, {"text", entry}}.dump(2) << "\n";
      else
        std::cout << entry;
      exit_code = kOk;
      return;
    }
    if (const char* page = find_page(topic)) {
      if (opts->json)
        std::cout << nlohmann::json{{"page", topic}, {"text", page}}.dump(2) << "\n";
      else
        std::cout << page;
      exit_code = kOk;
      return;
    }
    std::cerr << "sexpgpu docs: no page '" << topic << "'; the pages are:\n";
    for (size_t i = 0; i < kDocPages_count; ++i)
      if (std::strcmp(kDocPages[i].name, "llms.txt") != 0)
        std::cerr << "  " << kDocPages[i].name << "\n";
    exit_code = kUsage;
  });
}

}  // namespace sexpgpu::cli
