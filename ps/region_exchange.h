// Region exchange: servers and workers publish the descriptors of their registered memory in the
// bootstrap store, so each side can write into the other's (gradients into a server's slots,
// parameters into a worker's buffer).
#pragma once

#include <vector>

#include "ps/job.h"
#include "transport/bootstrap/store.h"
#include "transport/memory.h"

namespace poseidon::ps {

struct ServerRegions {
  transport::RemoteDescriptor params;  // the shard's parameters (worker 0 initialises them)
  transport::RemoteDescriptor slots;   // P1 gradient slots, worker p's at p * shard bytes
};

Status publishServerRegions(transport::bootstrap::Store& store, const PsJob& job, int server,
                            const transport::MemoryRegion& params, const transport::MemoryRegion& slots);
Status publishWorkerRegion(transport::bootstrap::Store& store, const PsJob& job, int worker,
                           const transport::MemoryRegion& params);

Result<std::vector<ServerRegions>> fetchServerRegions(transport::bootstrap::Store& store, const PsJob& job,
                                                      Deadline deadline);
Result<std::vector<transport::RemoteDescriptor>> fetchWorkerRegions(transport::bootstrap::Store& store,
                                                                    const PsJob& job, Deadline deadline);

}  // namespace poseidon::ps
