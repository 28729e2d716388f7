// Each worker's batches of an epoch: its own part of the epoch's seeded permutation, so the
// workers read disjoint data ([Poseidon ATC'17]: every node trains on its own partition of the
// data), reshuffled every epoch.
//
// The layout, on which the equivalence tests rely. With P workers of batch K, G = P * K is the
// global batch and the epoch's permutation perm (epoch_shuffle.h) is cut into global batches:
//
//   steps per epoch         = floor(N / G)            (the last N mod G indices are dropped)
//   step s, worker r's batch = perm[s*G + r*K, s*G + (r+1)*K)
//
// So at step s worker 0's batch, then worker 1's, ... concatenated is exactly the batch that one
// worker with batch G takes at step s, in the same order: 1 worker of batch 4K and 4 workers of
// batch K see the same samples at every step. Over an epoch the workers' batches are disjoint and
// together cover the first steps * G entries of perm.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"

namespace poseidon::trainer::data {

struct ShardConfig {
  uint64_t seed = 0;
  uint32_t workers = 1;  // P
  uint32_t rank = 0;     // r, 0 <= r < P
  uint32_t batch = 1;    // K, per worker per step
};

// Where training is: the next step to run. Saved in a checkpoint so a resumed run continues with
// the same batches.
struct Position {
  uint64_t epoch = 0;
  uint64_t step = 0;  // within the epoch, below stepsPerEpoch()
  bool operator==(const Position&) const = default;
};

class EpochSharder {
 public:
  // Fails when the config is out of range or the dataset holds fewer than one global batch.
  static Result<EpochSharder> create(uint32_t dataset_size, const ShardConfig& config);

  uint64_t stepsPerEpoch() const { return steps_per_epoch_; }
  uint32_t globalBatch() const { return config_.workers * config_.batch; }
  const ShardConfig& config() const { return config_; }

  // This worker's K dataset indices at `position`, valid until the next call. The epoch's
  // permutation is recomputed only when the epoch changes, into memory kept from the first call.
  Result<std::span<const uint32_t>> batch(Position position);

  // The step after `position`, rolling over into the next epoch.
  Position next(Position position) const;

  // A position as 44 bytes (magic, version, epoch, step, and the seed, global batch and dataset
  // size it belongs to, then a CRC-32), and back. restore() checks every field, and that the
  // position belongs to this sharder's seed, global batch and dataset (the number of workers may
  // differ: the global batches are the same), naming the first that differs.
  std::vector<uint8_t> save(Position position) const;
  Result<Position> restore(std::span<const uint8_t> bytes) const;

 private:
  EpochSharder(uint32_t dataset_size, const ShardConfig& config);

  uint32_t dataset_size_ = 0;
  ShardConfig config_;
  uint64_t steps_per_epoch_ = 0;
  std::optional<uint64_t> cached_epoch_;  // the epoch permutation_ holds
  std::vector<uint32_t> permutation_;
};

}  // namespace poseidon::trainer::data
