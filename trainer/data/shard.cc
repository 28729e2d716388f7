#include "trainer/data/shard.h"

#include <zlib.h>

#include "trainer/data/epoch_shuffle.h"

namespace poseidon::trainer::data {
namespace {

constexpr uint32_t kPositionMagic = 0x534f5050;  // "PPOS" little-endian
constexpr uint32_t kPositionVersion = 1;
constexpr size_t kPositionBytes = 44;

template <typename T>
void putLittle(std::vector<uint8_t>& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

template <typename T>
T getLittle(std::span<const uint8_t> bytes, size_t& offset) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(bytes[offset + i]) << (8 * i);
  offset += sizeof(T);
  return value;
}

uint32_t crcOf(std::span<const uint8_t> bytes) {
  return static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(bytes.size())));
}

Status checkField(const char* field, uint64_t saved, uint64_t expected) {
  if (saved == expected) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "saved data position: {} {}, expected {} (this run's)", field, saved,
                    expected);
}

}  // namespace

EpochSharder::EpochSharder(uint32_t dataset_size, const ShardConfig& config)
    : dataset_size_(dataset_size), config_(config), steps_per_epoch_(dataset_size / globalBatch()) {}

Result<EpochSharder> EpochSharder::create(uint32_t dataset_size, const ShardConfig& config) {
  if (config.workers == 0 || config.batch == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "data shard: {} workers of batch {}, expected both >= 1",
                      config.workers, config.batch);
  }
  if (config.rank >= config.workers) {
    return makeStatus(StatusCode::kInvalidArgument, "data shard: rank {}, expected below {} workers", config.rank,
                      config.workers);
  }
  const uint64_t global = uint64_t{config.workers} * config.batch;
  if (global > dataset_size) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "data shard: global batch {} ({} workers x {}) exceeds the dataset's {} samples", global,
                      config.workers, config.batch, dataset_size);
  }
  return EpochSharder(dataset_size, config);
}

Result<std::span<const uint32_t>> EpochSharder::batch(Position position) {
  if (position.step >= steps_per_epoch_) {
    return makeStatus(StatusCode::kInvalidArgument, "data shard: step {} of epoch {}, expected below {}", position.step,
                      position.epoch, steps_per_epoch_);
  }
  if (cached_epoch_ != position.epoch) {
    permutation_.resize(dataset_size_);
    epochPermutation(config_.seed, position.epoch, std::span<uint32_t>(permutation_));
    cached_epoch_ = position.epoch;
  }
  const uint64_t first = position.step * globalBatch() + uint64_t{config_.rank} * config_.batch;
  return std::span<const uint32_t>(permutation_.data() + first, config_.batch);
}

Position EpochSharder::next(Position position) const {
  if (position.step + 1 < steps_per_epoch_) return {position.epoch, position.step + 1};
  return {position.epoch + 1, 0};
}

std::vector<uint8_t> EpochSharder::save(Position position) const {
  std::vector<uint8_t> out;
  out.reserve(kPositionBytes);
  putLittle(out, kPositionMagic);
  putLittle(out, kPositionVersion);
  putLittle(out, position.epoch);
  putLittle(out, position.step);
  putLittle(out, config_.seed);
  putLittle(out, globalBatch());
  putLittle(out, dataset_size_);
  putLittle(out, crcOf(out));
  return out;
}

Result<Position> EpochSharder::restore(std::span<const uint8_t> bytes) const {
  if (bytes.size() != kPositionBytes) {
    return makeStatus(StatusCode::kInvalidArgument, "saved data position: {} bytes, expected {}", bytes.size(),
                      kPositionBytes);
  }
  size_t offset = 0;
  const auto magic = getLittle<uint32_t>(bytes, offset);
  if (magic != kPositionMagic) {
    return makeStatus(StatusCode::kInvalidArgument, "saved data position: magic 0x{:08x}, expected 0x{:08x}", magic,
                      kPositionMagic);
  }
  const auto version = getLittle<uint32_t>(bytes, offset);
  Position position;
  position.epoch = getLittle<uint64_t>(bytes, offset);
  position.step = getLittle<uint64_t>(bytes, offset);
  const auto seed = getLittle<uint64_t>(bytes, offset);
  const auto global = getLittle<uint32_t>(bytes, offset);
  const auto size = getLittle<uint32_t>(bytes, offset);
  const uint32_t computed = crcOf(bytes.first(offset));
  const auto crc = getLittle<uint32_t>(bytes, offset);
  if (crc != computed) {
    return makeStatus(StatusCode::kInvalidArgument, "saved data position: CRC-32 0x{:08x}, expected 0x{:08x} (corrupt)",
                      crc, computed);
  }
  POSEIDON_RETURN_IF_ERROR(checkField("version", version, kPositionVersion));
  POSEIDON_RETURN_IF_ERROR(checkField("seed", seed, config_.seed));
  POSEIDON_RETURN_IF_ERROR(checkField("global batch", global, globalBatch()));
  POSEIDON_RETURN_IF_ERROR(checkField("dataset size", size, dataset_size_));
  if (position.step >= steps_per_epoch_) {
    return makeStatus(StatusCode::kInvalidArgument, "saved data position: step {}, expected below {} steps per epoch",
                      position.step, steps_per_epoch_);
  }
  return position;
}

}  // namespace poseidon::trainer::data
