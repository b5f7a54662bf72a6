// "Did you mean": the nearest names in scope for E-UNBOUND, and the table of
// Common Lisp's symbols that makes an unknown CL operator E-UNSUPPORTED.
#include <algorithm>

#include "lisp/interp.h"
#include "lisp/modules.h"

namespace sexpgpu::lisp {

// ---- "did you mean" ------------------------------------------------------------

namespace {

const char* const kClSymbols[] = {
#include "lisp/cl_symbols.inc"
};

bool is_cl_symbol(const std::string& name) {
  return std::binary_search(std::begin(kClSymbols), std::end(kClSymbols), name,
                            [](const auto& a, const auto& b) { return std::string_view(a) < std::string_view(b); });
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

// The nearest names in scope to `s` (functions or variables), for the fix line.
std::string Interp::suggest_names(Symbol* s, Env* env, bool function) {
  std::vector<std::pair<size_t, std::string>> best;
  size_t limit = std::max<size_t>(1, s->name.size() / 3);
  auto consider = [&](const std::string& name) {
    if (name == s->name || name.empty() || name[0] == '%') return;
    size_t d = edit_distance(name, s->name);
    if (d <= limit) best.emplace_back(d, name);
  };
  for (Env* e = env; e; e = e->parent)
    for (auto& b : e->b)
      if (b.sym && ((function && b.ns == NS::Fun) || (!function && (b.ns == NS::Var || b.ns == NS::SpecialVar))))
        consider(b.sym->name);
  for (auto& [name, sym] : symbols_)
    if (function ? (sym->cell.has_function() || sym->special_form >= 0) : sym->cell.has_value) consider(name);
  for (auto& [sym, cell] : current_module->cells)
    if (function ? cell.has_function() : cell.has_value) consider(sym->name);
  std::sort(best.begin(), best.end());
  best.erase(std::unique(best.begin(), best.end()), best.end());
  std::string out;
  for (size_t i = 0; i < best.size() && i < 3; ++i) {
    std::string lower = best[i].second;
    for (char& c : lower) c = char(std::tolower((unsigned char)c));
    out += (out.empty() ? "did you mean " : " or ") + std::string("'") + lower + "'";
  }
  return out.empty() ? out : out + "?";
}

bool Interp::is_common_lisp_name(Symbol* s) const { return s->qualifier.empty() && is_cl_symbol(s->name); }

}  // namespace sexpgpu::lisp
