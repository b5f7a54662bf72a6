// The worker pool of thread_pool.h.
#include "thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sexpgpu::cpu {
namespace {

// About 30-100 us of spinning (a pause is 40-140 cycles, by processor)
// before a thread sleeps: longer than the gap between two kernels of a
// step, short enough that a pool between steps costs little.
constexpr int kSpins = 2048;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Waits until `value` is no longer `old`, spinning first; returns it.
template <class T>
T await_change(const std::atomic<T>& value, T old) {
  for (int s = 0; s < kSpins; ++s) {
    T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    cpu_relax();
  }
  value.wait(old, std::memory_order_acquire);
  return value.load(std::memory_order_acquire);
}

}  // namespace

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool(std::max(1, int(std::thread::hardware_concurrency())) - 1);
  return pool;
}

ThreadPool::ThreadPool(int workers) : bells_(new Doorbell[size_t(std::max(workers, 1))]) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { work(bells_[size_t(i)]); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  for (size_t i = 0; i < workers_.size(); ++i) {
    bells_[i].generation.fetch_add(1, std::memory_order_release);
    bells_[i].generation.notify_one();
  }
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
  task_.store(&task, std::memory_order_relaxed);
  tasks_.store(n, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  if (++generation_ == 0) ++generation_;
  const uint32_t g = generation_;
  claim_.store(uint64_t(g) << 32, std::memory_order_release);  // publishes the three above
  for (int w = 0; w < n - 1; ++w) {
    bells_[size_t(w)].generation.store(g, std::memory_order_release);
    bells_[size_t(w)].generation.notify_one();  // a system call only if it sleeps
  }
  drain(g);
  for (int done = finished_.load(std::memory_order_acquire); done != n;)
    done = await_change(finished_, done);
  task_.store(nullptr, std::memory_order_relaxed);
}

void ThreadPool::drain(uint32_t generation) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (uint32_t(c >> 32) != generation) return;
    const int i = int(uint32_t(c)), n = tasks_.load(std::memory_order_relaxed);
    if (i >= n) return;
    // Success means the run is still `generation`'s and task i unfinished,
    // so the run (its task_ and tasks_) cannot end before this call does.
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      continue;
    (*task_.load(std::memory_order_relaxed))(i);
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) finished_.notify_one();
  }
}

void ThreadPool::work(Doorbell& bell) {
  uint32_t seen = 0;
  for (;;) {
    seen = await_change(bell.generation, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    drain(seen);
  }
}

}  // namespace sexpgpu::cpu
