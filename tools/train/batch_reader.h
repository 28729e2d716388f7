// BatchReader: one worker's batches of a training set, as the reference Network takes them
// (K images of floats, K int32 labels), into buffers made once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "trainer/data/image_set.h"
#include "trainer/data/shard.h"

namespace poseidon::tools {

class BatchReader {
 public:
  // Worker `rank` of `workers`, batch K, the shuffle's seed. Fails naming the value when the set
  // holds less than one global batch or the config is out of range.
  static Result<BatchReader> create(const trainer::data::ImageSet& set, const trainer::data::ShardConfig& config);

  // The batch at `position` into images() and labels().
  Status read(trainer::data::Position position);
  std::span<const float> images() const { return images_; }
  std::span<const int32_t> labels() const { return labels_; }
  const trainer::data::EpochSharder& sharder() const { return sharder_; }

 private:
  BatchReader(const trainer::data::ImageSet& set, trainer::data::EpochSharder sharder);

  const trainer::data::ImageSet* set_;
  trainer::data::EpochSharder sharder_;
  std::vector<float> images_;
  std::vector<uint8_t> bytes_;
  std::vector<int32_t> labels_;
};

}  // namespace poseidon::tools
