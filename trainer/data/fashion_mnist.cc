#include "trainer/data/fashion_mnist.h"

#include <cstdlib>

namespace poseidon::trainer::data {
namespace {

const char* prefixOf(Split split) { return split == Split::kTrain ? "train" : "t10k"; }

}  // namespace

std::string fashionMnistDir() {
  const char* dir = std::getenv("POSEIDON_FASHION_MNIST_DIR");
  return dir != nullptr && *dir != '\0' ? dir : kFashionMnistDefaultDir;
}

std::string fashionMnistImagesPath(const std::string& dir, Split split) {
  return dir + "/" + prefixOf(split) + "-images-idx3-ubyte.gz";
}

std::string fashionMnistLabelsPath(const std::string& dir, Split split) {
  return dir + "/" + prefixOf(split) + "-labels-idx1-ubyte.gz";
}

Result<ImageSet> loadFashionMnist(Split split, const std::string& dir) {
  ImageSetShape shape;
  shape.count = split == Split::kTrain ? kFashionMnistTrainCount : kFashionMnistTestCount;
  return loadImageSet(fashionMnistImagesPath(dir, split), fashionMnistLabelsPath(dir, split), shape,
                      kFashionMnistNormalisation);
}

}  // namespace poseidon::trainer::data
