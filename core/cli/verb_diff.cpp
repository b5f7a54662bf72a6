// sexpgpu diff A B [--json]: what changed between two run files, two
// selections of one (`diff FILE --variant wide FILE`: selection flags before
// the second path select for the first, those after it for the second), or
// two run directories (their run.lisp under their recorded selection, and
// their final metrics side by side). Both sides are compiled and described
// by explain's report (cli/explain_report.h) plus defrun's settings and the
// IR's op counts; the sections keep only what differs. Exit 0 either way
// (docs/explain.md, "diff").
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/explain_report.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "ir/ops.h"
#include "runfile/compile.h"

namespace sexpgpu::cli {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// One side of the comparison, as the command line gave it.
struct Side {
  std::string path;  // as typed
  LimitFlags flags;  // its selection (a run directory's: the recorded one)
  bool run_dir = false;
  std::string file;  // the run file read: `path`, or PATH/run.lisp
  json recorded;     // a run directory's selection.json
  json status;       // a run directory's status.json (null when absent)
  std::unique_ptr<runfile::Session> session;
  json facts;  // explain's report, defrun and ops
};

bool has_selection(const LimitFlags& f) {
  return !f.variants.empty() || !f.sets.empty() || !f.point.empty();
}

std::string selection_text(const LimitFlags& f) {
  std::string out;
  if (!f.variants.empty()) {
    out += " --variant ";
    for (size_t i = 0; i < f.variants.size(); ++i) out += (i ? "," : "") + f.variants[i];
  }
  for (const std::string& s : f.sets) out += " --set " + s;
  if (!f.point.empty()) out += " --point " + f.point;
  return out;
}

std::optional<json> read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  json j = json::parse(f, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// defrun's settings (spec/run_spec.h), as keys of the form.
json defrun_json(const spec::RunDecl& r) {
  json j;
  if (r.steps) j["steps"] = r.steps;
  if (r.epochs) j["epochs"] = r.epochs;
  j["microbatches"] = r.microbatches;
  j["precision"] = r.precision;
  j["master-weights"] = r.master_weights;
  j["seed"] = r.seed;
  j["clip-norm"] = r.clip_norm ? json(*r.clip_norm) : json(nullptr);
  j["log-every"] = r.log_every;
  j["checkpoint-every"] = r.checkpoint_every ? json(*r.checkpoint_every) : json(nullptr);
  j["checkpoint-keep"] = r.checkpoint_keep;
  j["checkpoint-at-end"] = r.checkpoint_at_end;
  j["diagnostics-every"] = r.diagnostics_every;
  j["diagnostics"] = r.diagnostics_select;
  j["on-nonfinite"] = r.skip_nonfinite ? "skip" : "stop";
  j["max-skips"] = r.max_skips;
  j["target"] =
      r.target ? json(r.target->metric + " " + r.target->op + " " + json(r.target->value).dump())
               : json(nullptr);
  j["target-stop"] = r.target_stop;
  j["device"] = r.device;
  return j;
}

// How many nodes of each op the compiled functions hold, by the IR's names.
json op_counts(const ir::Module& module) {
  std::map<std::string, int64_t> counts;
  for (const ir::Function& fn : module.functions)
    for (const ir::Node& n : fn.nodes) ++counts[std::string(ir::info(n.op).ir_name)];
  json j = json::object();
  for (const auto& [op, n] : counts) j[op] = n;
  return j;
}

// ---- comparing ---------------------------------------------------------------------------------

// Two objects of values: one {name, a, b} for each key whose values differ
// (null for a key one side lacks).
json flat_diff(const json& a, const json& b) {
  json out = json::array();
  for (const auto& [k, va] : a.items()) {
    json vb = b.contains(k) ? b[k] : json(nullptr);
    if (va != vb) out.push_back({{"name", k}, {"a", va}, {"b", vb}});
  }
  for (const auto& [k, vb] : b.items())
    if (!a.contains(k)) out.push_back({{"name", k}, {"a", nullptr}, {"b", vb}});
  return out;
}

json by_key(const json& list, const char* key) {
  json out = json::object();
  for (const auto& e : list) out[e[key].get<std::string>()] = e;
  return out;
}

json pick(const json& obj, const std::vector<std::string>& fields) {
  json out = json::object();
  for (const std::string& f : fields)
    if (obj.contains(f)) out[f] = obj[f];
  return out;
}

// Two lists of objects keyed by `key`: those only in b (added), only in a
// (removed), and those in both whose `fields` differ (changed: the key and
// each side's differing fields).
json keyed_diff(const json& a, const json& b, const char* key,
                const std::vector<std::string>& fields) {
  json ka = by_key(a, key), kb = by_key(b, key);
  json added = json::array(), removed = json::array(), changed = json::array();
  for (const auto& [k, ea] : ka.items()) {
    if (!kb.contains(k)) {
      json e = {{key, k}};
      e.update(pick(ea, fields));
      removed.push_back(e);
      continue;
    }
    json da = json::object(), db = json::object();
    for (const std::string& f : fields) {
      json va = ea.contains(f) ? ea[f] : json(nullptr);
      json vb = kb[k].contains(f) ? kb[k][f] : json(nullptr);
      if (va != vb) da[f] = va, db[f] = vb;
    }
    if (!da.empty()) changed.push_back({{key, k}, {"a", da}, {"b", db}});
  }
  for (const auto& [k, eb] : kb.items())
    if (!ka.contains(k)) {
      json e = {{key, k}};
      e.update(pick(eb, fields));
      added.push_back(e);
    }
  return {{"added", added}, {"removed", removed}, {"changed", changed}};
}

json knob_values(const json& selection) {
  json out = json::object();
  for (const auto& k : selection["knobs"]) out[k["name"].get<std::string>()] = k["value"];
  return out;
}

const std::vector<std::string> kLoaderFields = {"source",
                                                "batch",
                                                "shuffle",
                                                "drop_last",
                                                "split",
                                                "examples",
                                                "batches_per_epoch",
                                                "last_batch",
                                                "tokens_per_example",
                                                "fields",
                                                "stages",
                                                "train",
                                                "evals"};
const std::vector<std::string> kParamFields = {"shape", "dtype", "count", "trainable",
                                               "init",  "group", "tied"};
const std::vector<std::string> kGroupFields = {"optimizer", "members", "params", "series"};

// A run directory's side: its state, the steps it ran and its final metrics.
json run_values(const Side& s) {
  if (!s.run_dir) return json::object();
  json out = json::object();
  const json& st = s.status;
  out["state"] = st.is_object() && st.contains("state") ? st["state"] : json(nullptr);
  json summary = st.is_object() && st.contains("summary") ? st["summary"] : json(nullptr);
  out["steps"] = summary.is_object() && summary.contains("steps") ? summary["steps"]
                 : st.is_object() && st.contains("step")          ? st["step"]
                                                                  : json(nullptr);
  json final = summary.is_object() && summary.contains("final") ? summary["final"]
               : st.is_object() && st.contains("metrics")       ? st["metrics"]
                                                                : json::object();
  if (final.is_object())
    for (const auto& [k, v] : final.items()) out[k] = v;
  return out;
}

json side_json(const Side& s) {
  json j = {{"path", s.path},
            {"run_dir", s.run_dir},
            {"file", s.file},
            {"slug", s.facts["selection"]["slug"]},
            {"variants", s.flags.variants},
            {"sets", s.flags.sets},
            {"point", s.flags.point}};
  return j;
}

size_t count_changes(const json& section) {
  if (section.is_array()) return section.size();
  return section["added"].size() + section["removed"].size() + section["changed"].size();
}

json diff_document(const Side& a, const Side& b) {
  const json &fa = a.facts, &fb = b.facts;
  json doc;
  doc["a"] = side_json(a);
  doc["b"] = side_json(b);
  doc["knobs"] = flat_diff(knob_values(fa["selection"]), knob_values(fb["selection"]));
  doc["defrun"] = flat_diff(fa["defrun"], fb["defrun"]);
  doc["training"] = flat_diff(fa["training"], fb["training"]);
  doc["loaders"] = keyed_diff(fa["loaders"], fb["loaders"], "name", kLoaderFields);
  json params = keyed_diff(fa["parameters"], fb["parameters"], "path", kParamFields);
  for (auto& c : params["changed"]) c["reshaped"] = c["a"].contains("shape");
  doc["parameters"] = params;
  doc["parameter_totals"] = flat_diff(fa["parameter_totals"], fb["parameter_totals"]);
  doc["groups"] = keyed_diff(fa["groups"], fb["groups"], "name", kGroupFields);
  doc["ops"] = flat_diff(fa["ops"], fb["ops"]);
  doc["flops"] = flat_diff(fa["flops"], fb["flops"]);
  doc["memory"] = flat_diff(fa["memory"], fb["memory"]);
  size_t n = 0;
  for (const char* s : {"knobs", "defrun", "training", "loaders", "parameters", "parameter_totals",
                        "groups", "ops", "flops", "memory"})
    n += count_changes(doc[s]);
  doc["differences"] = n;
  // Run directories: their final metrics side by side, equal or not.
  if (a.run_dir || b.run_dir) {
    json ra = run_values(a), rb = run_values(b), rows = json::array();
    for (const auto& [k, v] : ra.items())
      rows.push_back({{"name", k}, {"a", v}, {"b", rb.contains(k) ? rb[k] : json(nullptr)}});
    for (const auto& [k, v] : rb.items())
      if (!ra.contains(k)) rows.push_back({{"name", k}, {"a", nullptr}, {"b", v}});
    doc["run"] = rows;
  }
  return doc;
}

// ---- the text form -----------------------------------------------------------------------------

std::string value_text(const json& v, const std::string& section = "") {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() && section == "memory") return bytes_text(v.get<int64_t>());
  if (v.is_number() && section == "flops") return flops_text(v);
  if (v.is_number_float()) {  // metrics: six significant digits, as `status` prints them
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  return v.dump();
}

void print_flat(std::ostream& os, const char* title, const json& rows) {
  if (rows.empty()) return;
  os << "\n" << title << ":\n";
  for (const auto& r : rows) {
    std::string name = r["name"];
    if (!r["a"].is_null()) os << "  - " << name << " = " << value_text(r["a"], title) << "\n";
    if (!r["b"].is_null()) os << "  + " << name << " = " << value_text(r["b"], title) << "\n";
  }
}

std::string fields_text(const json& obj, const char* key) {
  std::string out;
  for (const auto& [k, v] : obj.items())
    if (k != key) out += "  " + k + "=" + value_text(v);
  return out;
}

void print_keyed(std::ostream& os, const char* title, const json& d, const char* key) {
  if (count_changes(d) == 0) return;
  os << "\n" << title << ":\n";
  for (const auto& e : d["removed"])
    os << "  - " << e[key].get<std::string>() << fields_text(e, key) << "\n";
  for (const auto& e : d["added"])
    os << "  + " << e[key].get<std::string>() << fields_text(e, key) << "\n";
  for (const auto& e : d["changed"]) {
    std::string k = e[key];
    os << "  - " << k << fields_text(e["a"], key) << "\n";
    os << "  + " << k << fields_text(e["b"], key) << "\n";
  }
}

std::string side_label(const json& s) {
  std::string label = s["path"].get<std::string>();
  if (s["run_dir"].get<bool>())
    label += " (run " + s["slug"].get<std::string>() + ")";
  else {
    for (const auto& v : s["variants"]) label += " --variant " + v.get<std::string>();
    for (const auto& v : s["sets"]) label += " --set " + v.get<std::string>();
    if (!s["point"].get<std::string>().empty())
      label += " --point " + s["point"].get<std::string>();
    label += " (" + s["slug"].get<std::string>() + ")";
  }
  return label;
}

void print_diff(std::ostream& os, const json& doc) {
  os << "--- " << side_label(doc["a"]) << "\n+++ " << side_label(doc["b"]) << "\n";
  if (doc["differences"].get<size_t>() == 0) os << "\nno differences\n";
  print_flat(os, "knobs", doc["knobs"]);
  print_flat(os, "defrun", doc["defrun"]);
  print_flat(os, "training", doc["training"]);
  print_keyed(os, "loaders", doc["loaders"], "name");
  print_keyed(os, "parameters", doc["parameters"], "path");
  print_flat(os, "parameter totals", doc["parameter_totals"]);
  print_keyed(os, "optimizer groups", doc["groups"], "name");
  print_flat(os, "ops", doc["ops"]);
  print_flat(os, "flops", doc["flops"]);
  print_flat(os, "memory", doc["memory"]);
  if (doc.contains("run")) {
    os << "\nrun (final metrics):\n";
    std::vector<std::vector<std::string>> rows = {{"", "a", "b"}};
    for (const auto& r : doc["run"])
      rows.push_back({r["name"], value_text(r["a"]), value_text(r["b"])});
    print_table(os, rows, "  ");
  }
}

// ---- the command line --------------------------------------------------------------------------

// Splits the verb's arguments: two paths, --json, the limits (for both
// sides), and each selection flag for the side its position gives it.
// Empty when fine, else the usage error.
std::string parse_args(const std::vector<std::string>& args, Side (&sides)[2], bool& json_out) {
  size_t paths = 0;
  lisp::Limits limits;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool inline_value = false;
    if (a.starts_with("--") && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      inline_value = true;
    }
    auto take_value = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= args.size()) return false;
      value = args[++i];
      return true;
    };
    Side& side = sides[paths >= 2 ? 1 : 0];
    if (a == "--json" && !inline_value) {
      json_out = true;
    } else if (a == "--variant" || a == "--set" || a == "--point") {
      if (!take_value()) return a + " needs a value";
      if (a == "--variant") {
        size_t start = 0;
        while (start <= value.size()) {
          size_t comma = value.find(',', start);
          if (comma == std::string::npos) comma = value.size();
          side.flags.variants.push_back(value.substr(start, comma - start));
          start = comma + 1;
        }
      } else if (a == "--set") {
        side.flags.sets.push_back(value);
      } else {
        side.flags.point = value;
      }
    } else if (a == "--eval-steps" || a == "--eval-depth" || a == "--eval-heap" ||
               a == "--ir-nodes") {
      if (!take_value()) return a + " needs a value";
      int64_t max = a == "--eval-depth" ? int64_t(std::numeric_limits<uint32_t>::max())
                                        : std::numeric_limits<int64_t>::max();
      if (std::string why = integer_range(1, max)(value); !why.empty()) return a + ": " + why;
      int64_t n = std::stoll(value);
      if (a == "--eval-steps") limits.steps = uint64_t(n);
      if (a == "--eval-depth") limits.depth = uint32_t(n);
      if (a == "--eval-heap") limits.heap_bytes = uint64_t(n);
      if (a == "--ir-nodes") limits.ir_nodes = uint64_t(n);
    } else if (a.size() > 1 && a[0] == '-') {
      return "unknown flag " + args[i] +
             "; diff takes --json, --variant, --set, --point and the evaluation limits";
    } else {
      if (paths == 2) return "a third path " + a + "; diff compares two";
      sides[paths++].path = a;
    }
  }
  if (paths < 2) return "diff needs two files or run directories: sexpgpu diff A B [--json]";
  for (Side& s : sides) s.flags.limits = limits;
  return "";
}

