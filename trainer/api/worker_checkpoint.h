// A worker's checkpoint: the iteration the next step applies, the trainer's own bytes (its data
// position, its random state) and, in HybComm mode (BSP), where the weights and the optimizer
// state live on the workers, every layer's parameters and optimizer state; under SSP / async the
// servers hold those (trainer/api/server_checkpoint_options.h) and the file has no layers. In
// <dir>/worker-<rank>-<iteration>.ckpt. The file is streamed with a running CRC32C
// (ps/checkpoint's reader and writer) and put in place atomically (ps/checkpoint/durable_file.h).
//
// Layout: magic "PSDNWKCP", version, then what the reader checks against the running job — the
// rank, the number of workers, the model (its spec's CRC and name), the optimizer and its state
// words, the consistency — then the iteration, the trainer's bytes, and each layer's parameters
// and state words.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "model/model.h"

namespace poseidon::trainer {

struct WorkerCheckpointIdentity {
  uint32_t rank = 0;
  uint32_t workers = 1;
  const model::Model* model = nullptr;
  const kernels::OptimizerConfig* optimizer = nullptr;
  std::string consistency;  // ps::Consistency::canonical()
};

// Per layer: its parameters, then its state words (each as many floats, empty when unused).
struct LayerState {
  std::span<float> params;
  std::span<float> state0;
  std::span<float> state1;
};

std::string workerCheckpointPath(const std::string& dir, uint32_t rank, uint64_t iteration);
// The iterations of this rank's complete checkpoints in `dir`, ascending (none when it is
// missing); kIoError naming the directory and the cause when it cannot be read.
Result<std::vector<uint64_t>> readWorkerCheckpointList(const std::string& dir, uint32_t rank);
// The same, best effort (pruning): none when it cannot be read.
std::vector<uint64_t> listWorkerCheckpoints(const std::string& dir, uint32_t rank);

// `dir` as one path whatever way it is spelt ("ckpt", "./ckpt/", "/work/ckpt"), and whether it
// exists yet or not: two spellings of one directory give equal paths.
std::filesystem::path normalizedDirectory(const std::string& dir);

// Of `held` (a rank's iterations), those to remove: every one at or below `floor` but the newest
// `keep` of them; those above it stay. BSP keeps two up to the one just written (a crash while
// the workers write one leaves an iteration every worker has); SSP / async keeps server_checkpoints
// .keep up to the newest clock every server has written (a worker may lack its file of that
// clock, if it crashed before writing it).
std::vector<uint64_t> checkpointsToRemove(std::vector<uint64_t> held, uint64_t floor, size_t keep);

// Writes the file of `iteration` (`layers` empty under SSP / async).
Status writeWorkerCheckpoint(const std::string& dir, const WorkerCheckpointIdentity& id, uint64_t iteration,
                             std::span<const uint8_t> extra, std::span<const LayerState> layers);

// Removes this rank's files of `iterations`.
void removeWorkerCheckpoints(const std::string& dir, uint32_t rank, std::span<const uint64_t> iterations);

// Removes this rank's files of iterations after `iteration` (a resumed run's future is its own).
void removeWorkerCheckpointsAfter(const std::string& dir, uint32_t rank, uint64_t iteration);

// kInvalidArgument naming `dir` and the iterations when it holds `rank`'s checkpoints, for a run
// that did not resume from them and is about to write its own there: the two runs' files side by
// side, a later resume could take an iteration of the old run (the newest every worker has), or
// one worker's old file beside another's new one.
Status refuseAnEarlierRunsWorkerCheckpoints(const std::string& dir, uint32_t rank);

struct RestoredCheckpoint {
  uint64_t iteration = 0;
  std::vector<uint8_t> extra;
};
// Reads into the layers' spans. Errors name the file and the field: missing, truncated, a
// checksum that does not match, or a field of another job ("model_crc is 0x1234, expected ...").
// The spans are written only once the whole file has checked out (it is read twice).
Result<RestoredCheckpoint> readWorkerCheckpoint(const std::string& dir, const WorkerCheckpointIdentity& id,
                                                uint64_t iteration, std::span<const LayerState> layers);

}  // namespace poseidon::trainer
