// The loaders of the run spec (loaders.h).
#include "spec/loaders.h"

namespace sexpgpu::spec {

std::vector<BatchFieldType> LoaderDecl::batch_types(int64_t rows, int64_t seq_len) const {
  if (rows <= 0) rows = options.batch;
  data::SourcePtr view = source;
  if (seq_len > 0 && seq_len != source->tokens_per_example())
    if (ir::Result<data::SourcePtr> w = source->windows(seq_len, 0, 0)) view = *w;
  std::vector<BatchFieldType> out;
  for (const data::Field& f : view->fields()) {
    // The shape built in place: moving a Dims trips GCC 12's
    // -Wstringop-overread false positive on boost::small_vector.
    BatchFieldType& t = out.emplace_back();
    t.name = f.name;
    t.type.dtype = f.dtype;
    t.type.shape.push_back(rows);
    for (int64_t d : f.shape.dims()) t.type.shape.push_back(d);
  }
  return out;
}

data::StageOverrides LoaderDecl::overrides_for(const std::string& stage) const {
  data::StageOverrides out;
  for (const auto& [name, o] : stages)
    if (name == stage) out = o;
  if (!out.batch) out.batch = options.batch;
  if (!out.seq_len && source->tokens_per_example() > 0) out.seq_len = source->tokens_per_example();
  return out;
}

const LoaderDecl* Loaders::find(const std::string& name) const {
  for (const LoaderDecl& d : decls)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace sexpgpu::spec
