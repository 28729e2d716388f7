// The real Fashion-MNIST files (Debian's dataset-fashion-mnist): counts, known labels, the pixel
// range, and the stated normalisation constants against the data itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "trainer/data/fashion_mnist.h"
#include "trainer/data/idx_file.h"

namespace poseidon::trainer::data {
namespace {

bool haveDataset() { return std::filesystem::exists(fashionMnistImagesPath(fashionMnistDir(), Split::kTrain)); }

#define SKIP_WITHOUT_DATASET() \
  if (!haveDataset())          \
  GTEST_SKIP() << "Fashion-MNIST not in " << fashionMnistDir() << " (apt install dataset-fashion-mnist)"

TEST(FashionMnist, TrainSet) {
  SKIP_WITHOUT_DATASET();
  Result<ImageSet> train = loadFashionMnist(Split::kTrain);
  ASSERT_TRUE(train) << train.status().toString();
  EXPECT_EQ(train->size(), 60000u);
  EXPECT_EQ(train->rows(), 28u);
  EXPECT_EQ(train->cols(), 28u);
  EXPECT_EQ(train->pixelBytes().size(), 60000u * 784);
  // The first labels of the training file: ankle boot, T-shirt, T-shirt, dress, T-shirt.
  EXPECT_EQ(train->label(0), 9);
  EXPECT_EQ(train->label(1), 0);
  EXPECT_EQ(train->label(3), 3);
  const auto [lo, hi] = std::minmax_element(train->pixelBytes().begin(), train->pixelBytes().end());
  EXPECT_EQ(*lo, 0);
  EXPECT_EQ(*hi, 255);
  const Normalisation n = kFashionMnistNormalisation;
  EXPECT_FLOAT_EQ(train->normalised(*lo), (0.0f - n.mean) / n.std);
  EXPECT_FLOAT_EQ(train->normalised(*hi), (1.0f - n.mean) / n.std);
  // Every class appears 6000 times in the training set.
  std::vector<int> per_class(10);
  for (uint8_t label : train->labels()) ++per_class[label];
  EXPECT_EQ(per_class, std::vector<int>(10, 6000));
}

TEST(FashionMnist, TestSet) {
  SKIP_WITHOUT_DATASET();
  Result<ImageSet> test = loadFashionMnist(Split::kTest);
  ASSERT_TRUE(test) << test.status().toString();
  EXPECT_EQ(test->size(), 10000u);
  EXPECT_EQ(test->label(0), 9);
  EXPECT_EQ(test->label(1), 2);
}

TEST(FashionMnist, StatedNormalisationIsTheTrainingSetsMeanAndStd) {
  SKIP_WITHOUT_DATASET();
  Result<IdxArray> raw = readIdxGzFile(fashionMnistImagesPath(fashionMnistDir(), Split::kTrain), IdxKind::kImages);
  ASSERT_TRUE(raw) << raw.status().toString();
  double sum = 0, sum_squares = 0;
  for (uint8_t p : raw->values) {
    const double x = p / 255.0;
    sum += x;
    sum_squares += x * x;
  }
  const double mean = sum / static_cast<double>(raw->values.size());
  const double std = std::sqrt(sum_squares / static_cast<double>(raw->values.size()) - mean * mean);
  EXPECT_NEAR(kFashionMnistNormalisation.mean, mean, 1e-6);
  EXPECT_NEAR(kFashionMnistNormalisation.std, std, 1e-6);
}

TEST(FashionMnist, AnotherDirectoryIsNamedInTheError) {
  Result<ImageSet> set = loadFashionMnist(Split::kTest, "/nonexistent/fmnist");
  ASSERT_FALSE(set);
  EXPECT_NE(set.status().message().find("/nonexistent/fmnist/t10k-images-idx3-ubyte.gz"), std::string::npos)
      << set.status().message();
}

}  // namespace
}  // namespace poseidon::trainer::data
