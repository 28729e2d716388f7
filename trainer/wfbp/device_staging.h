// DeviceStaging: the pinned host side of the layers whose buffers a trainer keeps in GPU memory.
//
// The schemes send from and update into host memory (registered once; a NIC that reads GPU
// memory directly is the transport's business, not the pipeline's), so for a device layer the
// pipeline works on pinned host copies and the copy engine moves them:
// - gradientReady(l): the layer's gradient (FC: X and dY) is queued for copying to its staging,
//   ordered after the backward step the trainer queued on its compute stream; the call still
//   returns at once (the GPU is not waited for).
// - the starter waits for that copy before it hands the staging to the sync.
// - the sync updates the layer's host replica (its parameters live in pinned staging); once it
//   completes, the update is queued for copying back to the trainer's parameters.
// - waitForParameters(l): the trainer's stream is made to wait for that copy, so its forward
//   step of l reads the update while the CPU goes on queueing work.
// Host layers pass through untouched. Sized at construction: nothing allocates per iteration.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "trainer/wfbp/copy_engine.h"

namespace poseidon::trainer {

// One layer's buffers in the trainer's memory; sizes in floats.
struct StagedLayerBuffers {
  std::span<float> params;
  std::span<const float> input;            // FC: X
  std::span<const float> output_gradient;  // FC: dY
  std::span<const float> gradient;         // others
};

struct DeviceStagingOptions {
  void* compute_stream = nullptr;  // the trainer's cudaStream_t; nullptr: the default stream
  size_t copy_streams = 2;
};

class DeviceStaging {
 public:
  // Asks the engine which layers live on the device (all of a layer's buffers must agree: the
  // error names the layer and the buffer that does not) and allocates their pinned staging.
  static Result<std::unique_ptr<DeviceStaging>> create(std::shared_ptr<CopyEngine> engine,
                                                       const std::vector<std::string>& names,
                                                       const std::vector<StagedLayerBuffers>& layers,
                                                       const DeviceStagingOptions& options);
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  bool anyOnDevice() const;
  bool onDevice(size_t layer) const { return layers_[layer].on_device; }
  // Where the pipeline and the sync read and write the layer on the host: the pinned staging of a
  // device layer, the trainer's own buffers of a host layer.
  const StagedLayerBuffers& host(size_t layer) const { return layers_[layer].host; }

  // The pipeline's four points (no-ops for a host layer): see the file comment.
  Status gradientToHost(size_t layer);
  Status waitGradient(size_t layer, Deadline deadline);
  Status paramsToDevice(size_t layer);
  Status orderComputeAfterParams(size_t layer);

  // Outside iterations (start, restore): copies every device layer's parameters to the host
  // staging, or back to the device, and waits.
  Status pullParamsToHost(Deadline deadline);
  Status pushParamsToDevice(Deadline deadline);

  const char* engineName() const { return engine_->name(); }

 private:
  struct Layer {
    bool on_device = false;
    StagedLayerBuffers device;  // the trainer's
    StagedLayerBuffers host;    // staging (device layers) or the trainer's (host layers)
    // The staging the gradient copies write (device layers): host's read-only views of it.
    std::span<float> staged_input, staged_output_gradient, staged_gradient;
    std::vector<void*> pinned;  // owned allocations
  };
  DeviceStaging(std::shared_ptr<CopyEngine> engine, DeviceStagingOptions options)
      : engine_(std::move(engine)), options_(options) {}

  std::shared_ptr<CopyEngine> engine_;
  std::unique_ptr<CopyQueues> queues_;  // only when a layer is on the device
  const DeviceStagingOptions options_;
  std::vector<Layer> layers_;
};

}  // namespace poseidon::trainer
