// Fashion-MNIST (Zalando; Debian's dataset-fashion-mnist): 60000 training and 10000 test images
// of 28x28 greyscale pixels in 10 classes, as gzip IDX files.
#pragma once

#include <string>

#include "common/status.h"
#include "trainer/data/image_set.h"

namespace poseidon::trainer::data {

// Where Debian installs the files.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// The training set's pixel mean and standard deviation (population, of p / 255 over all 47040000
// training pixels), stated as constants so that every process, and the test set, normalise
// alike without reading the training set first. tests/trainer/data recomputes them from the files.
inline constexpr Normalisation kFashionMnistNormalisation{0.2860406f, 0.3530242f};

inline constexpr uint32_t kFashionMnistTrainCount = 60000;
inline constexpr uint32_t kFashionMnistTestCount = 10000;

enum class Split { kTrain, kTest };

// $POSEIDON_FASHION_MNIST_DIR when set and not empty, else kFashionMnistDefaultDir.
std::string fashionMnistDir();

// {dir}/train-images-idx3-ubyte.gz, {dir}/t10k-labels-idx1-ubyte.gz, ...
std::string fashionMnistImagesPath(const std::string& dir, Split split);
std::string fashionMnistLabelsPath(const std::string& dir, Split split);

// One split, checked: 28x28, the split's count, labels below 10, normalised as above.
Result<ImageSet> loadFashionMnist(Split split, const std::string& dir = fashionMnistDir());

}  // namespace poseidon::trainer::data
