#include "transport/tcp/context.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/common/mesh_connect.h"
#include "transport/tcp/device.h"
#include "transport/tcp/handshake.h"
#include "transport/wire/frame.h"

namespace poseidon::transport::tcp {

TcpContext::TcpContext(std::shared_ptr<TcpDevice> device, int rank, int size, const std::string& name)
    : Context(rank, size, name), device_(std::move(device)), id_(wire::contextId(name)) {
  pairs_.resize(static_cast<size_t>(size));
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) {
      pairs_[static_cast<size_t>(peer)] =
          std::make_unique<TcpPair>(*this, peer, device_->options(), device_->engine(), device_->sendBudget());
    }
  }
}

TcpContext::~TcpContext() {
  device_->unregisterContext(this);
  pairs_.clear();
}

Result<std::unique_ptr<MemoryRegion>> TcpContext::registerMemory(void* data, size_t length) {
  if (data == nullptr && length > 0) {
    return makeStatus(StatusCode::kInvalidArgument, "cannot register {} bytes at a null address", length);
  }
  auto region = TcpMemoryRegion::create(data, length, device_->options().deviceMemory(), regions_);
  if (!region) return region.status();
  return std::unique_ptr<MemoryRegion>(std::move(*region));
}

bool TcpContext::expectsInbound(int src_rank, int stream, int num_streams) const {
  if (src_rank <= rank() || src_rank >= size()) return false;  // only higher ranks connect to us
  if (num_streams != device_->options().streams || stream < 0 || stream >= num_streams) return false;
  std::lock_guard<std::mutex> lock(inbound_mutex_);
  if (connected_) return false;
  const auto missing = pairs_[static_cast<size_t>(src_rank)]->missingStreams();
  return std::find(missing.begin(), missing.end(), stream) != missing.end();
}

Status TcpContext::attachInbound(int src_rank, int stream, Fd fd, const std::string& peer_address,
                                 const wire::FrameKeys& keys) {
  Status attached;
  {
    std::lock_guard<std::mutex> lock(inbound_mutex_);
    attached = pairs_[static_cast<size_t>(src_rank)]->attachStream(stream, std::move(fd), peer_address, keys, false);
  }
  inbound_cv_.notify_all();
  return attached;
}

Status TcpContext::connectTo(int peer, const std::string& address_text, Deadline deadline) {
  auto host_port = splitHostPort(address_text);
  if (!host_port) return host_port.status().withContext(fmt::format("address of rank {}", peer));
  // A peer publishes the numeric address it listens on: one that does not resolve is corrupt,
  // not late, so it fails here rather than being retried until the deadline.
  auto addresses = resolve(host_port->first, host_port->second);
  if (!addresses) return addresses.status().withContext(fmt::format("address of rank {}", peer));
  const auto& options = device_->options();
  for (int stream = 0; stream < options.streams; ++stream) {
    auto fd = connectWithRetry(host_port->first, host_port->second, deadline);
    if (!fd) return fd.status().withContext(fmt::format("rank {}", peer));
    POSEIDON_RETURN_IF_ERROR(configureDataSocket(fd->get(), options.socket_buffer_bytes));
    const wire::ClientHello hello =
        newClientHello(id_, static_cast<uint32_t>(rank()), static_cast<uint32_t>(peer), static_cast<uint32_t>(stream),
                       static_cast<uint32_t>(options.streams), helloFeatures(options));
    const std::string peer_name = fmt::format("rank {} ({})", peer, address_text);
    const Deadline handshake_deadline(std::min(deadline.at(), Deadline::after(options.handshake_timeout).at()));
    auto keys = clientHandshake(fd->get(), options.secret, hello, handshake_deadline, peer_name);
    if (!keys) return keys.status();
    POSEIDON_RETURN_IF_ERROR(
        pairs_[static_cast<size_t>(peer)]->attachStream(stream, std::move(*fd), address_text, *keys, true));
  }
  return Status::ok();
}

Status TcpContext::waitForInbound(Deadline deadline) {
  std::unique_lock<std::mutex> lock(inbound_mutex_);
  auto missing = [this] {
    std::vector<std::string> out;
    for (int peer = rank() + 1; peer < size(); ++peer) {
      const auto streams = pairs_[static_cast<size_t>(peer)]->missingStreams();
      if (!streams.empty())
        out.push_back(fmt::format("rank {} ({} of {} streams)", peer, streams.size(), device_->options().streams));
    }
    return out;
  };
  while (true) {
    const auto waiting_for = missing();
    if (waiting_for.empty()) {
      connected_ = true;
      return Status::ok();
    }
    if (deadline.isNever()) {
      inbound_cv_.wait(lock);
    } else if (inbound_cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && !missing().empty()) {
      return makeStatus(StatusCode::kTimeout, "context '{}' rank {}: timed out waiting for connections from {}", name(),
                        rank(), fmt::join(missing(), ", "));
    }
  }
}

Status TcpContext::connect(bootstrap::Store& store, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(
      connectToLowerRanks(store, *this, "address", device_->listenAddress(), deadline,
                          [&](int peer, const std::string& address) { return connectTo(peer, address, deadline); }));
  POSEIDON_RETURN_IF_ERROR(waitForInbound(deadline));
  for (auto& pair : pairs_) {
    if (pair) POSEIDON_RETURN_IF_ERROR(pair->activate());
  }
  return Status::ok();
}

Pair& TcpContext::pair(int peer) { return pairOfPeer(pairs_, *this, peer); }

}  // namespace poseidon::transport::tcp
