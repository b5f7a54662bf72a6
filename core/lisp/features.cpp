// The reader's features (interp.h, build_features): what this build has.
// SEXPGPU_FEATURE_CUDA comes from the build (core/CMakeLists.txt), set where
// the CUDA device plugin is built; the NCCL device is not built yet, so
// :nccl is never a feature.
#include "lisp/interp.h"

namespace sexpgpu::lisp {

std::vector<std::string> build_features() {
  std::vector<std::string> features = {"SEXPGPU"};
#if defined(SEXPGPU_FEATURE_CUDA) && SEXPGPU_FEATURE_CUDA
  features.push_back("CUDA");
#endif
  return features;
}

// *features*, a special variable as in CL, holds the same features as
// keywords. The reader consults in.features, not the variable: a file
// cannot change what `#+cuda` reads as.
void define_features_variable(Interp& in) {
  std::vector<Value> keywords;
  for (const std::string& f : in.features) keywords.push_back(Interp::symval(in.keyword(f)));
  Cell& cell = in.intern("*FEATURES*")->cell;
  cell.value = in.list_from(keywords);
  cell.has_value = true;
  cell.special = true;
  cell.value_origin = kBuiltin;
}

}  // namespace sexpgpu::lisp
