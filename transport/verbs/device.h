// VerbsDevice: the RDMA device that carries the configured address, found through rdma_cm.
//
// It owns the protection domain, one completion queue shared by all queue pairs, the rdma_cm
// listener and the progress engine: a thread that polls the completion queue (spinning when
// busy-polling, otherwise sleeping on the completion channel) and handles connection events.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "transport/common/adaptive_spin.h"
#include "transport/common/dispatch_gate.h"
#include "transport/common/region_registry.h"
#include "transport/common/socket.h"
#include "transport/device.h"

namespace poseidon::transport::verbs {

class VerbsContext;
class VerbsPair;

class VerbsDevice final : public Device, public Progress, public std::enable_shared_from_this<VerbsDevice> {
 public:
  static Result<std::shared_ptr<VerbsDevice>> create(const DeviceOptions& options);
  ~VerbsDevice() override;

  std::string backendName() const override { return "verbs"; }
  std::string listenAddress() const override { return listen_address_; }
  Result<std::shared_ptr<Context>> createContext(int rank, int size, const std::string& name) override;

  const DeviceOptions& options() const { return options_; }
  ibv_context* verbs() const { return verbs_; }
  ibv_pd* pd() const { return pd_; }
  ibv_cq* cq() const { return cq_; }
  rdma_event_channel* eventChannel() const { return channel_; }
  const SocketAddress& boundAddress() const { return bound_; }
  uint32_t maxSge() const { return max_sge_; }
  // Regions of this device's protection domain that are device memory behind host staging, by
  // rkey: a peer's write notice names one (memory.h).
  const std::shared_ptr<RegionRegistry>& stagedRegions() const { return staged_regions_; }
  // "rxe0 port 1 (RoCE v2, GID index 1 ::ffff:10.0.2.15, MTU 1024)": for logs and errors.
  std::string describe() const { return description_; }

  Status registerContext(VerbsContext* context);
  void unregisterContext(VerbsContext* context);
  // Completions for qp_num go to pair; unregister returns once the engine no longer uses it.
  Status registerPair(uint32_t qp_num, VerbsPair* pair);
  void unregisterPair(uint32_t qp_num);
  // Progress: a waiting thread polls the completion queue itself for a while (adaptive spin);
  // the engine thread keeps sleeping on the completion channel and handles what is left.
  void drive(const Request& request, Deadline deadline) override;

 private:
  explicit VerbsDevice(const DeviceOptions& options) : options_(options) {}
  void run();
  bool pollCompletions();
  void drainConnectionEvents();
  void onConnectionEvent(rdma_cm_event* event);
  void onConnectRequest(rdma_cm_event* event);

  DeviceOptions options_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listener_ = nullptr;
  ibv_context* verbs_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* completion_channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint32_t max_sge_ = 1;
  std::shared_ptr<RegionRegistry> staged_regions_ = std::make_shared<RegionRegistry>();
  uint32_t max_pairs_ = 0;
  SocketAddress bound_;
  std::string listen_address_;
  std::string description_;

  Fd wake_;
  std::atomic<bool> stop_{false};
  DispatchGate gate_;  // completions and connection events are handled under it
  AdaptiveSpin spin_;
  std::thread engine_;

  std::mutex contexts_mutex_;  // held while a connect request is routed to its context
  std::map<uint64_t, VerbsContext*> contexts_;
  std::mutex pairs_mutex_;
  std::unordered_map<uint32_t, VerbsPair*> pairs_;           // completions arrive by QP number
  std::unordered_map<rdma_cm_id*, VerbsPair*> pairs_by_id_;  // connection events by rdma_cm id
};

Result<std::shared_ptr<Device>> createVerbsDevice(const DeviceOptions& options);

}  // namespace poseidon::transport::verbs
