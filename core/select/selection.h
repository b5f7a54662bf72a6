// The declared selection (run-file.md, "Knobs, variants and sweeps"): the
// top-level defknob, defvariant and defsweep forms of a file are read
// before the file is evaluated, the request (--variant, --set, --point) is
// resolved against them, and evaluation then binds each knob to its
// selected value. Also the run's slug.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lisp/interp.h"
#include "lisp/reader.h"

namespace sexpgpu::select {

using lisp::Interp;
using lisp::Value;

// What the command line asked for.
struct Request {
  std::vector<std::string> variants;                      // applied left to right
  std::vector<std::pair<std::string, std::string>> sets;  // KNOB=VALUE, after the variants
  std::string point;                                      // SWEEP:INDEX, last
  bool empty() const { return variants.empty() && sets.empty() && point.empty(); }
};

struct Knob {
  lisp::Symbol* name = nullptr;
  std::string doc;
  Value type;  // a type specifier, or nil: any literal
  std::optional<double> min, max;
  Value default_value, value;
  bool selected = false;  // set by the request (not its default)
  Span span;
};

struct Variant {
  std::string name, doc;
  std::vector<std::pair<lisp::Symbol*, Value>> sets;
  Span span;
};

struct Sweep {
  std::string name;
  std::vector<std::pair<lisp::Symbol*, std::vector<Value>>> axes;  // cartesian, last fastest
  Span span;
  size_t points() const;
  // The knob values of point i (0-based).
  std::vector<std::pair<lisp::Symbol*, Value>> point(size_t i) const;
};

struct Selection {
  Request request;
  std::vector<Knob> knobs;
  std::vector<Variant> variants;
  std::vector<Sweep> sweeps;
  // Knobs whose declaration failed when read (already reported): their
  // defknob is then quiet at evaluation, so one mistake gives one error.
  std::vector<const lisp::Symbol*> failed;

  Knob* find_knob(const lisp::Symbol* s);
  const Knob* find_knob(const lisp::Symbol* s) const {
    return const_cast<Selection*>(this)->find_knob(s);
  }
  const Variant* find_variant(const std::string& name) const;
  const Sweep* find_sweep(const std::string& name) const;
  // STEM[.VARIANT...][.KNOB=VALUE...]: --set knobs that differ from their
  // defaults (and the sweep point's), in declaration order.
  std::string slug(Interp& in, const std::string& stem) const;
};

// Reads the selection forms among `forms` (top-level only), evaluates the
// knobs' defaults in order (earlier knobs bound to their selected values),
// applies the request and checks every value. Problems are reported to the
// interpreter's sink as diagnostics (E-KNOB-*, E-VARIANT-UNKNOWN,
// E-SWEEP-UNKNOWN, W-VARIANT-CONFLICT).
void preread(Interp& in, const std::vector<lisp::ReadForm>& forms, Selection& sel);

// W-UNUSED-KNOB for knobs whose name appears nowhere else in the file.
void warn_unused(Interp& in, const std::vector<lisp::ReadForm>& forms, const Selection& sel);

// The selection of an interpreter (set by the session), or nullptr.
Selection* selection_of(Interp& in);
// Registers %defknob (what the defknob macro expands to at evaluation).
void register_builtins(Interp& in);

// Option values as defining forms read them (run-file.md): a list whose
// first element is a keyword, number or string, or a list of such lists, is
// data, and only its elements are evaluated.
Value eval_option(Interp& in, Value form);

}  // namespace sexpgpu::select
