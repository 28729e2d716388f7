#include "trainer/trace/single_gpu_rate.h"

#include <fmt/format.h>

#include <string_view>

#include "model/zoo.h"

namespace poseidon::trainer::trace {

namespace {

constexpr double kVgg19ImagesPerS = 35.5;

struct PaperRow {
  std::string_view name;
  double images_per_s;
  std::string_view source;
};

constexpr PaperRow kRows[] = {
    {"googlenet", 257, "[Poseidon ATC'17] Figure 5, Titan X, Caffe"},
    {"googlenet-aux", 257, "[Poseidon ATC'17] Figure 5, Titan X, Caffe"},
    {"vgg19", kVgg19ImagesPerS, "[Poseidon ATC'17] Figure 5, Titan X, Caffe"},
    {"vgg19-22k", 34.2, "[Poseidon ATC'17] Figure 5, Titan X, Caffe"},
    {"inception-v3", 43.2, "[Poseidon ATC'17] Figure 6, Titan X, TensorFlow"},
    {"inception-v3-noaux", 43.2, "[Poseidon ATC'17] Figure 6, Titan X, TensorFlow"},
    {"alexnet", 256 / 0.25, "[Poseidon ATC'17] section 2.2: batch 256 in 0.25 s on a Titan X"},
    {"alexnet-torchvision", 256 / 0.25, "[Poseidon ATC'17] section 2.2: batch 256 in 0.25 s on a Titan X"},
};

}  // namespace

Result<SingleGpuRate> paperRate(const model::Model& model) {
  for (const PaperRow& row : kRows) {
    if (row.name == model.name()) return SingleGpuRate{row.images_per_s, std::string(row.source)};
  }
  if (model.name() == "resnet50") {
    // No paper trains ResNet-50 on a Titan X: scale VGG19's rate by the FLOPs one image costs.
    const double vgg19_flops = model::vgg19().forwardFlops();
    const double resnet_flops = model::resnet50().forwardFlops();
    return SingleGpuRate{kVgg19ImagesPerS * vgg19_flops / resnet_flops,
                         fmt::format("derived: VGG19's {} images/s x its forward FLOPs / ResNet-50's ({:.2f}G / "
                                     "{:.2f}G per image)",
                                     kVgg19ImagesPerS, vgg19_flops / 1e9, resnet_flops / 1e9)};
  }
  return makeStatus(StatusCode::kInvalidArgument,
                    "model '{}': the papers give no single-GPU rate for it (known: googlenet, vgg19, vgg19-22k, "
                    "inception-v3, alexnet, resnet50 derived); give its images per second",
                    model.name());
}

}  // namespace poseidon::trainer::trace
