// LayerKit: how a network's layers and its loss are made, and in which memory they live. The
// reference kit makes the CPU layers; the CUDA kit (cuda/layer_kit_cuda.h) their GPU twins on one
// GpuContext. A network described once (fashion_cnn.h) is then built from either, with the same
// parameter layout, so the same seed gives both the same parameters.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "common/status.h"
#include "trainer/reference/classifier_loss.h"
#include "trainer/reference/conv2d.h"
#include "trainer/reference/float_memory.h"
#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

struct LayerKit {
  using Made = Result<std::unique_ptr<Layer>>;

  std::function<Made(std::string name, size_t batch, SampleShape input, Conv2dOptions options)> conv;
  std::function<Made(std::string name, size_t batch, SampleShape shape)> relu;
  std::function<Made(std::string name, size_t batch, SampleShape input, size_t window)> pool;
  std::function<Made(std::string name, size_t batch, SampleShape input, size_t outputs)> fc;
  std::function<Result<std::unique_ptr<ClassifierLoss>>(size_t batch, size_t classes)> loss;
  // Where all of them live; must outlive what the kit makes.
  const FloatMemory* memory = &hostMemory();
};

// Conv2d, Relu, MaxPool2d, FullyConnected and SoftmaxCrossEntropy in host memory.
LayerKit referenceKit();

// A made layer as the kit's Layer (a Result of a derived pointer does not convert by itself).
template <typename T>
LayerKit::Made asLayer(Result<std::unique_ptr<T>> made) {
  if (!made.isOk()) return made.status();
  return std::unique_ptr<Layer>(std::move(made).value());
}

}  // namespace poseidon::trainer::reference
