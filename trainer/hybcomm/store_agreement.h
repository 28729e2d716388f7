// Agreement through the bootstrap store: HybComm's decision points need every worker to see the
// same numbers (the element-wise max of every worker's timings). They come every few iterations,
// so a store round trip is cheap enough and needs no connection of its own.
#pragma once

#include <string>

#include "trainer/hybcomm/hybcomm.h"
#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

// An Agree for worker `rank` of `workers`: round r publishes this worker's vector under
// "<scope>/agree/<r>/<rank>" and reads every other's, each within `timeout` (a timeout names the
// worker and the round). Each round leaves P1 small keys in the store (keys are write-once).
// Vectors of another length than this worker's are refused naming the worker.
// `store` must outlive the Agree; a StoreView given as `store` need not (views write to the store under them).
Agree storeAgreement(transport::bootstrap::Store& store, std::string scope, int rank, int workers,
                     std::chrono::milliseconds timeout);

}  // namespace poseidon::trainer
