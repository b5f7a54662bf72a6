// The CPU kernels' worker threads: a fixed pool in which a parallel loop
// wakes only the workers it uses. An idle worker spins for a few tens of
// microseconds (a step's kernels follow each other that closely, and a
// futex wake-up costs more than most of them) and then sleeps in the
// kernel. OpenBLAS runs on one thread inside the pool's tasks (gemm.h), so
// no other threads compete with a spinning worker. (OpenMP's workers spin
// far longer after each loop, and beside OpenBLAS's own threads on a busy
// machine that spinning starved them: a 128x784 @ 784x256 matmul followed by
// a parallel relu took 7.8 ms with spinning workers and 0.3 ms with
// sleeping ones.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sexpgpu::cpu {

class ThreadPool {
 public:
  // The process's pool: one worker per core but the caller's.
  static ThreadPool& instance();

  explicit ThreadPool(int workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads available to one run(): the workers plus the caller.
  int size() const { return int(workers_.size()) + 1; }

  // Calls task(i) once for each i in [0, n), n <= size(), on up to n
  // threads (the caller and the first n - 1 workers; any of them may take
  // any i), and returns when every call has returned. Runs from different
  // threads take turns; a task must not call run() itself.
  void run(int n, const std::function<void(int)>& task);

 private:
  // One worker's doorbell: the generation of the run it was woken for.
  struct alignas(64) Doorbell {
    std::atomic<uint32_t> generation{0};
  };

  void work(Doorbell& bell);
  // Claims and runs tasks of run `generation` until none is left.
  void drain(uint32_t generation);

  std::vector<std::thread> workers_;
  std::unique_ptr<Doorbell[]> bells_;
  std::mutex run_mutex_;  // one run at a time
  // The current run: its generation in the high half, the next task index to
  // claim in the low half, so that a worker late for one run can never claim
  // a task of the next.
  std::atomic<uint64_t> claim_{0};
  std::atomic<const std::function<void(int)>*> task_{nullptr};
  std::atomic<int> tasks_{0};     // task indices of the current run
  std::atomic<int> finished_{0};  // its tasks that have returned
  uint32_t generation_ = 0;       // the caller's count of runs (0 is no run)
  std::atomic<bool> stop_{false};
};

}  // namespace sexpgpu::cpu
