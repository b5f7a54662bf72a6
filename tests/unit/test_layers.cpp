// The layering (docs/architecture.md): every #include of core/, devices/,
// plugins/, sinks/ and diagnostics/ is resolved to the file it names, as the
// compiler finds it, and one that runs against the page's layer table fails,
// naming the file, the line and the rule. The table is read from the page
// itself, so the page and the test cannot disagree.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_temp_files.h"

namespace {

namespace fs = std::filesystem;

const char* const kTablePage = "docs/architecture.md";
const char* const kScanned[] = {"core", "devices", "plugins", "sinks", "diagnostics"};
// Where a quoted include is looked for after the including file's own
// directory: the include directories the build gives (-I). None points
// inside a device or a plugin, so a device's file is named by its path.
const char* const kIncludeRoots[] = {"core",    "core/include",        "devices",
                                     "plugins", "plugins/sdk/include", "sinks"};

// Each room of the table and the rooms it may include.
using Table = std::map<std::string, std::set<std::string>>;

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex code("`([^`]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), code); it != std::sregex_iterator();
       ++it) {
    std::string name = (*it)[1].str();
    while (!name.empty() && name.back() == '/') name.pop_back();
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  for (std::string& c : cells) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return cells;
}

// The page's table with the columns "room" and "may include".
Table read_table(const fs::path& root, std::vector<std::string>& problems) {
  Table table;
  std::ifstream in(root / kTablePage);
  std::string line;
  int room_col = -1, allowed_col = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '|') {
      room_col = allowed_col = -1;
      continue;
    }
    std::vector<std::string> cells = cells_of(line);
    auto column = [&](const char* name) {
      auto it = std::find(cells.begin(), cells.end(), name);
      return it == cells.end() ? -1 : int(it - cells.begin());
    };
    if (column("room") >= 0 && column("may include") >= 0) {
      room_col = column("room");
      allowed_col = column("may include");
      continue;
    }
    if (room_col < 0 || line.find_first_not_of("|-: ") == std::string::npos) continue;
    if (int(cells.size()) <= std::max(room_col, allowed_col)) continue;
    std::vector<std::string> allowed = backticked(cells[size_t(allowed_col)]);
    for (const std::string& room : backticked(cells[size_t(room_col)]))
      table[room] = std::set<std::string>(allowed.begin(), allowed.end());
  }
  if (table.empty())
    problems.push_back(std::string(kTablePage) +
                       ": no table with the columns 'room' and 'may include'");
  for (const auto& [room, allowed] : table)
    for (const std::string& a : allowed)
      if (!table.count(a))
        problems.push_back(std::string(kTablePage) + ": room " + room + " may include `" + a +
                           "`, which is no room of the table");
  return table;
}

// The longest room that holds `path` (relative, with /), or "".
std::string room_of(const std::string& path, const Table& table) {
  std::string best;
  for (const auto& [room, _] : table)
    if ((path == room || path.rfind(room + "/", 0) == 0) && room.size() > best.size()) best = room;
  return best;
}

// The file (relative to root) that `#include` finds, or "".
std::string resolve(const fs::path& root, const std::string& including, bool quoted,
                    const std::string& name) {
  std::vector<fs::path> candidates;
  if (quoted) candidates.push_back(fs::path(including).parent_path() / name);
  for (const char* r : kIncludeRoots) candidates.push_back(fs::path(r) / name);
  for (const fs::path& c : candidates)
    if (fs::is_regular_file(root / c)) return c.lexically_normal().generic_string();
  return "";
}

bool is_source(const fs::path& p) {
  static const std::set<std::string> suffixes = {".h",   ".hpp", ".c",   ".cc",
                                                 ".cpp", ".cu",  ".cuh", ".def"};
  return suffixes.count(p.extension().string()) != 0;
}

