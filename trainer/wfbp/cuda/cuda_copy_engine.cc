#include "trainer/wfbp/cuda/cuda_copy_engine.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <mutex>
#include <thread>
#include <vector>

namespace poseidon::trainer::cuda {
namespace {

// Clears the runtime's last error too, so a later cudaGetLastError() of the trainer's does not
// see ours.
std::string describe(cudaError_t error) {
  cudaGetLastError();
  return fmt::format("{} ({})", cudaGetErrorName(error), cudaGetErrorString(error));
}

Status check(cudaError_t error, const char* what, size_t slot) {
  if (error == cudaSuccess) return Status::ok();
  return makeStatus(StatusCode::kIoError, "{} for layer slot {} failed: {}", what, slot, describe(error));
}

class CudaCopyQueues final : public CopyQueues {
 public:
  explicit CudaCopyQueues(int device) : device_(device) {}
  ~CudaCopyQueues() override {
    cudaSetDevice(device_);
    for (cudaStream_t stream : streams_) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
    for (const Events& events : events_) {
      for (cudaEvent_t event : {events.computed, events.to_host, events.to_device}) {
        if (event != nullptr) cudaEventDestroy(event);
      }
    }
    cudaGetLastError();
  }

  Status create(size_t slots, size_t streams) {
    POSEIDON_RETURN_IF_ERROR(check(cudaSetDevice(device_), "cudaSetDevice", 0));
    for (size_t s = 0; s < streams; ++s) {
      cudaStream_t stream = nullptr;
      POSEIDON_RETURN_IF_ERROR(check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", s));
      streams_.push_back(stream);
    }
    events_.resize(slots);
    for (size_t slot = 0; slot < slots; ++slot) {
      for (cudaEvent_t* event : {&events_[slot].computed, &events_[slot].to_host, &events_[slot].to_device}) {
        POSEIDON_RETURN_IF_ERROR(
            check(cudaEventCreateWithFlags(event, cudaEventDisableTiming), "cudaEventCreate", slot));
      }
    }
    return Status::ok();
  }

  Status toHostAfterCompute(size_t slot, void* compute_stream, std::span<const CopySpan> copies) override {
    POSEIDON_RETURN_IF_ERROR(checkSlot(slot));
    cudaStream_t copy = stream(slot);
    const Events& events = events_[slot];
    POSEIDON_RETURN_IF_ERROR(check(cudaEventRecord(events.computed, static_cast<cudaStream_t>(compute_stream)),
                                   "recording the backward step's end", slot));
    POSEIDON_RETURN_IF_ERROR(check(cudaStreamWaitEvent(copy, events.computed, 0), "ordering the copy", slot));
    for (const CopySpan& c : copies) {
      POSEIDON_RETURN_IF_ERROR(
          check(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyDeviceToHost, copy), "copying to the host", slot));
    }
    return check(cudaEventRecord(events.to_host, copy), "recording the copy's end", slot);
  }

  Status waitToHost(size_t slot, Deadline deadline) override {
    POSEIDON_RETURN_IF_ERROR(checkSlot(slot));
    return waitEvent(events_[slot].to_host, slot, "to the host", deadline);
  }

  Status toDevice(size_t slot, std::span<const CopySpan> copies) override {
    POSEIDON_RETURN_IF_ERROR(checkSlot(slot));
    cudaStream_t copy = stream(slot);
    for (const CopySpan& c : copies) {
      POSEIDON_RETURN_IF_ERROR(
          check(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyHostToDevice, copy), "copying to the device", slot));
    }
    return check(cudaEventRecord(events_[slot].to_device, copy), "recording the copy's end", slot);
  }

  Status computeAfterToDevice(size_t slot, void* compute_stream) override {
    POSEIDON_RETURN_IF_ERROR(checkSlot(slot));
    return check(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute_stream), events_[slot].to_device, 0),
                 "ordering the forward step after the parameters' copy", slot);
  }

  Status waitToDevice(size_t slot, Deadline deadline) override {
    POSEIDON_RETURN_IF_ERROR(checkSlot(slot));
    return waitEvent(events_[slot].to_device, slot, "to the device", deadline);
  }

 private:
  struct Events {
    cudaEvent_t computed = nullptr, to_host = nullptr, to_device = nullptr;
  };

  Status checkSlot(size_t slot) {
    if (slot >= events_.size()) {
      return makeStatus(StatusCode::kInvalidArgument, "copy slot {}: the engine has {} slots", slot, events_.size());
    }
    // The pipeline's threads call in: the runtime's current device is per thread.
    return check(cudaSetDevice(device_), "cudaSetDevice", slot);
  }
  cudaStream_t stream(size_t slot) const { return streams_[slot % streams_.size()]; }

  // Polls rather than cudaEventSynchronize, so the deadline holds.
  static Status waitEvent(cudaEvent_t event, size_t slot, const char* what, Deadline deadline) {
    for (;;) {
      const cudaError_t state = cudaEventQuery(event);
      if (state == cudaSuccess) return Status::ok();
      if (state != cudaErrorNotReady) return check(state, "a copy", slot);
      if (deadline.expired()) {
        return makeStatus(StatusCode::kTimeout, "copies of layer slot {} {} not done by the deadline", slot, what);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  const int device_;
  std::vector<cudaStream_t> streams_;
  std::vector<Events> events_;
};

class CudaCopyEngine final : public CopyEngine {
 public:
  explicit CudaCopyEngine(int device) : device_(device) {}

  const char* name() const override { return "cuda"; }

  Result<bool> isDeviceMemory(const void* data, size_t bytes) override {
    cudaPointerAttributes attributes{};
    const cudaError_t error = cudaPointerGetAttributes(&attributes, data);
    if (error == cudaErrorInvalidValue) {  // runtimes before 11.0: a pointer they never saw
      cudaGetLastError();
      return false;
    }
    if (error != cudaSuccess) {
      return makeStatus(StatusCode::kIoError, "cudaPointerGetAttributes of {} ({} bytes) failed: {}", data, bytes,
                        describe(error));
    }
    return attributes.type == cudaMemoryTypeDevice;
  }

  Result<void*> allocatePinned(size_t bytes) override {
    void* host = nullptr;
    const cudaError_t error = cudaHostAlloc(&host, bytes == 0 ? 1 : bytes, cudaHostAllocPortable);
    if (error != cudaSuccess) {
      return makeStatus(StatusCode::kIoError, "cudaHostAlloc of {} bytes of pinned staging memory failed: {}", bytes,
                        describe(error));
    }
    return host;
  }
  void freePinned(void* host) override { cudaFreeHost(host); }

  Result<std::unique_ptr<CopyQueues>> createQueues(size_t slots, size_t streams) override {
    if (slots == 0 || streams == 0) {
      return makeStatus(StatusCode::kInvalidArgument, "copy queues for {} slots on {} streams: expected both >= 1",
                        slots, streams);
    }
    auto queues = std::make_unique<CudaCopyQueues>(device_);
    POSEIDON_RETURN_IF_ERROR(queues->create(slots, streams));
    return std::unique_ptr<CopyQueues>(std::move(queues));
  }

 private:
  const int device_;
};

}  // namespace

std::shared_ptr<CopyEngine> makeCudaCopyEngine() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return nullptr;
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return std::make_shared<CudaCopyEngine>(device);
}

}  // namespace poseidon::trainer::cuda
