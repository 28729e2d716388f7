#include "trainer/hybcomm/googlenet.h"

#include <string>

namespace poseidon::trainer {

namespace {

// One inception row of Table 1: output channels of each branch; its input is the previous row's output.
struct Inception {
  const char* name;
  int64_t c1x1, reduce3x3, c3x3, reduce5x5, c5x5, pool_proj;
  int64_t outputs() const { return c1x1 + c3x3 + c5x5 + pool_proj; }
};

// A k x k convolution from `in` to `out` channels, with a bias per output channel.
int64_t convParams(int64_t k, int64_t in, int64_t out) { return k * k * in * out + out; }

int64_t inceptionParams(const Inception& row, int64_t in) {
  return convParams(1, in, row.c1x1) + convParams(1, in, row.reduce3x3) + convParams(3, row.reduce3x3, row.c3x3) +
         convParams(1, in, row.reduce5x5) + convParams(5, row.reduce5x5, row.c5x5) + convParams(1, in, row.pool_proj);
}

// The training-time head after inception `after`: 5x5/3 average pool leaves 4x4, a 1x1 conv to
// 128 channels, FC 128*4*4 -> 1024, then the 1024 -> 1000 classifier.
void appendAuxiliaryHead(std::vector<LayerShape>& layers, const std::string& name, int64_t in) {
  layers.push_back(LayerShape::other(name + "_conv", convParams(1, in, 128)));
  layers.push_back(LayerShape::fullyConnected(name + "_fc", 1024, 128 * 4 * 4, 1024));
  layers.push_back(LayerShape::fullyConnected(name + "_classifier", 1000, 1024, 1000));
}

}  // namespace

std::vector<LayerShape> googlenetLayers(bool auxiliary_classifiers) {
  const Inception rows[] = {
      {"inception_3a", 64, 96, 128, 16, 32, 32},    {"inception_3b", 128, 128, 192, 32, 96, 64},
      {"inception_4a", 192, 96, 208, 16, 48, 64},   {"inception_4b", 160, 112, 224, 24, 64, 64},
      {"inception_4c", 128, 128, 256, 24, 64, 64},  {"inception_4d", 112, 144, 288, 32, 64, 64},
      {"inception_4e", 256, 160, 320, 32, 128, 128}, {"inception_5a", 256, 160, 320, 32, 128, 128},
      {"inception_5b", 384, 192, 384, 48, 128, 128},
  };
  std::vector<LayerShape> layers;
  layers.push_back(LayerShape::other("conv1", convParams(7, 3, 64)));
  layers.push_back(LayerShape::other("conv2", convParams(1, 64, 64) + convParams(3, 64, 192)));
  int64_t channels = 192;
  for (const Inception& row : rows) {
    layers.push_back(LayerShape::other(row.name, inceptionParams(row, channels)));
    channels = row.outputs();
    const std::string name = row.name;
    if (auxiliary_classifiers && name == "inception_4a") appendAuxiliaryHead(layers, "loss1", channels);
    if (auxiliary_classifiers && name == "inception_4d") appendAuxiliaryHead(layers, "loss2", channels);
  }
  // Global 7x7 average pool, dropout, then the classifier on the last module's channels (1024).
  layers.push_back(LayerShape::fullyConnected("classifier", 1000, channels, 1000));
  return layers;
}

}  // namespace poseidon::trainer
