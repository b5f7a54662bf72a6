// The report `explain` prints (docs/explain.md), as one JSON document, and
// the text helpers that render its numbers. `diff` compares two of these
// reports, so what the two verbs say about a file is computed in one place
// (verb_explain.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "runfile/session.h"

namespace sexpgpu::cli {

// explain --json's document for a session whose run file compiled
// (`s.compiled` set): file, selection, loaders, parameters,
// parameter_totals, groups, training, flops, functions, memory.
nlohmann::ordered_json explain_report(runfile::Session& s, const std::string& file);

// Bytes with binary prefixes ("1.875 KiB"), FLOPs with SI ones ("1.287 k";
// "-" for null), as explain prints them.
std::string bytes_text(int64_t bytes);
std::string flops_text(const nlohmann::ordered_json& flops);

// Columns padded to their widest cell, two spaces apart, each row indented.
void print_table(std::ostream& os, const std::vector<std::vector<std::string>>& rows,
                 const std::string& indent);

}  // namespace sexpgpu::cli
