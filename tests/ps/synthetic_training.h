// Synthetic data-parallel training for the parameter-server tests: a small model whose tensors
// cross chunk boundaries, a gradient that depends on the worker, the clock and the parameters
// (so any parameter difference shows up in later steps), a worker loop that drives a Client in a
// shuffled layer order, and the single-process reference the PS must match bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/chunk_update.h"
#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/chunk_layout.h"
#include "ps/client.h"

namespace poseidon::testing {

// Four layers of two tensors each (weight + bias) of odd sizes; with 4 KiB chunks several layers
// share chunks and one spans many.
// `extra_last_floats` makes fc2.b longer: a rank built differently, for the start-up check.
model::Model syntheticModel(uint64_t extra_last_floats = 0);
void initialParameters(std::span<float> params);
// Worker `worker`'s gradient at `clock` from the parameters it holds.
void syntheticGradient(int worker, uint64_t clock, std::span<const float> params, std::span<float> grads);

struct WorkerRun {
  int worker = 0;
  uint64_t clocks = 0;         // run until every layer's clock reaches this
  uint32_t shuffle_seed = 0;   // varies layer order and small delays between calls
  bool finish = true;          // say goodbye to the servers at the end
  uint64_t continue_from = 0;  // > 0: an earlier call trained up to this clock; go on from it
};
// Trains with `client` (already started) from its start clock up to run.clocks; pulls the final
// parameters. Returns the first failure.
Status trainWorker(ps::Client& client, const WorkerRun& run, Deadline deadline);

// The reference: `workers` gradients per clock summed in rank order, one optimizer step over the
// whole model with grad_scale 1/workers when averaging.
std::vector<float> referenceTraining(const kernels::OptimizerConfig& optimizer, int workers, uint64_t clocks,
                                     bool average = true);

}  // namespace poseidon::testing
