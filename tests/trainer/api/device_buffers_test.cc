// A trainer whose buffers live in "GPU memory" trains bit-identically to one whose buffers are
// host memory: the pipeline stages device layers through pinned host memory on copy streams
// (trainer/wfbp/device_staging.h). No GPU here, so the CUDA engine's CPU twin runs the same
// ordering rules: its copies are delayed, and the "device" buffers are arrays the trainer only
// touches as a GPU trainer's kernels would (written by its backward step before gradientReady,
// read by its forward step after waitForParameters). A pipeline that read the staging before the
// gradient's copy landed, or let the forward step read parameters before theirs did, would train
// on stale values and end with other bits.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "tests/trainer/api/session_job.h"
#include "tests/trainer/api/tiny_cnn.h"
#include "tools/train/batch_reader.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/reference/network_session.h"
#include "trainer/wfbp/thread_copy_engine.h"

namespace poseidon::testing {
namespace {

using trainer::reference::Network;

constexpr int kWorkers = 2;
constexpr size_t kBatch = 8;
constexpr uint64_t kSteps = 30;

// Arrays that count as GPU memory for the twin engine.
class FakeGpu {
 public:
  std::span<float> allocate(size_t floats) {
    std::lock_guard lock(mutex_);
    auto& array = arrays_.emplace_back(floats == 0 ? nullptr : std::make_unique<float[]>(floats), floats);
    return {array.first.get(), floats};
  }
  bool contains(const void* data, size_t bytes) {
    std::lock_guard lock(mutex_);
    const auto* begin = static_cast<const uint8_t*>(data);
    for (const auto& [array, floats] : arrays_) {
      const auto* start = reinterpret_cast<const uint8_t*>(array.get());
      if (begin >= start && begin + bytes <= start + floats * sizeof(float)) return true;
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::unique_ptr<float[]>, size_t>> arrays_;
};

// One layer's "device" buffers, mirrors of the CPU network's.
struct DeviceLayer {
  std::span<float> params, input, output_gradient, gradient;
  std::span<const float> host_input, host_output_gradient;  // where the network's backward writes
};

std::shared_ptr<trainer::CopyEngine> twinEngine(FakeGpu& gpu) {
  trainer::ThreadCopyEngineOptions options;
  options.is_device = [&gpu](const void* data, size_t bytes) { return gpu.contains(data, bytes); };
  options.delay = std::chrono::microseconds(300);
  return std::make_shared<trainer::ThreadCopyEngine>(options);
}

// Registers every layer with device mirrors, and hooks that move the network's values through
// them as a GPU trainer's kernels would.
Result<std::vector<DeviceLayer>> registerOnDevice(trainer::Session& session, Network& network, FakeGpu& gpu) {
  std::vector<DeviceLayer> layers;
  for (size_t l = 0; l < network.parametricCount(); ++l) {
    const model::Layer described = *network.parametric(l).describe();
    DeviceLayer& d = layers.emplace_back();
    d.params = gpu.allocate(network.params(l).size());
    std::memcpy(d.params.data(), network.params(l).data(), d.params.size_bytes());
    trainer::LayerRegistration r;
    r.name = described.name();
    r.kind = described.kind();
    r.fc = described.fc();
    r.conv = described.conv();
    r.params = d.params;
    if (described.isFullyConnected()) {
      POSEIDON_RETURN_IF_ERROR(network.setFactorsOnly(l, true));
      auto factors = network.factors(l);
      if (!factors) return factors.status();
      d.host_input = factors->input;
      d.host_output_gradient = factors->output_gradient;
      d.input = gpu.allocate(factors->input.size());
      d.output_gradient = gpu.allocate(factors->output_gradient.size());
      r.input = d.input;
      r.output_gradient = d.output_gradient;
    } else {
      d.gradient = gpu.allocate(network.grads(l).size());
      r.gradient = d.gradient;
    }
    auto added = session.addLayer(r);
    if (!added) return added.status();
  }
  return layers;
}

trainer::reference::NetworkHooks deviceHooks(trainer::Session& session, Network& network,
                                             std::vector<DeviceLayer>& layers) {
  trainer::reference::NetworkHooks hooks;
  hooks.before_forward = [&](size_t l) {
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
    // The forward "kernel" reads the device parameters.
    std::memcpy(network.params(l).data(), layers[l].params.data(), layers[l].params.size_bytes());
    return Status::ok();
  };
  hooks.gradient_ready = [&](size_t l) {
    // The backward "kernel" wrote its outputs to the device.
    DeviceLayer& d = layers[l];
    if (!d.input.empty()) {
      std::memcpy(d.input.data(), d.host_input.data(), d.input.size_bytes());
      std::memcpy(d.output_gradient.data(), d.host_output_gradient.data(), d.output_gradient.size_bytes());
    } else {
      std::memcpy(d.gradient.data(), network.grads(l).data(), d.gradient.size_bytes());
    }
    return session.gradientReady(l);
  };
  return hooks;
}

using Params = std::vector<std::vector<float>>;

trainer::SessionOptions sessionOptions(FakeGpu* gpu) {
  trainer::SessionOptions options;
  options.job = gpu != nullptr ? "device-buffers" : "host-buffers";
  options.layout = {kWorkers, 1, 0};
  options.batch = kBatch;
  options.optimizer = kernels::parseOptimizer("sgd:lr=0.05,momentum=0.9").value();
  options.chunk_bytes = 64 << 10;  // HybComm's closed form picks SFB for the FC layers, the PS for the conv
  if (gpu != nullptr) options.copy_engine = twinEngine(*gpu);
  return options;
}

// Worker 0's parameters after kSteps, the buffers on the fake device or in host memory.
Params train(bool on_device) {
  FakeGpu gpu;
  Params final_params;
  const std::vector<Status> statuses =
      runSessionJob(sessionOptions(on_device ? &gpu : nullptr), [&](trainer::Session& session, int w) {
        auto network = tinyCnn(kBatch, 100 + static_cast<uint64_t>(w));
        if (!network) return network.status();
        std::vector<DeviceLayer> device;
        if (on_device) {
          auto registered = registerOnDevice(session, *network, gpu);
          if (!registered) return registered.status();
          device = std::move(*registered);
        } else {
          POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
        }
        POSEIDON_RETURN_IF_ERROR(session.start());
        network->setHooks(on_device ? deviceHooks(session, *network, device)
                                    : trainer::reference::sessionHooks(session));
        auto reader = tools::BatchReader::create(
            fashionTrainSet(), {7, kWorkers, static_cast<uint32_t>(w), static_cast<uint32_t>(kBatch)});
        if (!reader) return reader.status();
        trainer::data::Position position;
        for (uint64_t s = 0; s < kSteps; ++s) POSEIDON_RETURN_IF_ERROR(trainStep(*network, session, *reader, position));
        for (size_t l = 0; l < network->parametricCount(); ++l) {
          POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
          std::span<const float> params = on_device ? std::span<const float>(device[l].params) : network->params(l);
          if (w == 0) final_params.emplace_back(params.begin(), params.end());
        }
        return session.finish();
      });
  EXPECT_EQ(failures(statuses), "");
  return final_params;
}

TEST(SessionDeviceBuffers, TrainBitIdenticallyToHostBuffers) {
  const Params host = train(false);
  const Params device = train(true);
  ASSERT_EQ(host.size(), device.size());
  ASSERT_FALSE(host.empty());
  for (size_t l = 0; l < host.size(); ++l) {
    ASSERT_EQ(host[l].size(), device[l].size()) << "layer " << l;
    EXPECT_EQ(0, std::memcmp(host[l].data(), device[l].data(), host[l].size() * sizeof(float)))
        << "layer " << l << " differs between host and device buffers";
  }
}

TEST(SessionDeviceBuffers, LayerWithMixedMemoryFailsStartNamingIt) {
  FakeGpu gpu;
  trainer::SessionOptions options = sessionOptions(&gpu);
  options.layout = {1, 1, 0};
  options.startup_timeout = std::chrono::seconds(3);  // the server waits for a model that never comes
  const std::vector<Status> statuses = runSessionJob(options, [&](trainer::Session& session, int) {
    std::span<float> params = gpu.allocate(10);
    std::vector<float> gradient(10);  // host memory
    trainer::LayerRegistration r;
    r.name = "mixed";
    r.params = params;
    r.gradient = gradient;
    auto added = session.addLayer(r);
    if (!added) return added.status();
    return session.start();
  });
  ASSERT_FALSE(statuses[0].isOk());
  EXPECT_NE(statuses[0].message().find("layer 'mixed': params is GPU memory but gradient is host memory"),
            std::string::npos)
      << statuses[0].toString();
}

}  // namespace
}  // namespace poseidon::testing
