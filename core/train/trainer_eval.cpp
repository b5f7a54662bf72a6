// Evaluation passes and targets (trainer_impl.h): a pass reads its loader
// from the start, runs its function on each batch and folds each metric
// over the batches as the metric's :reduce says.
#include <chrono>
#include <cmath>
#include <iostream>

#include "train/trainer_impl.h"

namespace sexpgpu::train {

using nlohmann::json;

bool Trainer::target_check(const std::string& metric, double value) {
  if (!target_ || target_->metric != metric) return false;
  if (!target_->check(metric, value, step_)) return false;
  (void)events_->target(step_, target_->metric, target_->op, target_->value);
  return true;
}

Status Trainer::evaluate(const spec::EvalPass& pass) {
  auto t0 = std::chrono::steady_clock::now();
  last_eval_step_[pass.decl.name] = step_;
  (void)status_->set_state("evaluating");
  std::optional<data::Loader> made;
  if (Status f = make_loader(*run_.loaders.find(pass.decl.loader), made); !f) return f;
  data::Loader& l = *made;
  int64_t batches = pass.decl.batches < 0 ? l.batches_per_epoch() : pass.decl.batches;
  struct Fold {
    double value = 0, weight = 0;
    bool any = false;
  };
  std::map<std::string, Fold> folds;
  int64_t examples = 0;
  for (int64_t i = 0; i < batches; ++i) {
    Result<data::Batch> batch = l.next();
    if (!batch) return fail("E-LOADER-SOURCE", batch.error());
    const std::string* fn = sized_fn_for(pass.fns, *batch);
    if (!fn) return no_sized_fn(pass.fns, *batch);
    if (Status f = upload_batch(programs_.at(*fn), *batch); !f) return f;
    if (Status f = set_ctx(0); !f) return f;
    Scalars s;
    if (Status f = run_fn(*fn, &s); !f) return f;
    examples += batch->size;
    for (const spec::MetricEntry& m : pass.metrics) {
      double v = s["metric:" + m.name];
      Fold& f = folds[m.name];
      switch (m.reduce) {
        case spec::MetricReduce::Mean:
          f.value += v * double(batch->size), f.weight += double(batch->size);
          break;
        case spec::MetricReduce::Sum: f.value += v; break;
        case spec::MetricReduce::Min: f.value = f.any ? std::min(f.value, v) : v; break;
        case spec::MetricReduce::Max: f.value = f.any ? std::max(f.value, v) : v; break;
        case spec::MetricReduce::Last: f.value = v; break;
      }
      f.any = true;
    }
  }
  json metrics = json::object();
  for (const spec::MetricEntry& m : pass.metrics) {
    Fold& f = folds[m.name];
    double v = m.reduce == spec::MetricReduce::Mean && f.weight > 0 ? f.value / f.weight : f.value;
    std::string series = pass.decl.name + "/" + m.name;
    metrics[series] = std::isfinite(v) ? json(v) : json(nullptr);
    latest_[series] = v;
    summary_.observe(series, v, step_);
    target_check(series, v);
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  (void)events_->eval(step_, pass.decl.name, metrics, batches, examples, ms);
  (void)status_->on_eval(pass.decl.name, metrics);
  (void)status_->set_state("running");
  if (!opt_.quiet) {
    std::string line = "eval " + pass.decl.name + " at step " + std::to_string(step_) + ":";
    for (auto& [k, v] : metrics.items()) line += " " + k + " " + v.dump();
    std::cerr << (progress_tty_ ? "\r\033[K" : "") << line << "\n";
  }
  return ok_status();
}

}  // namespace sexpgpu::train
