// A background thread that keeps up to `depth` batches of a loader ready, so
// that the device never waits on loading (gathers, shuffles, the first
// call's decompression all happen on this thread).
//
// The consumer sees exactly the loader's sequence. The loader runs ahead, so
// the position a checkpoint needs is not the loader's own but the one after
// the last batch handed out: each queued batch carries it, and state() and
// save() give that one. An error (a failed load, an exception) is handed to
// the consumer in place of the batch it concerns, and again on every later
// call; the thread stops there. The destructor stops and joins the thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "data/loader.h"

namespace sexpgpu::data {

class Prefetcher {
 public:
  // Starts the thread; depth >= 1 (smaller values are taken as 1).
  Prefetcher(Loader loader, int depth);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch, waiting for it if it is not ready.
  Result<Batch> next();

  // The loader's state after the last batch next() gave (its initial state
  // before the first), and the checkpoint entry at that state.
  LoaderState state() const;
  nlohmann::json save() const;

  // Stops the thread and gives the loader back, rewound to state(): batches
  // prefetched but not handed out will come again (for a stage change: stop,
  // apply_stage, and start a new Prefetcher).
  Loader stop() &&;

 private:
  struct Item {
    Result<Batch> batch;
    LoaderState after;
  };
  void run();
  void join();

  Loader loader_;  // used by the thread only, until join()
  size_t depth_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  LoaderState consumed_;
  std::thread thread_;
};

}  // namespace sexpgpu::data
