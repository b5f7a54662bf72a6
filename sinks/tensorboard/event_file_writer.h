// An event file written by a thread of its own, so that a slow or stuck
// disk never holds up the training loop: `append` queues a framed record
// and returns at once; the writer thread writes whatever is queued with
// write(2) as soon as it can, so a running TensorBoard sees each record
// moments after the run reported it. The queue is bounded: past
// `max_pending_bytes` waiting for the disk, a record is dropped and
// counted instead of waiting (the run's own events.jsonl keeps every
// event; this file is a copy). The first write error stops the writer;
// the next `check`, `append` or `close` throws it as SG_ERROR_IO.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace sexpgpu::sinks::tensorboard {

class EventFileWriter {
 public:
  // Takes ownership of `fd`, open for writing; `path` names it in errors.
  EventFileWriter(std::string path, int fd, size_t max_pending_bytes);
  // Stops the thread after it wrote what is queued, and closes the file;
  // errors are dropped here (call close to see them).
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  const std::string& path() const { return path_; }

  // Queues `record` (already framed). Returns false when it was dropped
  // because the queue is full. Throws the writer's first error.
  bool append(std::string_view record);
  // Throws the writer's first error, if any; never waits for the disk.
  void check();
  // Writes everything queued, fsyncs and closes the file; throws the first
  // error. Later calls do nothing.
  void close();

  uint64_t dropped_records() const;
  uint64_t dropped_bytes() const;

 private:
  void run();
  void write_all(const std::string& chunk);  // on the writer thread
  void stop_thread();

  const std::string path_;
  int fd_;
  const size_t max_pending_bytes_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string pending_;         // framed records not yet handed to the thread
  size_t in_flight_bytes_ = 0;  // the chunk the thread is writing now
  bool stopping_ = false;
  int error_ = 0;           // errno of the first failure, 0 while none
  std::string error_what_;  // what failed: "cannot write", ...
  uint64_t dropped_records_ = 0;
  uint64_t dropped_bytes_ = 0;
  std::thread thread_;
};

}  // namespace sexpgpu::sinks::tensorboard
