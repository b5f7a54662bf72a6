// Turning CUDA, cuBLAS and NVRTC status codes into the messages the plugin
// returns: every call's status is checked, and a failure names the call.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace sexpgpu::cuda {

// "" on success, else "WHAT: cudaErrorX (text)".
inline std::string cuda_error(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
         ")";
}

// The status of the launch just enqueued on this thread (a bad grid, too
// much shared memory, a kernel image missing for this GPU).
inline std::string launch_error(const char* kernel) {
  return cuda_error(cudaGetLastError(), kernel);
}

}  // namespace sexpgpu::cuda

// Returns the message from the enclosing function (which returns
// std::string) when the CUDA call fails.
#define SG_CUDA_RETURN_IF_ERROR(call)                                            \
  do {                                                                           \
    if (std::string sg_cuda_error_ = ::sexpgpu::cuda::cuda_error((call), #call); \
        !sg_cuda_error_.empty())                                                 \
      return sg_cuda_error_;                                                     \
  } while (0)
