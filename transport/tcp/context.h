// TcpContext: the pairs of one group of ranks over a TcpDevice.
//
// connect(): each rank publishes its device's address in the store, connects `streams` sockets
// to every lower rank and waits for every higher rank to connect to it (through the device's
// acceptor), then hands all sockets to the progress engine.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/context.h"
#include "transport/device.h"
#include "transport/tcp/memory.h"
#include "transport/tcp/pair.h"

namespace poseidon::transport::tcp {

class TcpDevice;

class TcpContext final : public Context {
 public:
  TcpContext(std::shared_ptr<TcpDevice> device, int rank, int size, const std::string& name);
  ~TcpContext() override;

  Result<std::unique_ptr<MemoryRegion>> registerMemory(void* data, size_t length) override;
  Status connect(bootstrap::Store& store, Deadline deadline) override;
  Pair& pair(int peer) override;

  uint64_t id() const { return id_; }
  std::shared_ptr<RegionEntry> findRegion(uint32_t key) const { return regions_->find(key); }

  // Device acceptor: is this hello one we expect? Then take its socket.
  bool expectsInbound(int src_rank, int stream, int num_streams) const;
  Status attachInbound(int src_rank, int stream, Fd fd, const std::string& peer_address, const wire::FrameKeys& keys);

 private:
  Status connectTo(int peer, const std::string& address, Deadline deadline);
  Status waitForInbound(Deadline deadline);

  std::shared_ptr<TcpDevice> device_;
  uint64_t id_;
  std::shared_ptr<RegionRegistry> regions_ = std::make_shared<RegionRegistry>();
  std::vector<std::unique_ptr<TcpPair>> pairs_;  // index = peer rank; null for self
  mutable std::mutex inbound_mutex_;
  std::condition_variable inbound_cv_;
  bool connected_ = false;
};

}  // namespace poseidon::transport::tcp
