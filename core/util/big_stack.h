// Runs a function on a thread with a large stack, so deep (but bounded)
// evaluation reaches the evaluator's own E-STACK limit long before the native
// stack runs out.
#pragma once

#include <cstddef>
#include <functional>

namespace sexpgpu {

constexpr size_t kEvaluatorStackBytes = size_t(1) << 30;  // reserved, touched on demand

// Runs `fn` on a new thread with `stack_bytes` of stack and returns its result.
int run_with_big_stack(const std::function<int()>& fn, size_t stack_bytes = kEvaluatorStackBytes);

}  // namespace sexpgpu
