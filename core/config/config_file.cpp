// Reading the config file with TOML++ (config_file.h).
#include "config/config_file.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace sexpgpu::config {

namespace {

// What a value of the file is, in the words of an error message.
std::string type_words(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

std::string place(const std::string& path, const toml::source_region& at) {
  return path + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column);
}

// A key that looks like a credential: the file holds none, so its value is
// neither kept nor shown.
bool looks_secret(std::string_view key) {
  std::string k(key);
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"secret", "token", "password", "access_key", "credential"})
    if (k.find(word) != std::string::npos) return true;
  return false;
}

// One known key of a table, and where its value goes.
struct Key {
  const char* name;
  std::optional<FileValue> ConfigFile::*slot;
  bool path_list;  // a string of ':'-joined directories, or an array of strings
};

struct Table {
  const char* name;
  std::vector<Key> keys;
};

const std::vector<Table>& schema() {
  static const std::vector<Table> tables = {
      {"runs", {{"dir", &ConfigFile::runs_dir, false}}},
      {"device", {{"default", &ConfigFile::device_default, false}}},
      {"plugins", {{"path", &ConfigFile::plugins_path, true}}},
      {"s3",
       {{"endpoint", &ConfigFile::s3_endpoint, false},
        {"region", &ConfigFile::s3_region, false},
        {"profile", &ConfigFile::s3_profile, false}}},
      {"log", {{"level", &ConfigFile::log_level, false}}},
  };
  return tables;
}

std::string known_keys(const Table& t) {
  std::string out;
  for (const Key& k : t.keys) out += std::string(out.empty() ? "" : " ") + k.name;
  return out;
}

std::string known_tables() {
  std::string out;
  for (const Table& t : schema()) out += std::string(out.empty() ? "" : " ") + "[" + t.name + "]";
  return out;
}

// The value of `key` in `table` as text; "" with `error` set when it has
// the wrong type or value.
std::string value_text(const toml::node& v, const Table& table, const Key& key,
                       const std::string& path, std::string& error) {
  const std::string where = place(path, v.source());  // errors point at the value
  std::string name = std::string("[") + table.name + "] " + key.name;
  if (const auto* s = v.as_string()) {
    std::string text = s->get();
    if (std::string(table.name) == "log" && !is_log_level(text))
      error = where + ": " + name + " is \"" + text +
              "\"; it takes trace, debug, info, warn, error or off";
    return text;
  }
  if (const auto* a = v.as_array(); a && key.path_list) {
    std::string joined;
    for (const toml::node& item : *a) {
      const auto* s = item.as_string();
      if (!s) {
        error = place(path, item.source()) + ": " + name + " holds " + type_words(item) +
                "; each directory is a string";
        return "";
      }
      joined += (joined.empty() ? "" : ":") + s->get();
    }
    return joined;
  }
  error = where + ": " + name + " is " + type_words(v) + "; it takes a string" +
          (key.path_list ? " (directories joined by ':') or an array of strings" : "");
  return "";
}

}  // namespace

bool is_log_level(std::string_view text) {
  return std::any_of(std::begin(kLogLevels), std::end(kLogLevels),
                     [&](const char* l) { return text == l; });
}

ConfigResult parse_config(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return {std::nullopt, place(path, e.source()) + ": " + std::string(e.description())};
  }
  ConfigFile out;
  out.path = path;
  // TOML++ keeps a table's keys sorted; the warnings go out in file order.
  std::vector<std::pair<toml::source_position, std::string>> warnings;
  auto warn = [&](const toml::source_region& at, std::string text) {
    warnings.emplace_back(at.begin, place(path, at) + ": " + std::move(text));
  };
  for (auto&& [name, node] : root) {
    const toml::source_region& at = node.is_table() ? node.source() : name.source();
    std::string where = place(path, at);
    auto table = std::find_if(schema().begin(), schema().end(),
                              [&](const Table& t) { return name.str() == t.name; });
    if (table == schema().end()) {
      warn(at, "unknown " + std::string(node.is_table() ? "table [" : "key '") +
                   std::string(name.str()) + (node.is_table() ? "]" : "'") +
                   " (ignored); the config file has " + known_tables());
      continue;
    }
    const toml::table* t = node.as_table();
    if (!t)
      return {std::nullopt, where + ": " + std::string(name.str()) + " is " + type_words(node) +
                                "; write it as a table, [" + table->name + "]"};
    for (auto&& [kname, value] : *t) {
      const std::string kwhere = place(path, kname.source());
      auto key = std::find_if(table->keys.begin(), table->keys.end(),
                              [&](const Key& k) { return kname.str() == k.name; });
      if (key == table->keys.end()) {
        std::string shown = "[" + std::string(table->name) + "] " + std::string(kname.str());
        if (looks_secret(kname.str()))
          warn(kname.source(),
               shown +
                   " is ignored: the config file holds no credentials (use "
                   "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or ~/.aws/credentials)");
        else
          warn(kname.source(), "unknown key " + shown + " (ignored); [" + table->name + "] has " +
                                   known_keys(*table));
        continue;
      }
      std::string error;
      std::string text_value = value_text(value, *table, *key, path, error);
      if (!error.empty()) return {std::nullopt, error};
      out.*(key->slot) = FileValue{text_value, kwhere};
    }
  }
  std::stable_sort(warnings.begin(), warnings.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.line, a.first.column) < std::pair(b.first.line, b.first.column);
  });
  for (auto& w : warnings) out.warnings.push_back(std::move(w.second));
  return {std::move(out), ""};
}

ConfigResult read_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {std::nullopt, path + ": cannot read: " + std::strerror(errno)};
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return {std::nullopt, path + ": cannot read: " + std::strerror(errno)};
  return parse_config(ss.str(), path);
}

}  // namespace sexpgpu::config
