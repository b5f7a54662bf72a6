// One CSV file of the csv sink, widened by a rewrite when a metric name
// appears late (see csv_table.h for the policy).
#include "csv/csv_table.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sexpgpu::sinks {
namespace {

using nlohmann::ordered_json;

std::string shortest_round_trip(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec != std::errc()) throw Failure(SG_ERROR_INTERNAL, "cannot format a number");
  return std::string(buf, end);
}

// The file's bytes; "" when it does not exist.
std::string read_if_exists(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (ec) fail_io("cannot read", path, ec.value());
    return "";
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_io("cannot read", path, errno ? errno : EIO);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) fail_io("cannot read", path, errno);
  return bytes.str();
}

std::string join_fields(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += fields[i];
  }
  return line;
}

}  // namespace

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

std::string csv_cell(const ordered_json& value) {
  switch (value.type()) {
    case ordered_json::value_t::null: return "";
    case ordered_json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case ordered_json::value_t::number_integer: return std::to_string(value.get<int64_t>());
    case ordered_json::value_t::number_unsigned: return std::to_string(value.get<uint64_t>());
    case ordered_json::value_t::number_float: return shortest_round_trip(value.get<double>());
    case ordered_json::value_t::string: return csv_field(value.get_ref<const std::string&>());
    default: return csv_field(value.dump());
  }
}

std::vector<std::string> parse_csv_record(std::string_view text, size_t& pos) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  while (pos < text.size()) {
    char c = text[pos++];
    if (quoted) {
      bool doubled = c == '"' && pos < text.size() && text[pos] == '"';
      if (doubled) ++pos;
      if (c == '"' && !doubled)
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      break;
    } else if (c != '\r' || pos >= text.size() || text[pos] != '\n') {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return fields;
}

CsvTable::CsvTable(std::string path, std::vector<std::string> fixed_columns)
    : path_(std::move(path)), fixed_(std::move(fixed_columns)) {}

void CsvTable::append(const std::vector<std::string>& fixed_cells, const ordered_json& metrics) {
  if (!out_) start(metrics);
  std::vector<std::string> late;
  for (const auto& [name, value] : metrics.items())
    if (!column_of_.count(name)) late.push_back(name);
  if (!late.empty()) {
    add_columns(late);
    widen_file(late.size());
  }
  std::vector<std::string> cells = fixed_cells;
  cells.resize(fixed_.size() + metrics_.size());
  for (const auto& [name, value] : metrics.items())
    cells[fixed_.size() + column_of_.at(name)] = csv_cell(value);
  out_->write(join_fields(cells) + "\n");
}

void CsvTable::flush() {
  if (out_) out_->flush();
}

void CsvTable::close() {
  if (out_) out_->close();
}

// Also how the table recovers after a failed widening: the columns are
// relearned from the file as it is on disk.
void CsvTable::start(const ordered_json& metrics) {
  metrics_.clear();
  column_of_.clear();
  std::string existing = read_if_exists(path_);
  if (!existing.empty()) {
    adopt_header(existing);
    out_.emplace(path_, "a");
    // A row cut short by a crash must not swallow the next one.
    if (existing.back() != '\n') out_->write("\n");
    return;
  }
  std::vector<std::string> names;
  for (const auto& [name, value] : metrics.items()) names.push_back(name);
  add_columns(names);
  out_.emplace(path_, "w");
  out_->write(header_line());
}

void CsvTable::adopt_header(const std::string& existing) {
  size_t pos = 0;
  std::vector<std::string> header = parse_csv_record(existing, pos);
  bool ours =
      header.size() >= fixed_.size() && std::equal(fixed_.begin(), fixed_.end(), header.begin());
  if (!ours) {
    std::vector<std::string> fixed_fields;
    for (const std::string& name : fixed_) fixed_fields.push_back(csv_field(name));
    throw Failure(SG_ERROR_INVALID_ARGUMENT,
                      path_ +
                          " exists and is not a csv sink file: its header does not start with " +
                          join_fields(fixed_fields));
  }
  add_columns(std::vector<std::string>(header.begin() + fixed_.size(), header.end()));
}

void CsvTable::add_columns(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    column_of_.emplace(name, metrics_.size());
    metrics_.push_back(name);
  }
}

void CsvTable::widen_file(size_t added) {
  out_->close();
  out_.reset();
  std::string old = read_if_exists(path_);
  size_t pos = 0;
  parse_csv_record(old, pos);  // the old header, replaced by the wider one
  std::string tmp = path_ + ".tmp";
  OutputFile wide(tmp, "w");
  wide.write(header_line());
  std::string padding(added, ',');
  while (pos < old.size()) {
    size_t begin = pos;
    parse_csv_record(old, pos);
    size_t end = old[pos - 1] == '\n' ? pos - 1 : pos;
    wide.write(std::string_view(old).substr(begin, end - begin));
    wide.write(padding + "\n");
  }
  wide.close();
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) fail_io("cannot replace", path_, errno);
  out_.emplace(path_, "a");
}

std::string CsvTable::header_line() const {
  std::vector<std::string> fields;
  for (const std::string& name : fixed_) fields.push_back(csv_field(name));
  for (const std::string& name : metrics_) fields.push_back(csv_field(name));
  return join_fields(fields) + "\n";
}

}  // namespace sexpgpu::sinks
