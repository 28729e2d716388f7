#include "ps/region_exchange.h"

#include "transport/bootstrap/region_exchange.h"

namespace poseidon::ps {

using transport::RemoteDescriptor;
using transport::bootstrap::RegionExchange;
using transport::bootstrap::RegionNeeds;

namespace {

// Servers publish their parameters and gradient slots under "<job>/server/<s>", workers their
// parameter buffer under "<job>/worker/<w>" (transport/bootstrap/region_exchange.h).
RegionExchange servers(transport::bootstrap::Store& store, const PsJob& job) {
  return RegionExchange(transport::bootstrap::StoreView(store, job.name).child("server"),
                        {"parameter and gradient-slot regions", "server", "worker and server counts"});
}
RegionExchange workers(transport::bootstrap::Store& store, const PsJob& job) {
  return RegionExchange(transport::bootstrap::StoreView(store, job.name).child("worker"),
                        {"parameter buffer", "worker", "worker and server counts"});
}

// Both sides were started with the same counts; a rank of another job under the same name
// would have other counts (the sizes are checked where the shards are, ps/server.cc).
uint32_t countsFingerprint(const PsJob& job) {
  return (static_cast<uint32_t>(job.workers) << 16) ^ static_cast<uint32_t>(job.servers);
}

}  // namespace

Status publishServerRegions(transport::bootstrap::Store& store, const PsJob& job, int server,
                            const transport::MemoryRegion& params, const transport::MemoryRegion& slots) {
  const RemoteDescriptor both[] = {params.remote(), slots.remote()};
  return servers(store, job).publish(server, countsFingerprint(job), both);
}

Status publishWorkerRegion(transport::bootstrap::Store& store, const PsJob& job, int worker,
                           const transport::MemoryRegion& params) {
  const RemoteDescriptor one[] = {params.remote()};
  return workers(store, job).publish(worker, countsFingerprint(job), one);
}

Result<std::vector<ServerRegions>> fetchServerRegions(transport::bootstrap::Store& store, const PsJob& job,
                                                      Deadline deadline) {
  RegionExchange exchange = servers(store, job);
  const RegionNeeds needs{countsFingerprint(job), {0, 0}};
  std::vector<ServerRegions> regions;
  for (int server = 0; server < job.servers; ++server) {
    auto pair = exchange.fetch(server, needs, deadline);
    if (!pair) return pair.status();
    regions.push_back({pair->descriptors[0], pair->descriptors[1]});
  }
  return regions;
}

Result<std::vector<RemoteDescriptor>> fetchWorkerRegions(transport::bootstrap::Store& store, const PsJob& job,
                                                         Deadline deadline) {
  RegionExchange exchange = workers(store, job);
  const RegionNeeds needs{countsFingerprint(job), {0}};
  std::vector<RemoteDescriptor> regions;
  for (int worker = 0; worker < job.workers; ++worker) {
    auto one = exchange.fetch(worker, needs, deadline);
    if (!one) return one.status();
    regions.push_back(one->descriptors.front());
  }
  return regions;
}

}  // namespace poseidon::ps
