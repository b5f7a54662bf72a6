// RunSummary and Target (see summary.h).
#include "run/summary.h"

#include <cmath>

namespace sexpgpu::run {

using nlohmann::json;

ir::Result<Target> Target::make(std::string metric, std::string op, double value) {
  if (op != ">=" && op != ">" && op != "<=" && op != "<" && op != "=")
    return ir::Result<Target>::failure("target op '" + op + "' is not one of >= > <= < =");
  Target t;
  t.metric = std::move(metric);
  t.op = std::move(op);
  t.value = value;
  return t;
}

bool Target::check(const std::string& name, double reported, int64_t at_step) {
  if (reached || name != metric || !std::isfinite(reported)) return false;
  bool met = op == ">="   ? reported >= value
             : op == ">"  ? reported > value
             : op == "<=" ? reported <= value
             : op == "<"  ? reported < value
                          : reported == value;
  if (!met) return false;
  reached = true;
  step = at_step;
  return true;
}

json Target::to_json() const {
  return {{"metric", metric},
          {"op", op},
          {"value", value},
          {"reached", reached},
          {"step", step ? json(*step) : json(nullptr)}};
}

bool RunSummary::lower_is_better(std::string_view metric) {
  return metric.ends_with("loss");
}

bool RunSummary::has_best(std::string_view metric) {
  // Measurements of the run itself (time, throughput, memory, position)
  // and the schedule's values have a last value but no better one.
  for (std::string_view s :
       {"step-ms", "examples-per-s", "tokens-per-s", "mfu", "memory-bytes", "epoch", "grad-norm"})
    if (metric == s) return false;
  return metric.rfind("lr/", 0) != 0;
}

void RunSummary::observe(const std::string& metric, double value, int64_t step) {
  final_[metric] = value;
  if (!std::isfinite(value) || !has_best(metric)) return;
  auto it = best_.find(metric);
  bool better = it == best_.end() ||
                (lower_is_better(metric) ? value < it->second.value : value > it->second.value);
  if (better) best_[metric] = {value, step};
}

void RunSummary::observe_all(const json& metrics, int64_t step) {
  if (!metrics.is_object()) return;
  for (const auto& [name, v] : metrics.items())
    if (v.is_number()) observe(name, v.get<double>(), step);
}

void RunSummary::set_counts(int64_t steps, double wall_s, int64_t tokens, int64_t examples) {
  steps_ = steps;
  wall_s_ = wall_s;
  tokens_ = tokens;
  examples_ = examples;
}

json RunSummary::to_json() const {
  json final_j = json::object(), best_j = json::object();
  for (const auto& [k, v] : final_) final_j[k] = std::isfinite(v) ? json(v) : json(nullptr);
  for (const auto& [k, b] : best_) best_j[k] = {{"value", b.value}, {"step", b.step}};
  return {{"final", final_j},
          {"best", best_j},
          {"steps", steps_},
          {"wall_s", wall_s_},
          {"tokens", tokens_},
          {"examples", examples_},
          {"target", target_ ? target_->to_json() : json(nullptr)}};
}

ir::Result<RunSummary> RunSummary::from_json(const json& j) {
  using R = ir::Result<RunSummary>;
  if (!j.is_object()) return R::failure("a summary must be a JSON object");
  RunSummary s;
  try {
    json final_j = j.value("final", json::object()), best_j = j.value("best", json::object());
    for (const auto& [k, v] : final_j.items()) s.final_[k] = v.is_number() ? v.get<double>() : NAN;
    for (const auto& [k, v] : best_j.items())
      s.best_[k] = {v.at("value").get<double>(), v.at("step").get<int64_t>()};
    s.steps_ = j.value("steps", int64_t{0});
    s.wall_s_ = j.value("wall_s", 0.0);
    s.tokens_ = j.value("tokens", int64_t{0});
    s.examples_ = j.value("examples", int64_t{0});
    const json& t = j.contains("target") ? j["target"] : json();
    if (t.is_object()) {
      ir::Result<Target> target =
          Target::make(t.at("metric").get<std::string>(), t.at("op").get<std::string>(),
                       t.at("value").get<double>());
      if (!target) return R::failure("summary target: " + target.error());
      Target restored = *target;
      restored.reached = t.value("reached", false);
      if (t.contains("step") && t["step"].is_number_integer())
        restored.step = t["step"].get<int64_t>();
      s.target_ = restored;
    }
  } catch (const json::exception& e) {
    return R::failure(std::string("a summary field has the wrong type: ") + e.what());
  }
  return s;
}

}  // namespace sexpgpu::run
