#include "tools/train/batch_reader.h"

namespace poseidon::tools {

Result<BatchReader> BatchReader::create(const trainer::data::ImageSet& set, const trainer::data::ShardConfig& config) {
  auto sharder = trainer::data::EpochSharder::create(static_cast<uint32_t>(set.size()), config);
  if (!sharder) return sharder.status();
  return BatchReader(set, std::move(*sharder));
}

BatchReader::BatchReader(const trainer::data::ImageSet& set, trainer::data::EpochSharder sharder)
    : set_(&set),
      sharder_(std::move(sharder)),
      images_(sharder_.config().batch * set.pixelsPerImage()),
      bytes_(sharder_.config().batch),
      labels_(sharder_.config().batch) {}

Status BatchReader::read(trainer::data::Position position) {
  auto indices = sharder_.batch(position);
  if (!indices) return indices.status();
  POSEIDON_RETURN_IF_ERROR(set_->gather(*indices, images_, bytes_));
  for (size_t i = 0; i < bytes_.size(); ++i) labels_[i] = bytes_[i];
  return Status::ok();
}

}  // namespace poseidon::tools
