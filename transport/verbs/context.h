// VerbsContext: the queue pairs of one group of ranks over a VerbsDevice.
//
// connect(): like the TCP backend, each rank publishes its rdma_cm address in the store,
// connects to every lower rank (rdma_cm resolves address and route, which picks the GID of the
// netdev carrying the address and the path MTU; DeviceOptions::gid_index overrides the GID, see
// explicit_gid.h) and waits for every higher rank to connect and prove the job secret over the
// new queue pair.
#pragma once

#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/context.h"
#include "transport/verbs/connect_data.h"
#include "transport/verbs/device.h"
#include "transport/verbs/pair.h"

namespace poseidon::transport::verbs {

class VerbsContext final : public Context {
 public:
  VerbsContext(std::shared_ptr<VerbsDevice> device, int rank, int size, const std::string& name);
  ~VerbsContext() override;

  Result<std::unique_ptr<MemoryRegion>> registerMemory(void* data, size_t length) override;
  Status connect(bootstrap::Store& store, Deadline deadline) override;
  Pair& pair(int peer) override;

  uint64_t id() const { return id_; }
  // Engine thread: a connect request from `request.src_rank` arrived on `cm_id`.
  Status acceptPair(const ConnectRequest& request, rdma_cm_id* cm_id);
  // Engine thread: a passive pair finished its handshake (or failed it).
  void notifyInbound() { inbound_cv_.notify_all(); }

 private:
  Status connectTo(int peer, const std::string& address, Deadline deadline);
  Status waitForInbound(Deadline deadline);

  std::shared_ptr<VerbsDevice> device_;
  uint64_t id_;
  std::vector<std::unique_ptr<VerbsPair>> pairs_;
  std::vector<bool> accepted_;
  std::mutex inbound_mutex_;
  std::condition_variable inbound_cv_;
};

}  // namespace poseidon::transport::verbs
