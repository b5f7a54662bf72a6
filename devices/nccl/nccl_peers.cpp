// The nccl device's peers (nccl_peers.h): the unique id through the host's
// store, one communicator per process, NCCL calls for the collectives, and
// the watchdog that turns a rank gone or silent into an error.
#include "nccl_peers.h"

#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda/check.h"
#include "cuda/collective.h"
#include "sexpgpu/sdk/host_store.h"
#include "sexpgpu/sdk/log.h"

namespace sexpgpu::nccl {
namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_error(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  std::string why = ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last && *last) why += std::string(": ") + last;
  return std::string(call) + ": " + why;
}

#define SG_NCCL_RETURN_IF_ERROR(expr, comm)                       \
  do {                                                             \
    if (ncclResult_t r_ = (expr); r_ != ncclSuccess)               \
      return nccl_error(r_, #expr, comm);                          \
  } while (0)

std::optional<ncclDataType_t> nccl_type(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return ncclFloat32;
    case ir::DType::F64: return ncclFloat64;
    case ir::DType::F16: return ncclFloat16;
    case ir::DType::BF16: return ncclBfloat16;
    case ir::DType::I32: return ncclInt32;
    case ir::DType::I64: return ncclInt64;
    default: return std::nullopt;
  }
}

std::string store_set(const sg_host_store* s, const std::string& key, const void* v, size_t n) {
  const char* msg = nullptr;
  size_t len = 0;
  if (s->set(s->store_data, key.data(), key.size(), v, n, &msg, &len) == 0) return {};
  return "the store refused " + key + ": " + std::string(msg ? msg : "", len);
}

std::string store_get(const sg_host_store* s, const std::string& key, int64_t timeout_ms,
                      std::vector<char>& out) {
  const void* v = nullptr;
  size_t n = 0;
  const char* msg = nullptr;
  size_t len = 0;
  if (s->get(s->store_data, key.data(), key.size(), timeout_ms, &v, &n, &msg, &len) != 0)
    return "waiting for " + key + ": " + std::string(msg ? msg : "", len);
  out.assign(static_cast<const char*>(v), static_cast<const char*>(v) + n);
  return {};
}

// The peers, and the IR all_reduce op's collective: each bucket's NCCL call
// goes on a side stream forked from the step's stream, so that it runs
// while the rest of the backward does; join() makes the step's stream wait
// for every bucket enqueued so far (the program calls it before the first
// step that reads a reduced bucket, and at its end).
class NcclPeers final : public cuda::Peers, public cuda::Collective {
 public:
  NcclPeers(int rank, int size, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), timeout_(timeout) {}
  ~NcclPeers() override {
    if (comm_) ncclCommDestroy(comm_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (side_) cudaStreamDestroy(side_);
  }

  std::string init(const ncclUniqueId& id) {
    SG_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    SG_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&comm_, size_, id, rank_), nullptr);
    return {};
  }

  cuda::Collective* collective() override { return this; }
  int world_size() const override { return size_; }

  std::string reduce_bucket(void* data, size_t count, ir::DType dtype, bool mean,
                            cudaStream_t stream) override {
    std::optional<ncclDataType_t> t = nccl_type(dtype);
    if (!t) return "NCCL cannot reduce " + std::string(ir::ir_name(dtype));
    if (!comm_) return gone_;
    cudaEvent_t fork = next_event(), done = next_event();
    if (!fork || !done) return "cudaEventCreate failed";
    SG_CUDA_RETURN_IF_ERROR(cudaEventRecord(fork, stream));
    SG_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(side_, fork, 0));
    SG_NCCL_RETURN_IF_ERROR(
        ncclAllReduce(data, data, count, *t, mean ? ncclAvg : ncclSum, comm_, side_), comm_);
    SG_CUDA_RETURN_IF_ERROR(cudaEventRecord(done, side_));
    pending_.push_back(done);
    if (trace_) trace_buckets_.push_back({fork, done});
    return {};
  }

  std::string join(cudaStream_t stream) override {
    if (trace_ && !pending_.empty()) {
      trace_join_ = next_event();
      SG_CUDA_RETURN_IF_ERROR(cudaEventRecord(trace_join_, stream));
    }
    for (cudaEvent_t done : pending_) SG_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, done, 0));
    pending_.clear();
    used_ = 0;  // every event is joined: they may be recorded again
    return {};
  }

  std::string all_reduce(void* data, size_t count, ir::DType dtype, bool mean,
                         cudaStream_t stream) override {
    std::optional<ncclDataType_t> t = nccl_type(dtype);
    if (!t) return "NCCL cannot reduce " + std::string(ir::ir_name(dtype));
    if (!comm_) return gone_;
    SG_NCCL_RETURN_IF_ERROR(
        ncclAllReduce(data, data, count, *t, mean ? ncclAvg : ncclSum, comm_, stream), comm_);
    return {};
  }

  std::string broadcast(void* data, size_t bytes, int root, cudaStream_t stream) override {
    if (root < 0 || root >= size_)
      return "broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_);
    if (!comm_) return gone_;
    SG_NCCL_RETURN_IF_ERROR(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream),
                            comm_);
    return {};
  }

  std::string synchronize(cudaStream_t stream) override {
    const Clock::time_point start = Clock::now();
    auto pause = std::chrono::microseconds(20);
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return trace_ ? report_overlap() : std::string();
      if (q != cudaErrorNotReady) return cuda::cuda_error(q, "cudaStreamQuery");
      if (!comm_) return gone_;
      ncclResult_t async = ncclSuccess;
      if (ncclResult_t r = ncclCommGetAsyncError(comm_, &async); r != ncclSuccess) async = r;
      if (async != ncclSuccess && async != ncclInProgress)
        return abort("rank communication failed (NCCL): " + nccl_error(async, "the communicator", comm_));
      if (Clock::now() - start > timeout_)
        return abort("no answer from the other ranks within " +
                     std::to_string(timeout_.count() / 1000) +
                     " s (SEXPGPU_RANK_TIMEOUT): a rank is gone or hangs");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }

 private:
  // Aborts the communicator (its kernels stop, so the stream drains) and
  // remembers why: every later call says the same.
  std::string abort(std::string why) {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    gone_ = std::move(why);
    return gone_;
  }

  cudaEvent_t next_event() {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreateWithFlags(&e, trace_ ? cudaEventDefault : cudaEventDisableTiming) !=
          cudaSuccess)
        return nullptr;
      events_.push_back(e);
    }
    return events_[used_++];
  }

  // SEXPGPU_NCCL_TRACE=1 (with SEXPGPU_CUDA_GRAPHS=0: timing events are
  // not read from graphs): after each wait, one log line per step with
  // buckets, when each bucket's reduction was enqueued and finished and
  // when the step's stream reached the join (the end of the backward),
  // in ms from the first bucket; the overlap test reads it.
  std::string report_overlap() {
    if (trace_buckets_.empty() || !trace_join_) return {};
    std::string line = "nccl overlap:";
    int before = 0;
    float join_ms = 0;
    cudaEventElapsedTime(&join_ms, trace_buckets_.front().first, trace_join_);
    for (const auto& [fork, done] : trace_buckets_) {
      float a = 0, b = 0;
      cudaEventElapsedTime(&a, trace_buckets_.front().first, fork);
      cudaEventElapsedTime(&b, trace_buckets_.front().first, done);
      line += " [" + std::to_string(a) + ", " + std::to_string(b) + "]";
      before += b < join_ms;
    }
    line += " join " + std::to_string(join_ms) + "; " + std::to_string(before) + " of " +
            std::to_string(trace_buckets_.size()) + " buckets reduced before the join";
    sdk::log(SG_LOG_INFO, line);
    trace_buckets_.clear();
    trace_join_ = nullptr;
    return {};
  }

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t side_ = nullptr;
  std::vector<cudaEvent_t> events_;  // the fork and done events of one step's buckets
  size_t used_ = 0;
  std::vector<cudaEvent_t> pending_;  // buckets not joined yet
  std::string gone_ = "the communicator was aborted";
  const bool trace_ = [] {
    const char* v = std::getenv("SEXPGPU_NCCL_TRACE");
    return v && std::string(v) == "1";
  }();
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> trace_buckets_;  // (fork, done) per bucket
  cudaEvent_t trace_join_ = nullptr;
};

}  // namespace

