// The CPU kernels' worker threads: a fixed pool whose idle workers sleep on a
// condition variable. (OpenMP's idle workers spin after each parallel loop,
// and on a busy machine that spinning starved OpenBLAS's own threads: a
// 128x784 @ 784x256 matmul followed by a parallel relu took 7.8 ms with
// spinning workers and 0.3 ms with sleeping ones.)
#pragma once

#include <condition_variable>
#include <functional>
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
  // threads (the caller among them; any thread may take any i), and returns
  // when every call has returned. Runs from different threads take turns.
  void run(int n, const std::function<void(int)>& task);

 private:
  void work();

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one run at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  int tasks_ = 0;    // task indices of the current run
  int next_ = 0;     // the next index to claim
  int running_ = 0;  // claimed by workers and not yet returned
  unsigned generation_ = 0;
  bool stop_ = false;
};

}  // namespace sexpgpu::cpu
