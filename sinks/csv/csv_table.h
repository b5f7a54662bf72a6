// One CSV file of the csv sink: a few fixed columns (step, time, ...) then
// one column per metric name, in the order the names were first seen.
// Cells are RFC 4180 fields (quoted when they hold a comma, a quote or a line
// break), records end with "\n", numbers are written with the fewest digits
// that read back to the same double.
//
// A CSV header cannot change in place, so a metric name first seen after
// rows were written widens the file: it is rewritten once (to PATH.tmp, then
// renamed over PATH) with the new column appended and every earlier row
// given an empty cell there. Names rarely appear late, so the cost is one
// copy of the file per new name, and the run keeps one file per table.
// An existing file (a resumed run) is continued under its own header.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/sink_support.h"

namespace sexpgpu::sinks {

// A JSON value as a CSV field: numbers round-trip, strings quoted as needed,
// null empty, true/false, objects and arrays as compact JSON.
std::string csv_cell(const nlohmann::ordered_json& value);
// Text as an RFC 4180 field: quoted (quotes doubled) only when it must be.
std::string csv_field(std::string_view text);
// The fields of the record starting at `pos` in `text`, unquoted; `pos`
// moves past the record's line break.
std::vector<std::string> parse_csv_record(std::string_view text, size_t& pos);

class CsvTable {
 public:
  CsvTable(std::string path, std::vector<std::string> fixed_columns);

  // One row: the fixed columns' cells (already CSV fields) and the metrics
  // object's values under their names. The file is created (or an existing
  // one's header read) on the first row.
  void append(const std::vector<std::string>& fixed_cells, const nlohmann::ordered_json& metrics);
  void flush();
  void close();

 private:
  void start(const nlohmann::ordered_json& metrics);
  void adopt_header(const std::string& existing);
  void add_columns(const std::vector<std::string>& names);
  void widen_file(size_t added);
  std::string header_line() const;

  std::string path_;
  std::vector<std::string> fixed_;
  std::vector<std::string> metrics_;
  std::unordered_map<std::string, size_t> column_of_;
  std::optional<OutputFile> out_;
};

}  // namespace sexpgpu::sinks
