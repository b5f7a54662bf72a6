// Selector expressions (run-file.md, "Optimizer groups"): which parameters
// a group or a diagnostic takes. `group`'s :select and `defdiagnostic`'s
// :select are not ordinary Lisp: the `selector` macro turns the expression
// (t, glob strings, (path ...), (name ...), (ndim N), (shape-is (A B)),
// (tag :k), and/or/not, or any other form evaluated to a selector or a
// predicate) into a Selector value when it is evaluated.
#pragma once

#include <string>
#include <vector>

#include "ir/types.h"
#include "lisp/interp.h"

namespace sexpgpu::runfile {

// A parameter as selectors see it. Tags are keyword names without the
// colon, in any case ("no-decay").
struct ParamView {
  std::string path;  // "gpt.blocks.0.attn.weight"
  ir::Shape shape;
  ir::DType dtype = ir::DType::F32;
  std::vector<std::string> tags;
};

// A compiled selector expression (what `(selector EXPR)` returns).
struct Selector : lisp::Foreign {
  enum class Kind { All, Path, Name, Ndim, ShapeIs, Tag, And, Or, Not, Predicate };
  Kind kind = Kind::All;
  std::vector<std::string> texts;     // Path: globs; Name: names; Tag: tags (lower case)
  int64_t ndim = 0;                   // Ndim
  ir::Dims shape;                     // ShapeIs
  std::vector<lisp::Value> children;  // And/Or/Not: Selector values; Predicate: the function

  std::string print() const override { return "#<selector " + describe() + ">"; }
  std::string type_name() const override { return "SELECTOR"; }
  // The expression it was made from, as written: (and (ndim 2) (not "a.*")).
  std::string describe() const;
};

Selector* as_selector(lisp::Value v);

// Does `selector` (a Selector value, or a predicate function of the
// parameter's plist (:path :shape :dtype :tags)) take `p`?
bool selector_matches(lisp::Interp& in, lisp::Value selector, const ParamView& p);

// Does the glob match the dotted path? "*" is one segment (or, inside a
// segment, any run of its characters: "h*" matches "h1"); a segment "**" is
// any number of segments, none included.
bool glob_matches(std::string_view glob, std::string_view path);

// The selector value of an unevaluated selector expression, what
// (selector EXPRESSION) gives at top level: its leaves and "any other form"
// are evaluated in the global environment (for options read as forms, such
// as defdiagnostic's :select). E-TYPE / E-ARITY for a malformed expression.
lisp::Value selector_from_form(lisp::Interp& in, lisp::Value expression);

// The parameter's description as predicates receive it.
lisp::Value param_plist(lisp::Interp& in, const ParamView& p);

// Registers the `selector` macro's helpers (%selector-form, %make-selector,
// %selector-of) and selector-matches-p.
void register_selectors(lisp::Interp& in);

}  // namespace sexpgpu::runfile
