#include "tools/train/evaluate.h"

#include <algorithm>
#include <vector>

namespace poseidon::tools {

Result<Accuracy> evaluate(trainer::reference::Network& network, const trainer::data::ImageSet& set) {
  const size_t batch = network.batch(), classes = network.classes(), pixels = set.pixelsPerImage();
  std::vector<uint32_t> indices(batch);
  std::vector<float> images(batch * pixels);
  std::vector<uint8_t> bytes(batch);
  std::vector<int32_t> labels(batch);
  Accuracy accuracy;
  network.setHooks({});
  for (size_t first = 0; first < set.size(); first += batch) {
    const size_t valid = std::min(batch, set.size() - first);
    for (size_t i = 0; i < batch; ++i)
      indices[i] = static_cast<uint32_t>(i < valid ? first + i : (i - valid) % set.size());
    if (Status s = set.gather(indices, images, bytes); !s) return s;
    std::copy(bytes.begin(), bytes.end(), labels.begin());
    auto loss = network.forward(images, labels);
    if (!loss) return loss.status();
    const std::span<const float> logits = network.logits();
    for (size_t i = 0; i < valid; ++i) {
      const auto row = logits.subspan(i * classes, classes);
      const auto predicted = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
      accuracy.correct += predicted == labels[i] ? 1 : 0;
    }
    accuracy.total += valid;
  }
  return accuracy;
}

}  // namespace poseidon::tools
