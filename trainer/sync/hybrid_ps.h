// The parameter server as the trainer uses it, over one tensor per layer, each layer starting a
// fresh chunk so that a layer can go through the PS in an iteration while its neighbours go
// another way (or wait for nothing but themselves): HybComm's summation service (ps optimizer
// "sum", BSP, no averaging) and, under SSP / async, the servers that run the optimizer
// (ServerOptimizedSync). Workers and servers build the same model and layout from the same layer
// list with these functions.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/layer.h"
#include "model/model.h"
#include "ps/chunk_layout.h"
#include "ps/job.h"
#include "ps/server.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"

namespace poseidon::trainer {

// The model the PS holds: per layer one "other" layer of one tensor, named for it, of its dense
// gradient's floats (FC: M*N). model::formatModelSpec of it is a --model the PS tools accept.
model::Model hybridPsModel(std::span<const model::Layer> layers);
// hybridPsModel's layout: every layer starts a fresh chunk (its layerStarts()).
Result<ps::ChunkLayout> hybridLayout(const model::Model& ps_model, int servers, uint64_t chunk_bytes);
ps::PsJob hybridPsJob(int workers, int servers, const std::string& name);

// A summation server of a HybridSync job named `name` (HybridOptions::name): rank P1 + s of the
// PS context. Every worker and server must be given the same layers, counts and chunk size.
Result<std::unique_ptr<ps::Server>> startSummationServer(transport::Context& context,
                                                         transport::bootstrap::Store& store,
                                                         std::span<const model::Layer> layers, int workers, int servers,
                                                         uint64_t chunk_bytes, const std::string& name,
                                                         Deadline deadline);

// A server of a ServerOptimizedSync job: the same model, layout and job as the summation server,
// `options` (the job's optimizer, consistency, averaging) for what it runs.
Result<std::unique_ptr<ps::Server>> startLayerServer(transport::Context& context, transport::bootstrap::Store& store,
                                                     std::span<const model::Layer> layers, int workers, int servers,
                                                     uint64_t chunk_bytes, const std::string& name,
                                                     const ps::ServerOptions& options, Deadline deadline);

}  // namespace poseidon::trainer
