// The model zoo: the real layer shapes of the networks the papers train and the benchmarks
// price, each checked against its published parameter count (tests/model/zoo_test.cc).
//
// Which variant each is:
//   alexnet              Caffe's bvlc_alexnet, i.e. Krizhevsky et al. 2012 with its two-GPU
//                        groups (conv2, conv4, conv5 in 2 groups), 227 x 227 input: 60,965,224.
//   alexnet-torchvision  torchvision's single-tower AlexNet (64/192/384/256/256 channels, no
//                        groups), 224 x 224: 61,100,840.
//   vgg19, vgg19-22k     Simonyan & Zisserman's configuration E, 1000 or 21841 classes:
//                        143,667,240 and 229,052,817; layer and tensor names as the parameter
//                        server has always used (conv1..conv16, fc6..fc8).
//   googlenet[-aux]      Caffe's bvlc_googlenet (Szegedy et al. 2014, Table 1; biases, no batch
//                        norm), without or with its two auxiliary heads: 6,998,552 / 13,378,280.
//   resnet50             torchvision's ResNet-50 (v1.5: stride on the 3x3 conv), convolutions
//                        without bias, each batch norm its own layer: 25,557,032.
//   inception-v3[-noaux] torchvision's Inception-V3 with / without the auxiliary classifier,
//                        every conv without bias followed by its batch norm layer:
//                        27,161,264 / 23,834,568 ([Poseidon ATC'17] Table 3's "27M").
// Batch norm's running statistics are not parameters and are not listed.
//
// Each model carries the per-worker batch K the papers train it at: [Poseidon ATC'17] Table 3,
// as [Poseidon analysis] section 3 lists it (GoogLeNet 128; Inception-V3, VGG19, VGG19-22K 32;
// ResNet-152 32, which ResNet-50 takes: the papers train no ResNet-50), [Poseidon 2015] Table 2
// for AlexNet (256, either variant).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/model.h"

namespace poseidon::model {

inline constexpr uint64_t kImageNetClasses = 1000;
inline constexpr uint64_t kImageNet22kClasses = 21841;

Model alexnet();
Model alexnetTorchvision();
Model vgg19(uint64_t classes = kImageNetClasses);
Model vgg19_22k();
Model googlenet(bool auxiliary_classifiers = false);
Model resnet50();
Model inceptionV3(bool auxiliary_classifier = true);

// The names the model spec accepts for the zoo, in the order above.
std::vector<std::string> zooNames();
// The zoo model of that name; fails naming it and listing the names.
Result<Model> zooModel(std::string_view name);

}  // namespace poseidon::model
