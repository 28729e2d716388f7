// Inception-V3 as torchvision defines it (Szegedy et al. 2015, "Rethinking the Inception
// Architecture", Figures 5 to 7 and Table 1): each "BasicConv2d" a convolution without bias
// ("<name>.conv") and its batch norm ("<name>.bn"); names and order as torchvision's state dict,
// which is also the forward order (the auxiliary head runs on Mixed_6e's output).
#include <string>

#include "model/zoo.h"
#include "model/zoo_builder.h"

namespace poseidon::model {

using zoo_builder::Activation;
using zoo_builder::ConvOptions;
using zoo_builder::pool;
using zoo_builder::rect;
using zoo_builder::square;
using zoo_builder::Window;

namespace {

constexpr uint64_t kInceptionBatch = 32;  // [Poseidon ATC'17] Table 3

class Builder {
 public:
  // Appends "<name>.conv" and "<name>.bn".
  Activation conv(const std::string& name, Activation in, uint64_t out, const Window& window) {
    const Activation y = zoo_builder::conv(layers, name + ".conv", in, out, window, ConvOptions{.bias = false});
    zoo_builder::batchNorm(layers, name + ".bn", out);
    return y;
  }

  // Figure 5: 1x1, 5x5 and double-3x3 branches and a pooled projection.
  Activation inceptionA(const std::string& n, Activation in, uint64_t pool_features) {
    conv(n + ".branch1x1", in, 64, square(1));
    conv(n + ".branch5x5_2", conv(n + ".branch5x5_1", in, 48, square(1)), 64, square(5, 1, 2));
    Activation d = conv(n + ".branch3x3dbl_1", in, 64, square(1));
    d = conv(n + ".branch3x3dbl_2", d, 96, square(3, 1, 1));
    conv(n + ".branch3x3dbl_3", d, 96, square(3, 1, 1));
    conv(n + ".branch_pool", in, pool_features, square(1));
    return {64 + 64 + 96 + pool_features, in.height, in.width};
  }

  // The grid reduction 35 -> 17.
  Activation inceptionB(const std::string& n, Activation in) {
    const Activation y = conv(n + ".branch3x3", in, 384, square(3, 2));
    Activation d = conv(n + ".branch3x3dbl_1", in, 64, square(1));
    d = conv(n + ".branch3x3dbl_2", d, 96, square(3, 1, 1));
    conv(n + ".branch3x3dbl_3", d, 96, square(3, 2));
    return {384 + 96 + in.channels, y.height, y.width};
  }

  // Figure 6: n x n convolutions factorised into 1x7 and 7x1, `c7` channels inside.
  Activation inceptionC(const std::string& n, Activation in, uint64_t c7) {
    conv(n + ".branch1x1", in, 192, square(1));
    Activation s = conv(n + ".branch7x7_1", in, c7, square(1));
    s = conv(n + ".branch7x7_2", s, c7, rect(1, 7, 0, 3));
    conv(n + ".branch7x7_3", s, 192, rect(7, 1, 3, 0));
    Activation d = conv(n + ".branch7x7dbl_1", in, c7, square(1));
    d = conv(n + ".branch7x7dbl_2", d, c7, rect(7, 1, 3, 0));
    d = conv(n + ".branch7x7dbl_3", d, c7, rect(1, 7, 0, 3));
    d = conv(n + ".branch7x7dbl_4", d, c7, rect(7, 1, 3, 0));
    conv(n + ".branch7x7dbl_5", d, 192, rect(1, 7, 0, 3));
    conv(n + ".branch_pool", in, 192, square(1));
    return {4 * 192, in.height, in.width};
  }

  // The grid reduction 17 -> 8.
  Activation inceptionD(const std::string& n, Activation in) {
    const Activation y = conv(n + ".branch3x3_2", conv(n + ".branch3x3_1", in, 192, square(1)), 320, square(3, 2));
    Activation s = conv(n + ".branch7x7x3_1", in, 192, square(1));
    s = conv(n + ".branch7x7x3_2", s, 192, rect(1, 7, 0, 3));
    s = conv(n + ".branch7x7x3_3", s, 192, rect(7, 1, 3, 0));
    conv(n + ".branch7x7x3_4", s, 192, square(3, 2));
    return {320 + 192 + in.channels, y.height, y.width};
  }

  // Figure 7: the expanded filter bank of the 8 x 8 grid.
  Activation inceptionE(const std::string& n, Activation in) {
    conv(n + ".branch1x1", in, 320, square(1));
    const Activation s = conv(n + ".branch3x3_1", in, 384, square(1));
    conv(n + ".branch3x3_2a", s, 384, rect(1, 3, 0, 1));
    conv(n + ".branch3x3_2b", s, 384, rect(3, 1, 1, 0));
    Activation d = conv(n + ".branch3x3dbl_1", in, 448, square(1));
    d = conv(n + ".branch3x3dbl_2", d, 384, square(3, 1, 1));
    conv(n + ".branch3x3dbl_3a", d, 384, rect(1, 3, 0, 1));
    conv(n + ".branch3x3dbl_3b", d, 384, rect(3, 1, 1, 0));
    conv(n + ".branch_pool", in, 192, square(1));
    return {320 + 2 * 384 + 2 * 384 + 192, in.height, in.width};
  }

  // The auxiliary classifier on the 17 x 17 grid: 5x5 / 3 average pool (17 -> 5), 1x1 conv to
  // 128, 5x5 conv to 768 (5 -> 1), FC 768 -> 1000.
  void auxiliary(Activation in) {
    Activation y = conv("AuxLogits.conv0", pool(in, square(5, 3)), 128, square(1));
    y = conv("AuxLogits.conv1", y, 768, square(5));
    layers.push_back(Layer::fullyConnected("AuxLogits.fc", kImageNetClasses, y.channels, true));
  }

  std::vector<Layer> layers;
};

}  // namespace

Model inceptionV3(bool auxiliary_classifier) {
  Builder b;
  Activation x{3, 299, 299};
  x = b.conv("Conv2d_1a_3x3", x, 32, square(3, 2));     // 149
  x = b.conv("Conv2d_2a_3x3", x, 32, square(3));        // 147
  x = b.conv("Conv2d_2b_3x3", x, 64, square(3, 1, 1));  // 147
  x = pool(x, square(3, 2));                            // 73
  x = b.conv("Conv2d_3b_1x1", x, 80, square(1));
  x = b.conv("Conv2d_4a_3x3", x, 192, square(3));  // 71
  x = pool(x, square(3, 2));                       // 35
  x = b.inceptionA("Mixed_5b", x, 32);
  x = b.inceptionA("Mixed_5c", x, 64);
  x = b.inceptionA("Mixed_5d", x, 64);
  x = b.inceptionB("Mixed_6a", x);  // 17
  x = b.inceptionC("Mixed_6b", x, 128);
  x = b.inceptionC("Mixed_6c", x, 160);
  x = b.inceptionC("Mixed_6d", x, 160);
  x = b.inceptionC("Mixed_6e", x, 192);
  if (auxiliary_classifier) b.auxiliary(x);
  x = b.inceptionD("Mixed_7a", x);  // 8
  x = b.inceptionE("Mixed_7b", x);
  x = b.inceptionE("Mixed_7c", x);
  b.layers.push_back(Layer::fullyConnected("fc", kImageNetClasses, x.channels, true));
  return Model(auxiliary_classifier ? "inception-v3" : "inception-v3-noaux", std::move(b.layers), kInceptionBatch,
               InputShape{3, 299, 299});
}

}  // namespace poseidon::model