// Every include against the table, as "file:line: what and the rule".
std::vector<std::string> check_tree(const fs::path& root) {
  std::vector<std::string> problems;
  Table table = read_table(root, problems);
  if (table.empty()) return problems;
  std::vector<std::string> files;
  for (const char* top : kScanned) {
    if (!fs::is_directory(root / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / top))
      if (e.is_regular_file() && is_source(e.path()))
        files.push_back(fs::relative(e.path(), root).generic_string());
  }
  std::sort(files.begin(), files.end());
  static const std::regex include(R"(^\s*#\s*include\s*([<"])([^">]+)[">].*)");
  for (const std::string& path : files) {
    std::string room = room_of(path, table);
    if (room.empty()) {
      problems.push_back(path + ":1: is in no room of the table in " + kTablePage +
                         ": add its room");
      continue;
    }
    std::ifstream in(root / path);
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
      std::smatch m;
      if (line.find("include") == std::string::npos || !std::regex_match(line, m, include))
        continue;
      bool quoted = m[1] == "\"";
      std::string name = m[2].str();
      std::string target = resolve(root, path, quoted, name);
      std::string where = path + ":" + std::to_string(lineno) + ": #include " +
                          (quoted ? "\"" + name + "\"" : "<" + name + ">");
      if (target.empty()) {
        if (quoted) {
          std::string roots;
          for (const char* r : kIncludeRoots) roots += std::string(roots.empty() ? "" : ", ") + r;
          problems.push_back(where + " is found neither beside the file nor under an include " +
                             "root (" + roots + "): name a file of another directory by its " +
                             "path from a root");
        }
        continue;  // <...> of a system header
      }
      std::string to = room_of(target, table);
      if (to.empty() || to == room || table[room].count(to)) continue;
      std::string allowed;
      for (const std::string& a : table[room]) allowed += (allowed.empty() ? "" : " ") + a;
      problems.push_back(where + " reaches " + to + ", but " + room + " may include only " +
                         (allowed.empty() ? "nothing" : allowed) + " (" + kTablePage + ")");
    }
  }
  return problems;
}

bool reports(const std::vector<std::string>& problems, const std::string& where,
             const std::string& what) {
  return std::any_of(problems.begin(), problems.end(), [&](const std::string& p) {
    return p.rfind(where, 0) == 0 && p.find(what) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("every #include follows the layer table of docs/architecture.md", "[layers]") {
  std::vector<std::string> problems = check_tree(SEXPGPU_SOURCE_DIR);
  for (const std::string& p : problems) FAIL_CHECK(p);
  CHECK(problems.empty());
}

// The check itself, on a small tree under the real table: a clean tree
// passes, and each kind of violation is reported at its line.
TEST_CASE("the layering check reports each kind of violation", "[layers]") {
  test_files::TempDir dir("layers");
  fs::create_directories(dir / "docs");
  fs::copy_file(fs::path(SEXPGPU_SOURCE_DIR) / kTablePage, dir / kTablePage);
  auto write = [&](const std::string& path, const std::string& text) {
    fs::create_directories((dir / path).parent_path());
    test_files::write_file(dir / path, text);
  };
  write("core/util/text.h", "");
  write("core/ir/graph.h", "#include \"util/text.h\"\n");
  write("core/lisp/interp.h", "#include <vector>\n#include \"util/text.h\"\n");
  write("devices/plan/lower.h", "#include \"ir/graph.h\"\n");
  write("devices/cpu/kernel.h", "#include \"plan/lower.h\"\n#include \"kernel_parts.h\"\n");
  write("devices/cpu/kernel_parts.h", "");
  CHECK(check_tree(dir.path()).empty());

  SECTION("an arrow that runs up") {
    write("core/lisp/interp.h", "#include \"util/text.h\"\n#include \"ir/graph.h\"\n");
    CHECK(reports(check_tree(dir.path()), "core/lisp/interp.h:2:",
                  "reaches core/ir, but core/lisp may include only core/util"));
  }
  SECTION("a device's file named by its bare name from another directory") {
    write("devices/cuda/fusion.h", "#include \"lower.h\"\n");
    CHECK(reports(check_tree(dir.path()), "devices/cuda/fusion.h:1:", "found neither"));
  }
  SECTION("a file in no room") {
    write("core/nowhere/x.h", "");
    CHECK(reports(check_tree(dir.path()), "core/nowhere/x.h:1:", "no room"));
  }
}