// A run directory, a run file, or the usage error that says why neither.
std::string resolve_side(Side& s) {
  std::error_code ec;
  if (!fs::is_directory(s.path, ec)) {
    s.file = s.path;
    return "";
  }
  fs::path dir(s.path);
  if (!fs::exists(dir / "run.lisp", ec) || !fs::exists(dir / "selection.json", ec))
    return s.path +
           " is a directory but not a run directory (it has no run.lisp and selection.json)";
  if (has_selection(s.flags))
    return s.path + " is a run directory: it is compared under the selection it ran with, so " +
           "selection flags for it make no sense";
  std::optional<json> sel = read_json((dir / "selection.json").string());
  if (!sel || !sel->is_object()) return "cannot read " + (dir / "selection.json").string();
  s.run_dir = true;
  s.file = (dir / "run.lisp").string();
  s.recorded = *sel;
  const json variants = sel->value("variants", json::array());
  const json sets = sel->value("sets", json::object());
  for (const auto& v : variants) s.flags.variants.push_back(v);
  for (const auto& [k, v] : sets.items()) s.flags.sets.push_back(k + "=" + v.get<std::string>());
  s.flags.point = sel->value("point", "");
  s.status = read_json((dir / "status.json").string()).value_or(json(nullptr));
  return "";
}

}  // namespace

