// The syncers of HybridSync, one per scheme (syncer.h): each owns its scheme's object and ends a
// layer's sync with the same optimizer step on the worker's replica (replica.h).
//
// - PS:   the gradient is pushed to the summation servers (ps optimizer "sum"), the rank-order
//         sum pulled back, then the step;
// - ring: the gradient is summed by ring all-reduce, then the step;
// - Adam: the FC layer's factors go to its Adam server, which sends back the summed gradient;
// - SFB:  the FC layer's factors are broadcast to every peer and each rebuilds sum_p U_p V_p^T and
//         applies the step in one fused pass.
#pragma once

#include <memory>
#include <vector>

#include "adam/adam_worker.h"
#include "ps/client.h"
#include "ring/ring_allreduce.h"
#include "sfb/sf_broadcast.h"
#include "trainer/sync/replica.h"
#include "trainer/sync/syncer.h"

namespace poseidon::trainer {

// `client` serves one tensor per layer (trainer/sync/hybrid_ps.h) and has been initialised.
std::unique_ptr<Syncer> makePsSyncer(std::unique_ptr<ps::Client> client, const ps::ChunkLayout& layout,
                                     Replica& replica);
std::unique_ptr<Syncer> makeRingSyncer(std::unique_ptr<ring::RingAllreduce> ring, Replica& replica);
// `fc_index` maps a layer to its index among the FC layers the scheme object was given.
std::unique_ptr<Syncer> makeAdamSyncer(std::unique_ptr<adam::AdamWorker> adam, std::vector<size_t> fc_index,
                                       Replica& replica);
// Binds the replica's factors of every FC layer to the SFB object's registered send buffer.
Result<std::unique_ptr<Syncer>> makeSfbSyncer(std::unique_ptr<sfb::SfBroadcast> sfb, std::vector<size_t> fc_index,
                                              Replica& replica);

}  // namespace poseidon::trainer
