// sexpgpu variants FILE [--json] [selection]: the declared selection:
// knobs (default, selected value, type, range, doc), variants (what they
// set) and sweeps (their points, each with its slug).
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "runfile/session.h"

namespace sexpgpu::cli {

namespace {

// The slug of sweep point i on top of the file's defaults.
std::string point_slug(lisp::Interp& in, const select::Selection& sel, const select::Sweep& sw,
                       size_t i, const std::string& stem) {
  std::string slug = stem;
  for (const auto& [name, value] : sw.point(i)) {
    const select::Knob* k = sel.find_knob(name);
    if (k && !lisp::eql(k->default_value, value))
      slug += "." + lower(name->name) + "=" + in.show(value);
  }
  return slug;
}

}  // namespace

void add_variants(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file;
    bool json = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("variants", "the declared selection: knobs, variants, sweeps");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_flag("--json", opts->json, "one JSON document");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    std::unique_ptr<runfile::Session> s = opts->limits.load(opts->file, "variants", exit_code);
    if (!s) return;
    lisp::Interp& in = *s->interp;
    const select::Selection& sel = s->selection();
    std::string stem = std::filesystem::path(opts->file).stem().string();
    nlohmann::json doc;
    doc["slug"] = sel.slug(in, stem);
    doc["knobs"] = nlohmann::json::array();
    for (const select::Knob& k : sel.knobs) {
      nlohmann::json j{{"name", lower(k.name->name)},
                       {"default", in.show(k.default_value)},
                       {"value", in.show(k.value)},
                       {"type", k.type.is_nil() ? "" : in.show(k.type)},
                       {"doc", k.doc}};
      if (k.min) j["min"] = *k.min;
      if (k.max) j["max"] = *k.max;
      doc["knobs"].push_back(j);
    }
    doc["variants"] = nlohmann::json::array();
    for (const select::Variant& v : sel.variants) {
      nlohmann::json sets = nlohmann::json::object();
      for (const auto& [name, value] : v.sets) sets[lower(name->name)] = in.show(value);
      doc["variants"].push_back({{"name", v.name}, {"doc", v.doc}, {"sets", sets}});
    }
    doc["sweeps"] = nlohmann::json::array();
    for (const select::Sweep& sw : sel.sweeps) {
      nlohmann::json points = nlohmann::json::array();
      for (size_t i = 0; i < sw.points(); ++i) {
        nlohmann::json sets = nlohmann::json::object();
        for (const auto& [name, value] : sw.point(i)) sets[lower(name->name)] = in.show(value);
        points.push_back(
            {{"index", i}, {"sets", sets}, {"slug", point_slug(in, sel, sw, i, stem)}});
      }
      doc["sweeps"].push_back({{"name", sw.name}, {"points", points}});
    }
    if (opts->json) {
      std::cout << doc.dump(2) << "\n";
    } else {
      std::cout << "selected: " << doc["slug"].get<std::string>() << "\n\nknobs:\n";
      for (const auto& k : doc["knobs"]) {
        std::cout << "  " << k["name"].get<std::string>() << " = " << k["value"].get<std::string>();
        if (k["value"] != k["default"])
          std::cout << " (default " << k["default"].get<std::string>() << ")";
        if (!k["type"].get<std::string>().empty())
          std::cout << "  " << k["type"].get<std::string>();
        if (!k["doc"].get<std::string>().empty())
          std::cout << "  ; " << k["doc"].get<std::string>();
        std::cout << "\n";
      }
      std::cout << "\nvariants:\n";
      for (const auto& v : doc["variants"]) {
        std::cout << "  " << v["name"].get<std::string>() << ":";
        for (auto& [name, value] : v["sets"].items())
          std::cout << " " << name << "=" << value.get<std::string>();
        if (!v["doc"].get<std::string>().empty())
          std::cout << "  ; " << v["doc"].get<std::string>();
        std::cout << "\n";
      }
      std::cout << "\nsweeps:\n";
      for (const auto& sw : doc["sweeps"]) {
        std::cout << "  " << sw["name"].get<std::string>() << ":\n";
        for (const auto& p : sw["points"])
          std::cout << "    " << p["index"].get<size_t>() << "  " << p["slug"].get<std::string>()
                    << "\n";
      }
    }
    exit_code = s->sink.error_count() ? kFileErrors : kOk;
    (void)s.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
