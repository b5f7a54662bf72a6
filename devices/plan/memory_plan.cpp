// Best-fit arena allocation over buffer lifetimes (memory_plan.h).
#include "memory_plan.h"

#include <iterator>
#include <map>
#include <queue>

namespace sexpgpu::cpu {
namespace {

size_t aligned(size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

// Free byte ranges of the arena, coalesced; `top` is the arena's end so far.
class FreeList {
 public:
  size_t allocate(size_t bytes) {
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->second >= bytes && (best == blocks_.end() || it->second < best->second)) best = it;
    if (best != blocks_.end()) {
      size_t offset = best->first, rest = best->second - bytes;
      blocks_.erase(best);
      if (rest > 0) blocks_[offset + bytes] = rest;
      return offset;
    }
    // Nothing fits: grow the arena, reusing a free block that ends at its top.
    size_t offset = top_;
    if (!blocks_.empty()) {
      auto last = std::prev(blocks_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        blocks_.erase(last);
      }
    }
    top_ = offset + bytes;
    return offset;
  }

  void release(size_t offset, size_t bytes) {
    auto next = blocks_.lower_bound(offset);
    if (next != blocks_.end() && offset + bytes == next->first) {
      bytes += next->second;
      next = blocks_.erase(next);
    }
    if (next != blocks_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += bytes;
        return;
      }
    }
    blocks_[offset] = bytes;
  }

  size_t top() const { return top_; }

 private:
  std::map<size_t, size_t> blocks_;  // offset -> size
  size_t top_ = 0;
};

}  // namespace

ArenaLayout plan_arena(std::span<const BufferLife> buffers) {
  ArenaLayout layout;
  layout.offsets.resize(buffers.size());
  FreeList free;
  // Live buffers by last step, earliest first.
  using Live = std::pair<int64_t, size_t>;
  std::priority_queue<Live, std::vector<Live>, std::greater<>> live;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLife& b = buffers[i];
    while (!live.empty() && live.top().first < b.first_step) {
      size_t done = live.top().second;
      live.pop();
      free.release(layout.offsets[done], aligned(buffers[done].bytes));
    }
    size_t bytes = aligned(b.bytes);
    layout.offsets[i] = bytes == 0 ? 0 : free.allocate(bytes);
    if (bytes > 0) live.push({b.last_step, i});
  }
  layout.bytes = free.top();
  return layout;
}

}  // namespace sexpgpu::cpu