std::string version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // 2.28.3 is 22803 (NCCL_VERSION_CODE: major*10000 + minor*100 + patch).
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

ir::Result<std::unique_ptr<cuda::Peers>> join(const nlohmann::json& world,
                                              const cuda::Context& context, cudaStream_t) {
  using R = ir::Result<std::unique_ptr<cuda::Peers>>;
  auto number = [&](const char* key, int64_t fallback) {
    const auto it = world.find(key);
    return it != world.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  const int64_t size = number("size", 1), rank = number("rank", 0);
  const int64_t timeout_ms = number("timeout_ms", 120'000);
  if (size < 1 || rank < 0 || rank >= size || timeout_ms < 1)
    return R::failure("the world's rank " + std::to_string(rank) + " and size " +
                      std::to_string(size) + " do not fit");
  if (cudaError_t e = cudaSetDevice(context.ordinal); e != cudaSuccess)
    return R::failure(cuda::cuda_error(e, "cudaSetDevice"));
  ncclUniqueId id{};
  if (rank == 0)
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      return R::failure(nccl_error(r, "ncclGetUniqueId"));
  if (size > 1) {
    // Rank 0 hands out the id; every rank then says it is there, and each
    // waits for all the others before ncclCommInitRank, which would block
    // forever on a rank that never came.
    const sg_host_store* store = sdk::host_store(sdk::served_host());
    if (!store) return R::failure("the core gives no store (sg_host_store): it is older than 1.1");
    std::vector<char> got;
    if (rank == 0) {
      if (std::string e = store_set(store, "nccl/unique-id", &id, sizeof id); !e.empty())
        return R::failure(e);
    } else {
      if (std::string e = store_get(store, "nccl/unique-id", timeout_ms, got); !e.empty())
        return R::failure(e);
      if (got.size() != sizeof id) return R::failure("the NCCL unique id in the store is malformed");
      std::memcpy(&id, got.data(), sizeof id);
    }
    const std::string here = "nccl/here/" + std::to_string(rank);
    if (std::string e = store_set(store, here, "1", 1); !e.empty()) return R::failure(e);
    for (int64_t k = 0; k < size; ++k)
      if (std::string e = store_get(store, "nccl/here/" + std::to_string(k), timeout_ms, got);
          !e.empty())
        return R::failure("rank " + std::to_string(k) + " did not come: " + e);
  }
  auto peers = std::make_unique<NcclPeers>(int(rank), int(size),
                                           std::chrono::milliseconds(timeout_ms));
  if (std::string e = peers->init(id); !e.empty()) return R::failure(e);
  sdk::log(SG_LOG_DEBUG, "nccl: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                             " on cuda:" + std::to_string(context.ordinal) + ", NCCL " + version());
  return R(std::unique_ptr<cuda::Peers>(std::move(peers)));
}

}  // namespace sexpgpu::nccl
