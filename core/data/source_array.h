// The common Source of the file-backed sources (idx, tokens, text, npy, csv):
// after load, each field's examples lie in memory at a fixed stride, stored
// in the field's dtype or in a narrower integer dtype (u8, u16) that gather
// widens to the field's i32. Gather is then one memcpy (or one widening loop)
// per example and field.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/source.h"

namespace sexpgpu::data {

// Where one field's examples are: example i's elements start at base + i *
// stride_bytes and are of dtype `stored`.
struct FieldLayout {
  const std::byte* base = nullptr;
  int64_t stride_bytes = 0;
  ir::DType stored = ir::DType::U8;
};

// What a load gives: one layout per field, and the owners of their memory
// (maps, decoded vectors), kept alive as long as the source.
struct ArrayData {
  std::vector<FieldLayout> layouts;
  std::vector<std::shared_ptr<const void>> owners;
};

// Takes ownership of v and returns its owner and first byte.
template <class T>
std::pair<std::shared_ptr<const void>, const std::byte*> own(std::vector<T> v) {
  auto owned = std::make_shared<const std::vector<T>>(std::move(v));
  return {owned, reinterpret_cast<const std::byte*>(owned->data())};
}

class ArraySource final : public Source {
 public:
  using LoadFn = std::function<Result<ArrayData>()>;

  // `files` as written (found by lookup.h); they are kept canonical.
  ArraySource(std::string description, const std::vector<std::filesystem::path>& files,
              std::vector<Field> fields, int64_t size, int64_t tokens_per_example, LoadFn load)
      : description_(std::move(description)),
        fields_(std::move(fields)),
        size_(size),
        tokens_per_example_(tokens_per_example),
        load_fn_(std::move(load)) {
    for (const std::filesystem::path& f : files) files_.push_back(canonical_file(f));
  }

  const std::string& description() const override { return description_; }
  const std::vector<Field>& fields() const override { return fields_; }
  const std::vector<std::filesystem::path>& files() const override { return files_; }
  int64_t size() const override { return size_; }
  int64_t tokens_per_example() const override { return tokens_per_example_; }
  Status load() override;
  void gather(std::span<const int64_t> indices, std::span<std::byte* const> out) const override;

 private:
  std::string description_;
  std::vector<Field> fields_;
  std::vector<std::filesystem::path> files_;
  int64_t size_;
  int64_t tokens_per_example_;
  LoadFn load_fn_;
  std::mutex load_mutex_;
  bool load_attempted_ = false;
  std::string load_error_;
  ArrayData data_;
};

}  // namespace sexpgpu::data
