// The IR's JSON form (tensors.md, "IR printed form"): the document that
// crosses the C ABI to device plugins. Written by the core, read back by
// plugins (and by the core's own tests: write -> read is the identity).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "ir/graph.h"

namespace sexpgpu::ir {

// {"version": kIrVersion, "files": [...], "params": [...], "functions": [...],
//  "loaders": [], "schedule": {}}; nodes as {"id", "op", "inputs", "shape",
// "dtype", "attrs", "loc", "group"} (docs/explain.md documents every field).
nlohmann::json to_json(const Module& module);
// Reads a document written by to_json: checks `version`, every op and
// attribute name, and runs the verifier; the error says what and where.
Result<Module> module_from_json(const nlohmann::json& doc);
Result<Module> module_from_json(std::string_view text);

}  // namespace sexpgpu::ir
