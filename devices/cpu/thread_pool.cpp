// The sleeping worker pool of thread_pool.h.
#include "thread_pool.h"

#include <algorithm>

namespace sexpgpu::cpu {

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool(std::max(1, int(std::thread::hardware_concurrency())) - 1);
  return pool;
}

ThreadPool::ThreadPool(int workers) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Tasks are claimed, not assigned: the caller works through them too, and
// waits only for the tasks workers have already started. On a busy machine
// a worker may not be scheduled for milliseconds; with fixed assignment
// every parallel kernel waited that long for it (a training step of a few
// hundred kernels took 100 times its CPU time), now the caller just does
// that worker's share.
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
    next_ = 0;
    running_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  std::unique_lock<std::mutex> lock(mutex_);
  while (next_ < tasks_) {
    int i = next_++;
    lock.unlock();
    task(i);
    lock.lock();
  }
  done_.wait(lock, [this] { return running_ == 0; });
  task_ = nullptr;
}

void ThreadPool::work() {
  unsigned seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    while (next_ < tasks_) {
      int i = next_++;
      ++running_;
      const std::function<void(int)>* task = task_;
      lock.unlock();
      (*task)(i);
      lock.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }
}

}  // namespace sexpgpu::cpu
