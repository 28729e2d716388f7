#include "trainer/hybcomm/paper_workloads.h"

#include "ps/model_zoo.h"
#include "trainer/hybcomm/googlenet.h"
#include "trainer/hybcomm/layers_from_tensors.h"

namespace poseidon::trainer {

namespace {

Result<Workload> vgg19With(uint64_t classes, std::string name) {
  const std::vector<ps::TensorSpec> tensors = ps::vgg19(classes);
  auto layers = layersFromTensors(tensors);
  if (!layers) return layers.status().withContext(name);
  return Workload{std::move(name), std::move(*layers), kVgg19BatchPerNode};
}

}  // namespace

Result<Workload> vgg19Workload() { return vgg19With(1000, "VGG19"); }

Result<Workload> vgg19_22kWorkload() { return vgg19With(kImageNet22kClasses, "VGG19-22K"); }

Workload googlenetWorkload(bool auxiliary_classifiers) {
  return {auxiliary_classifiers ? "GoogLeNet (with auxiliary heads)" : "GoogLeNet",
          googlenetLayers(auxiliary_classifiers), kGoogLeNetBatchPerNode};
}

}  // namespace poseidon::trainer
