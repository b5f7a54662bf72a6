// Robustness: mutate example files (delete, duplicate and swap tokens,
// truncate, insert random bytes) thousands of times and check each mutant
// the way `sexpgpu check` does. Every mutant must finish (no crash, no hang)
// and every error must carry a valid position inside the file. A sample of
// mutants also goes through the real binary, which must exit 0 or 1.
//
// Usage: fuzz_check SEXPGPU_BINARY FILE... [--cases N] [--seed S]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "runfile/session.h"
#include "util/big_stack.h"

using namespace sexpgpu;

namespace {

// Tokens as the mutator sees them: parens, strings, and runs of other text.
std::vector<std::string> tokenize(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    size_t j = i + 1;
    if (c == '(' || c == ')' || c == '\'' || c == '`' || c == ',') {
    } else if (c == '"') {
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
    } else if (isspace((unsigned char)c)) {
      while (j < s.size() && isspace((unsigned char)s[j])) ++j;
    } else {
      while (j < s.size() && !isspace((unsigned char)s[j]) && !strchr("()'`,\"", s[j])) ++j;
    }
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string mutate(const std::string& text, std::mt19937_64& rng) {
  std::vector<std::string> toks = tokenize(text);
  if (toks.empty()) return text;
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits && !toks.empty(); ++e) {
    switch (rng() % 6) {
      case 0: toks.erase(toks.begin() + long(pick(toks.size()))); break;
      case 1: {
        size_t i = pick(toks.size());
        toks.insert(toks.begin() + long(i), toks[i]);
        break;
      }
      case 2: std::swap(toks[pick(toks.size())], toks[pick(toks.size())]); break;
      case 3: toks.resize(pick(toks.size()) + 1); break;
      case 4: {
        std::string junk;
        for (int k = 0, n = 1 + int(rng() % 6); k < n; ++k) junk += char(rng() % 256);
        toks.insert(toks.begin() + long(pick(toks.size())), junk);
        break;
      }
      case 5: {  // splice a token from elsewhere: makes plausible but wrong forms
        toks.insert(toks.begin() + long(pick(toks.size())), toks[pick(toks.size())]);
        break;
      }
    }
  }
  std::string out;
  for (auto& t : toks) out += t;
  return out;
}

// Check in-process; returns an empty string or what went wrong.
std::string check_in_process(const std::string& name, const std::string& text) {
  lisp::Limits limits;
  limits.steps = 200'000;  // mutants are small; a tight budget keeps thousands fast
  runfile::Session s(limits);
  s.interp->output = new std::string;  // print output is not ours to show
  s.load_source(name, text);
  delete s.interp->output;
  s.interp->output = nullptr;
  size_t lines = 1 + size_t(std::count(text.begin(), text.end(), '\n'));
  for (const Diagnostic& d : s.sink.all()) {
    if (d.code.size() < 3 || (d.code[0] != 'E' && d.code[0] != 'W') || d.code[1] != '-')
      return "bad code " + d.code;
    if (d.severity != Severity::Error) continue;
    if (!d.span.valid() || d.span.line < 1 || d.span.line > lines || d.span.col < 1)
      return d.code + " without a valid position: " + d.message;
  }
  return "";
}

int run_binary(const std::string& bin, const std::string& path) {
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    alarm(20);  // a hang is a failure, not a stuck test
    execl(bin.c_str(), bin.c_str(), "check", "--eval-steps", "200000", path.c_str(), (char*)nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fuzz_check SEXPGPU FILE... [--cases N] [--seed S]\n";
    return 2;
  }
  std::string bin = argv[1];
  std::vector<std::string> files;
  int cases = 3000;
  uint64_t seed = 20261129;
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--cases") && i + 1 < argc) cases = std::atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else files.push_back(argv[i]);
  }
  std::vector<std::string> texts;
  for (auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
  }
  std::mt19937_64 rng(seed);
  int passed = 0, failed = 0;
  std::string tmp = "/tmp/sexpgpu-fuzz-" + std::to_string(getpid()) + ".lisp";
  for (int c = 0; c < cases; ++c) {
    size_t which = size_t(rng() % texts.size());
    std::string mutant = mutate(texts[which], rng);
    auto start = std::chrono::steady_clock::now();
    std::string problem;
    try {
      problem = run_with_big_stack([&] {
        std::string p = check_in_process(files[which] + "#" + std::to_string(c), mutant);
        return p.empty() ? 0 : (std::cerr << "case " << c << ": " << p << "\n", 1);
      }) ? "see above" : "";
    } catch (const std::exception& e) {
      problem = std::string("exception escaped: ") + e.what();
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (secs > 5) problem = "took " + std::to_string(secs) + " s";
    // Every 20th mutant also runs through the binary.
    if (problem.empty() && c % 20 == 0) {
      std::ofstream(tmp) << mutant;
      int code = run_binary(bin, tmp);
      if (code != 0 && code != 1) problem = "binary exited " + std::to_string(code);
    }
    if (problem.empty()) {
      ++passed;
    } else {
      ++failed;
      std::string keep = "/tmp/sexpgpu-fuzz-failure-" + std::to_string(c) + ".lisp";
      std::ofstream(keep) << mutant;
      std::cerr << "FAIL case " << c << " (" << files[which] << "): " << problem << " — kept in " << keep
                << "\n";
    }
  }
  std::remove(tmp.c_str());
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}
