// Prefetcher (prefetch.h): one producer thread, a bounded queue.
#include "data/prefetch.h"

#include <exception>

namespace sexpgpu::data {

Prefetcher::Prefetcher(Loader loader, int depth)
    : loader_(std::move(loader)),
      depth_(static_cast<size_t>(depth < 1 ? 1 : depth)),
      consumed_(loader_.state()) {
  thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() {
  join();
}

void Prefetcher::join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  not_full_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      not_full_.wait(lock, [this] { return stopping_ || queue_.size() < depth_; });
      if (stopping_) return;
    }
    Result<Batch> batch = Result<Batch>::failure("");
    try {
      batch = loader_.next();
    } catch (const std::exception& e) {
      batch = Result<Batch>::failure("loader " + loader_.options().name + ": " + e.what());
    }
    bool failed = !batch.ok();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(Item{std::move(batch), loader_.state()});
    }
    not_empty_.notify_one();
    if (failed) return;
  }
}

Result<Batch> Prefetcher::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  not_empty_.wait(lock, [this] { return !queue_.empty(); });
  Item& front = queue_.front();
  if (!front.batch.ok()) return Result<Batch>::failure(front.batch.error());  // kept: sticky
  Result<Batch> batch = std::move(front.batch);
  consumed_ = front.after;
  queue_.pop_front();
  lock.unlock();
  not_full_.notify_one();
  return batch;
}

LoaderState Prefetcher::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return consumed_;
}

nlohmann::json Prefetcher::save() const {
  return loader_.save(
      state());  // reads only the loader's configuration, which the thread never writes
}

Loader Prefetcher::stop() && {
  join();
  loader_.set_state(consumed_);
  return std::move(loader_);
}

}  // namespace sexpgpu::data
