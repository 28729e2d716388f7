// The single-GPU training rates a trace model's compute time comes from: what one NVIDIA Titan X
// (Maxwell) trains per second at the papers' per-worker batch, so a trace model's worker "computes"
// as long as the papers' GPU did (trainer/trace/trace_model.h).
//
//   googlenet[-aux]        257 images/s   [Poseidon ATC'17] Figure 5 (Caffe), as [Poseidon analysis] 5.1 lists it
//   vgg19                  35.5           the same
//   vgg19-22k              34.2           the same
//   inception-v3[-noaux]   43.2           [Poseidon ATC'17] Figure 6 (TensorFlow), [Poseidon analysis] 5.2
//   alexnet[-torchvision]  1024           [Poseidon ATC'17] section 2.2: batch 256 in 0.25 s per iteration
//                                         ([Poseidon analysis] section 2)
//   resnet50               derived        no paper trains ResNet-50: VGG19's 35.5 images/s times VGG19's
//                                         forward FLOPs over ResNet-50's (the same GPU at the same
//                                         efficiency), about 170 images/s
#pragma once

#include <string>

#include "common/status.h"
#include "model/model.h"

namespace poseidon::trainer::trace {

struct SingleGpuRate {
  double images_per_s = 0;
  std::string source;  // where the figure comes from, for the tool's report
};

// The rate of a zoo model (by Model::name(), whatever its batch). Fails naming the model for one
// the papers give no rate for (a custom model: the caller gives its rate).
Result<SingleGpuRate> paperRate(const model::Model& model);

}  // namespace poseidon::trainer::trace
