// The sleeping worker pool of thread_pool.h.
#include "thread_pool.h"

#include <algorithm>

namespace sexpgpu::cpu {

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool(std::max(1, int(std::thread::hardware_concurrency())) - 1);
  return pool;
}

ThreadPool::ThreadPool(int workers) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { work(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run(int n, const std::function<void(int)>& task) {
  n = std::min(n, size());
  if (n <= 1) {
    if (n == 1) task(0);
    return;
  }
  std::lock_guard<std::mutex> turn(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    tasks_ = n;
    pending_ = n - 1;
    ++generation_;
  }
  wake_.notify_all();
  task(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  task_ = nullptr;
}

void ThreadPool::work(int index) {
  unsigned seen = 0;
  for (;;) {
    const std::function<void(int)>* task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= tasks_) continue;  // this run needs fewer threads
      task = task_;
    }
    (*task)(index);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace sexpgpu::cpu
