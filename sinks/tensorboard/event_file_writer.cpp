// The event file's writer thread (event_file_writer.h).
#include "tensorboard/event_file_writer.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "common/sink_support.h"

namespace sexpgpu::sinks::tensorboard {

EventFileWriter::EventFileWriter(std::string path, int fd, size_t max_pending_bytes)
    : path_(std::move(path)), fd_(fd), max_pending_bytes_(max_pending_bytes) {
  // The thread starts with every signal blocked (it inherits the mask), so
  // that SIGINT, SIGTERM and SIGUSR1 keep reaching the core's threads.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

EventFileWriter::~EventFileWriter() {
  stop_thread();
  if (fd_ >= 0) ::close(fd_);
}

bool EventFileWriter::append(std::string_view record) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_ == 0 && !stopping_) {
      if (pending_.size() + in_flight_bytes_ + record.size() > max_pending_bytes_) {
        ++dropped_records_;
        dropped_bytes_ += record.size();
        return false;
      }
      pending_.append(record);
    }
  }
  check();
  wake_.notify_one();
  return true;
}

void EventFileWriter::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != 0) fail_io(error_what_, path_, error_);
}

void EventFileWriter::close() {
  stop_thread();
  if (fd_ < 0) return check();
  int fd = fd_;
  fd_ = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  // fsync has nothing to make durable on a pipe or a character device
  // (EINVAL): that is no failure of the file.
  if (error_ == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    error_ = errno;
    error_what_ = "cannot sync";
  }
  if (::close(fd) != 0 && error_ == 0) {
    error_ = errno;
    error_what_ = "cannot close";
  }
  lock.unlock();
  check();
}

uint64_t EventFileWriter::dropped_records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_records_;
}

uint64_t EventFileWriter::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_bytes_;
}

void EventFileWriter::stop_thread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void EventFileWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty() || error_ != 0) {
      if (stopping_) return;
      pending_.clear();
      continue;
    }
    std::string chunk;
    chunk.swap(pending_);
    in_flight_bytes_ = chunk.size();
    lock.unlock();
    write_all(chunk);
    lock.lock();
    in_flight_bytes_ = 0;
  }
}

// Called without the lock; takes it only to record a failure.
void EventFileWriter::write_all(const std::string& chunk) {
  size_t done = 0;
  while (done < chunk.size()) {
    ssize_t n = ::write(fd_, chunk.data() + done, chunk.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = n < 0 ? errno : EIO;
      error_what_ = "cannot write";
      return;
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace sexpgpu::sinks::tensorboard
