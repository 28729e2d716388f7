// GoogLeNet as Caffe's bvlc_googlenet defines it (Szegedy et al., "Going deeper with
// convolutions", 2014, Table 1): every convolution with a bias, no batch norm, layer names as in
// its train_val.prototxt. The channel columns of Table 1 are what is transcribed: its own
// "params" column disagrees with them for several rows (4c: 463K printed, 498K computed).
#include <string>

#include "model/zoo.h"
#include "model/zoo_builder.h"

namespace poseidon::model {

using zoo_builder::Activation;
using zoo_builder::conv;
using zoo_builder::pool;
using zoo_builder::square;

namespace {

constexpr uint64_t kGoogLeNetBatch = 128;  // [Poseidon ATC'17] Table 3

// One inception row of Table 1: the output channels of each branch.
struct Inception {
  const char* name;
  uint64_t c1x1, reduce3x3, c3x3, reduce5x5, c5x5, pool_proj;
};

Activation appendInception(std::vector<Layer>& layers, const Inception& row, Activation in) {
  const std::string name = row.name;
  conv(layers, name + "/1x1", in, row.c1x1, square(1));
  const Activation reduce3 = conv(layers, name + "/3x3_reduce", in, row.reduce3x3, square(1));
  conv(layers, name + "/3x3", reduce3, row.c3x3, square(3, 1, 1));
  const Activation reduce5 = conv(layers, name + "/5x5_reduce", in, row.reduce5x5, square(1));
  conv(layers, name + "/5x5", reduce5, row.c5x5, square(5, 1, 2));
  conv(layers, name + "/pool_proj", in, row.pool_proj, square(1));  // after a 3x3 / 1 max pool
  return {row.c1x1 + row.c3x3 + row.c5x5 + row.pool_proj, in.height, in.width};
}

// The training-time head after inception `after`: a 5x5 / 3 average pool (14 -> 4), a 1x1 conv
// to 128 channels, FC 128 x 4 x 4 -> 1024, then its own 1024 -> 1000 classifier.
void appendAuxiliaryHead(std::vector<Layer>& layers, const std::string& name, Activation in) {
  const Activation pooled = pool(in, square(5, 3), true);
  const Activation reduced = conv(layers, name + "/conv", pooled, 128, square(1));
  layers.push_back(Layer::fullyConnected(name + "/fc", 1024, reduced.channels * reduced.height * reduced.width, true));
  layers.push_back(Layer::fullyConnected(name + "/classifier", kImageNetClasses, 1024, true));
}

}  // namespace

Model googlenet(bool auxiliary_classifiers) {
  const Inception rows[] = {
      {"inception_3a", 64, 96, 128, 16, 32, 32},     {"inception_3b", 128, 128, 192, 32, 96, 64},
      {"inception_4a", 192, 96, 208, 16, 48, 64},    {"inception_4b", 160, 112, 224, 24, 64, 64},
      {"inception_4c", 128, 128, 256, 24, 64, 64},   {"inception_4d", 112, 144, 288, 32, 64, 64},
      {"inception_4e", 256, 160, 320, 32, 128, 128}, {"inception_5a", 256, 160, 320, 32, 128, 128},
      {"inception_5b", 384, 192, 384, 48, 128, 128},
  };
  std::vector<Layer> layers;
  Activation x{3, 224, 224};
  x = conv(layers, "conv1/7x7_s2", x, 64, square(7, 2, 3));
  x = pool(x, square(3, 2), true);
  x = conv(layers, "conv2/3x3_reduce", x, 64, square(1));
  x = conv(layers, "conv2/3x3", x, 192, square(3, 1, 1));
  x = pool(x, square(3, 2), true);
  for (const Inception& row : rows) {
    x = appendInception(layers, row, x);
    const std::string name = row.name;
    if (auxiliary_classifiers && name == "inception_4a") appendAuxiliaryHead(layers, "loss1", x);
    if (auxiliary_classifiers && name == "inception_4d") appendAuxiliaryHead(layers, "loss2", x);
    // Max pools 3 / 2 after 3b and 4e.
    if (name == "inception_3b" || name == "inception_4e") x = pool(x, square(3, 2), true);
  }
  // A 7x7 average pool and dropout, then the classifier on 5b's 1024 channels.
  layers.push_back(Layer::fullyConnected("loss3/classifier", kImageNetClasses, x.channels, true));
  return Model(auxiliary_classifiers ? "googlenet-aux" : "googlenet", std::move(layers), kGoogLeNetBatch,
               InputShape{3, 224, 224});
}

}  // namespace poseidon::model