void add_diff(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "diff", "what changed between two run files, two selections of one, or two run directories");
  // The order of the selection flags decides their side, which CLI11 does
  // not keep: the arguments are read here (parse_args).
  cmd->allow_extras();
  cmd->positionals_at_end(false);
  cmd->footer(
      "  sexpgpu diff A B [--json]\n"
      "  sexpgpu diff FILE [selection for A] FILE [selection for B]\n"
      "  sexpgpu diff RUN-DIR RUN-DIR\n"
      "selection flags: --variant NAME[,NAME...], --set KNOB=VALUE, --point SWEEP:INDEX");
  cmd->callback([cmd, &exit_code]() {
    if (!settings_or_report("diff", exit_code)) return;
    Side sides[2];
    bool json_out = false;
    if (std::string why = parse_args(cmd->remaining(), sides, json_out); !why.empty()) {
      std::cerr << "sexpgpu diff: " << why << "\n";
      exit_code = kUsage;
      return;
    }
    for (Side& s : sides)
      if (std::string why = resolve_side(s); !why.empty()) {
        std::cerr << "sexpgpu diff: " << why << "\n";
        exit_code = kUsage;
        return;
      }
    auto reducers = lazy_reducer_plugins();
    nlohmann::json failures = nlohmann::json::array();
    for (Side& s : sides) {
      s.session = s.flags.load(s.file, "diff", exit_code, true, true, reducers);
      if (!s.session) {  // unreadable: a usage error, said
        if (json_out) std::cout << unreadable_file_json(s.file).dump(2) << "\n";
        return;
      }
      if (s.session->sink.error_count()) {
        for (auto& d : diagnostics_json(*s.session)) failures.push_back(d);
      } else if (!s.session->is_run_file || !s.session->compiled) {
        std::string message = s.file + " is not a run file (no defrun)";
        std::cerr << "sexpgpu diff: " << message << "\n";
        failures.push_back(bare_diagnostic("E-CONTRACT-MISSING", message, s.file));
      }
    }
    if (!failures.empty()) {
      if (json_out) std::cout << failures.dump(2) << "\n";
      exit_code = kFileErrors;
      for (Side& s : sides) (void)s.session.release();
      return;
    }
    for (Side& s : sides) {
      s.facts = explain_report(*s.session, s.file);
      if (s.run_dir) s.facts["selection"]["slug"] = s.recorded.value("slug", "");
      s.facts["defrun"] = defrun_json(s.session->compiled->run);
      s.facts["ops"] = op_counts(s.session->compiled->module);
    }
    json doc = diff_document(sides[0], sides[1]);
    if (json_out)
      std::cout << doc.dump(2) << "\n";
    else
      print_diff(std::cout, doc);
    exit_code = kOk;
    for (Side& s : sides) (void)s.session.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
