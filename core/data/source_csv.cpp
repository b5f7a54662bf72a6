// The `csv` source (source.h): comma-separated values, parsed whole at open
// into one array per field (CSV data sets are small, and a bad value anywhere
// must be an error of `check`, not of step 40000).
#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "data/file_io.h"
#include "data/source_array.h"

namespace sexpgpu::data {

namespace fs = std::filesystem;

namespace {

bool csv_dtype_ok(ir::DType d) {
  return d != ir::DType::BF16 && d != ir::DType::F16;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The cells of one line; a cell in double quotes may hold commas, and "" in
// it is one quote.
std::vector<std::string> split_cells(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted_cell = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted_cell) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted_cell = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted_cell = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

template <class T>
void append(std::vector<std::byte>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

// Appends the cell's value as `dtype`; false when it is not one.
bool append_value(std::vector<std::byte>& out, std::string_view cell, ir::DType dtype) {
  cell = trim(cell);
  const char* first = cell.data();
  const char* last = cell.data() + cell.size();
  if (ir::is_float(dtype)) {
    double v = 0;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || end != last) return false;
    if (dtype == ir::DType::F32)
      append(out, static_cast<float>(v));
    else
      append(out, v);
    return true;
  }
  if (dtype == ir::DType::Bool) {
    std::string lower(cell);
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower != "0" && lower != "1" && lower != "true" && lower != "false") return false;
    append(out, static_cast<uint8_t>(lower == "1" || lower == "true"));
    return true;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last) return false;
  switch (dtype) {
    case ir::DType::I32:
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        return false;
      append(out, static_cast<int32_t>(v));
      return true;
    case ir::DType::U8:
      if (v < 0 || v > 255) return false;
      append(out, static_cast<uint8_t>(v));
      return true;
    case ir::DType::U16:
      if (v < 0 || v > 65535) return false;
      append(out, static_cast<uint16_t>(v));
      return true;
    default: append(out, v); return true;
  }
}

Status check_columns(const fs::path& path, const std::vector<CsvColumn>& columns) {
  auto bad = [&](const std::string& what) {
    return Status::failure(quoted(path) + ": bad :columns: " + what);
  };
  if (columns.empty()) return bad("no fields given");
  for (size_t i = 0; i < columns.size(); ++i) {
    const CsvColumn& c = columns[i];
    for (size_t j = 0; j < i; ++j) {
      if (columns[j].name == c.name) return bad("field :" + c.name + " is given twice");
    }
    if (c.columns.empty()) return bad("field :" + c.name + " takes no columns");
    if (c.scalar && c.columns.size() != 1) return bad("field :" + c.name + " is one column");
    if (!csv_dtype_ok(c.dtype)) {
      return bad("field :" + c.name + ": dtype " + std::string(ir::lisp_keyword(c.dtype)) +
                 " is not read from text (use :f32 and cast in prepare)");
    }
    for (int64_t col : c.columns) {
      if (col < 0)
        return bad("field :" + c.name + ": column " + std::to_string(col) + " is negative");
    }
  }
  return ok_status();
}

std::string value_error(const fs::path& path, int64_t line, int64_t column, std::string_view cell,
                        const CsvColumn& c) {
  return quoted(path) + ": line " + std::to_string(line) + ", column " + std::to_string(column) +
         ": \"" + std::string(trim(cell)) + "\" is not a value of :" + c.name + "'s dtype " +
         std::string(ir::lisp_keyword(c.dtype));
}

}  // namespace

Result<SourcePtr> open_csv(const fs::path& path, const std::vector<CsvColumn>& columns,
                           bool header) {
  using R = Result<SourcePtr>;
  if (Status s = check_columns(path, columns); !s) return R::failure(s.error());
  if (auto size = regular_file_size(path); !size) return R::failure(size.error());
  std::ifstream in(path, std::ios::binary);
  if (!in) return R::failure(quoted(path) + ": cannot be read");
  std::vector<std::vector<std::byte>> values(columns.size());
  std::string line;
  int64_t line_no = 0, rows = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if ((header && line_no == 1) || trim(line).empty()) continue;
    std::vector<std::string> cells = split_cells(line);
    for (size_t f = 0; f < columns.size(); ++f) {
      for (int64_t col : columns[f].columns) {
        if (col >= static_cast<int64_t>(cells.size())) {
          return R::failure(quoted(path) + ": line " + std::to_string(line_no) + " has " +
                            std::to_string(cells.size()) +
                            " columns, and field :" + columns[f].name + " reads column " +
                            std::to_string(col) + " (columns count from 0)");
        }
        if (!append_value(values[f], cells[static_cast<size_t>(col)], columns[f].dtype)) {
          return R::failure(
              value_error(path, line_no, col, cells[static_cast<size_t>(col)], columns[f]));
        }
      }
    }
    ++rows;
  }
  if (rows == 0) return R::failure(quoted(path) + ": no data rows");
  std::vector<Field> fields;
  auto owned = std::make_shared<std::vector<std::vector<std::byte>>>(std::move(values));
  for (const CsvColumn& c : columns) {
    ir::Shape shape = c.scalar ? ir::Shape{} : ir::Shape{static_cast<int64_t>(c.columns.size())};
    fields.push_back(Field{c.name, c.dtype, shape});
  }
  auto load = [owned, fields]() -> Result<ArrayData> {
    ArrayData data;
    data.owners.push_back(owned);
    for (size_t f = 0; f < fields.size(); ++f) {
      data.layouts.push_back(
          FieldLayout{(*owned)[f].data(), fields[f].example_bytes(), fields[f].dtype});
    }
    return data;
  };
  return SourcePtr(std::make_shared<ArraySource>("csv " + path.string(), std::vector{path},
                                                 std::move(fields), rows, 0, std::move(load)));
}

}  // namespace sexpgpu::data
