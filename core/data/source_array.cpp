// ArraySource (source_array.h): one load, then strided copies.
#include "data/source_array.h"

#include <cassert>
#include <cstring>

namespace sexpgpu::data {

std::filesystem::path canonical_file(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? std::filesystem::absolute(path, ec).lexically_normal() : canonical;
}

namespace {

template <class From, class To>
void widen_examples(std::span<const int64_t> indices, const FieldLayout& layout, int64_t elements,
                    std::byte* out) {
  To* dst = reinterpret_cast<To*>(out);
  for (int64_t index : indices) {
    const std::byte* src = layout.base + index * layout.stride_bytes;
    for (int64_t e = 0; e < elements; ++e) {
      From v;
      std::memcpy(&v, src + e * static_cast<int64_t>(sizeof(From)), sizeof(From));
      *dst++ = static_cast<To>(v);
    }
  }
}

void copy_examples(std::span<const int64_t> indices, const FieldLayout& layout, int64_t bytes,
                   std::byte* out) {
  for (int64_t index : indices) {
    std::memcpy(out, layout.base + index * layout.stride_bytes, static_cast<size_t>(bytes));
    out += bytes;
  }
}

}  // namespace

Status ArraySource::load() {
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (!load_attempted_) {
    load_attempted_ = true;
    Result<ArrayData> loaded = load_fn_();
    if (loaded) {
      data_ = std::move(loaded).value();
    } else {
      load_error_ = loaded.error();
    }
    load_fn_ = nullptr;  // drops whatever the open captured
  }
  if (!load_error_.empty()) return Status::failure(load_error_);
  return ok_status();
}

void ArraySource::gather(std::span<const int64_t> indices, std::span<std::byte* const> out) const {
  assert(out.size() == fields_.size() && data_.layouts.size() == fields_.size());
  for (size_t f = 0; f < fields_.size(); ++f) {
    const Field& field = fields_[f];
    const FieldLayout& layout = data_.layouts[f];
    if (layout.stored == field.dtype) {
      copy_examples(indices, layout, field.example_bytes(), out[f]);
    } else if (layout.stored == ir::DType::U8 && field.dtype == ir::DType::I32) {
      widen_examples<uint8_t, int32_t>(indices, layout, field.elements(), out[f]);
    } else if (layout.stored == ir::DType::U16 && field.dtype == ir::DType::I32) {
      widen_examples<uint16_t, int32_t>(indices, layout, field.elements(), out[f]);
    } else {
      assert(false && "ArraySource: a layout whose stored dtype gather cannot widen");
    }
  }
}

}  // namespace sexpgpu::data
