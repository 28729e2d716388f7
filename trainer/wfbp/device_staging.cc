#include "trainer/wfbp/device_staging.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace poseidon::trainer {

namespace {

struct NamedBuffer {
  const char* what;
  const void* data;
  size_t bytes;
};

std::vector<NamedBuffer> namedBuffers(const StagedLayerBuffers& b) {
  return {{"params", b.params.data(), b.params.size_bytes()},
          {"input", b.input.data(), b.input.size_bytes()},
          {"output_gradient", b.output_gradient.data(), b.output_gradient.size_bytes()},
          {"gradient", b.gradient.data(), b.gradient.size_bytes()}};
}

}  // namespace

Result<std::unique_ptr<DeviceStaging>> DeviceStaging::create(std::shared_ptr<CopyEngine> engine,
                                                             const std::vector<std::string>& names,
                                                             const std::vector<StagedLayerBuffers>& layers,
                                                             const DeviceStagingOptions& options) {
  if (!engine) return makeStatus(StatusCode::kInvalidArgument, "device staging without a copy engine");
  if (names.size() != layers.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "device staging of {} layers with {} names", layers.size(),
                      names.size());
  }
  if (options.copy_streams == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "copy_streams 0: expected at least one copy stream");
  }
  std::unique_ptr<DeviceStaging> staging(new DeviceStaging(std::move(engine), options));
  for (size_t l = 0; l < layers.size(); ++l) {
    Layer& layer = staging->layers_.emplace_back();
    layer.device = layers[l];
    layer.host = layers[l];
    const char* first = nullptr;
    for (const NamedBuffer& buffer : namedBuffers(layers[l])) {
      if (buffer.bytes == 0) continue;
      auto on_device = staging->engine_->isDeviceMemory(buffer.data, buffer.bytes);
      if (!on_device) {
        return on_device.status().withContext(fmt::format("layer '{}': telling where {} lives", names[l], buffer.what));
      }
      if (first == nullptr) {
        first = buffer.what;
        layer.on_device = *on_device;
      } else if (*on_device != layer.on_device) {
        return makeStatus(StatusCode::kInvalidArgument,
                          "layer '{}': {} is {} memory but {} is {} memory; a layer's buffers are all on the GPU or "
                          "all in host memory",
                          names[l], first, layer.on_device ? "GPU" : "host", buffer.what, *on_device ? "GPU" : "host");
      }
    }
    if (!layer.on_device) continue;
    // The schemes read and write these on the CPU: pinned, so the copies run asynchronously.
    auto pin = [&](size_t floats) -> Result<float*> {
      if (floats == 0) return static_cast<float*>(nullptr);
      auto host = staging->engine_->allocatePinned(floats * sizeof(float));
      if (!host) return host.status().withContext(fmt::format("staging of layer '{}'", names[l]));
      layer.pinned.push_back(*host);
      return static_cast<float*>(*host);
    };
    auto params = pin(layers[l].params.size());
    if (!params) return params.status();
    auto input = pin(layers[l].input.size());
    if (!input) return input.status();
    auto output_gradient = pin(layers[l].output_gradient.size());
    if (!output_gradient) return output_gradient.status();
    auto gradient = pin(layers[l].gradient.size());
    if (!gradient) return gradient.status();
    layer.staged_input = {*input, layers[l].input.size()};
    layer.staged_output_gradient = {*output_gradient, layers[l].output_gradient.size()};
    layer.staged_gradient = {*gradient, layers[l].gradient.size()};
    layer.host = {
        {*params, layers[l].params.size()}, layer.staged_input, layer.staged_output_gradient, layer.staged_gradient};
  }
  if (staging->anyOnDevice()) {
    auto queues = staging->engine_->createQueues(layers.size(), options.copy_streams);
    if (!queues) return queues.status().withContext("device staging");
    staging->queues_ = std::move(*queues);
  }
  return staging;
}

DeviceStaging::~DeviceStaging() {
  // Copies still queued read or write the staging: they finish first.
  if (queues_) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (!layers_[l].on_device) continue;
      (void)queues_->waitToHost(l, Deadline::after(std::chrono::seconds(10)));
      (void)queues_->waitToDevice(l, Deadline::after(std::chrono::seconds(10)));
    }
  }
  queues_.reset();
  for (Layer& layer : layers_) {
    for (void* host : layer.pinned) engine_->freePinned(host);
  }
}

bool DeviceStaging::anyOnDevice() const {
  return std::any_of(layers_.begin(), layers_.end(), [](const Layer& l) { return l.on_device; });
}

Status DeviceStaging::gradientToHost(size_t layer) {
  const Layer& l = layers_[layer];
  if (!l.on_device) return Status::ok();
  const CopySpan copies[] = {
      {l.staged_input.data(), l.device.input.data(), l.device.input.size_bytes()},
      {l.staged_output_gradient.data(), l.device.output_gradient.data(), l.device.output_gradient.size_bytes()},
      {l.staged_gradient.data(), l.device.gradient.data(), l.device.gradient.size_bytes()}};
  CopySpan nonempty[3];
  size_t count = 0;
  for (const CopySpan& c : copies) {
    if (c.bytes > 0) nonempty[count++] = c;
  }
  return queues_->toHostAfterCompute(layer, options_.compute_stream, std::span<const CopySpan>(nonempty, count));
}

Status DeviceStaging::waitGradient(size_t layer, Deadline deadline) {
  if (!layers_[layer].on_device) return Status::ok();
  return queues_->waitToHost(layer, deadline);
}

Status DeviceStaging::paramsToDevice(size_t layer) {
  const Layer& l = layers_[layer];
  if (!l.on_device) return Status::ok();
  const CopySpan copy{l.device.params.data(), l.host.params.data(), l.host.params.size_bytes()};
  return queues_->toDevice(layer, std::span<const CopySpan>(&copy, 1));
}

Status DeviceStaging::orderComputeAfterParams(size_t layer) {
  if (!layers_[layer].on_device) return Status::ok();
  return queues_->computeAfterToDevice(layer, options_.compute_stream);
}

Status DeviceStaging::pullParamsToHost(Deadline deadline) {
  for (size_t layer = 0; layer < layers_.size(); ++layer) {
    const Layer& l = layers_[layer];
    if (!l.on_device) continue;
    const CopySpan copy{l.host.params.data(), l.device.params.data(), l.device.params.size_bytes()};
    POSEIDON_RETURN_IF_ERROR(queues_->toHostAfterCompute(layer, options_.compute_stream, {&copy, 1}));
    POSEIDON_RETURN_IF_ERROR(queues_->waitToHost(layer, deadline));
  }
  return Status::ok();
}

Status DeviceStaging::pushParamsToDevice(Deadline deadline) {
  for (size_t layer = 0; layer < layers_.size(); ++layer) {
    if (!layers_[layer].on_device) continue;
    POSEIDON_RETURN_IF_ERROR(paramsToDevice(layer));
    POSEIDON_RETURN_IF_ERROR(queues_->waitToDevice(layer, deadline));
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
