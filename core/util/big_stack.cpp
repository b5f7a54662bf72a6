// run_with_big_stack: a pthread with a large stack (see big_stack.h).
#include "util/big_stack.h"

#include <pthread.h>

#include <exception>

namespace sexpgpu {

namespace {
struct Job {
  const std::function<int()>* fn = nullptr;
  int result = 0;
  std::exception_ptr error;
};

void* trampoline(void* p) {
  Job* job = static_cast<Job*>(p);
  try {
    job->result = (*job->fn)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}
}  // namespace

int run_with_big_stack(const std::function<int()>& fn, size_t stack_bytes) {
  Job job;
  job.fn = &fn;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  if (pthread_create(&thread, &attr, trampoline, &job) != 0) {
    pthread_attr_destroy(&attr);
    return fn();  // no thread: run here, the stack guard still applies
  }
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return job.result;
}

}  // namespace sexpgpu
