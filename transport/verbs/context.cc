#include "transport/verbs/context.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "transport/common/mesh_connect.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::verbs {
namespace {

constexpr int kResolveTimeoutMs = 5000;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

// An rdma_cm event channel for one outgoing connection, so connect() can wait on its events
// without the engine thread; the id moves to the device's channel once established.
class ConnectChannel {
 public:
  ConnectChannel() : channel_(rdma_create_event_channel()) {}
  ~ConnectChannel() {
    if (channel_) rdma_destroy_event_channel(channel_);
  }
  rdma_event_channel* get() const { return channel_; }

  // Waits for the next event; it must be `expected`, else the status names what came instead.
  // Returns the peer's accept reply (connect_data.h) found in the event: empty when it has none.
  Result<AcceptReply> expect(rdma_cm_event_type expected, Deadline deadline, const std::string& peer) {
    pollfd p{channel_->fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, deadline.remainingMillisForPoll());
    if (rc == 0) {
      return makeStatus(StatusCode::kTimeout, "timed out waiting for {} from {}", rdma_event_str(expected), peer);
    }
    rdma_cm_event* event = nullptr;
    if (rc < 0 || rdma_get_cm_event(channel_, &event) != 0) {
      return errnoStatus(StatusCode::kConnectionError, "rdma_get_cm_event for " + peer);
    }
    const rdma_cm_event_type got = event->event;
    const int status = event->status;
    // Only a connect response carries the peer's reply; other events' param may be unset.
    const auto reply = got == RDMA_CM_EVENT_CONNECT_RESPONSE
                           ? AcceptReply::decode(event->param.conn.private_data, event->param.conn.private_data_len)
                           : std::nullopt;
    rdma_ack_cm_event(event);  // frees the private data: decoded above
    if (got != expected) {
      return makeStatus(StatusCode::kConnectionError, "connecting to {}: expected {}, got {} (status {}{})", peer,
                        rdma_event_str(expected), rdma_event_str(got), status,
                        got == RDMA_CM_EVENT_REJECTED ? ": the peer refused, see its log" : "");
    }
    return reply.value_or(AcceptReply{});
  }

 private:
  rdma_event_channel* channel_;
};

}  // namespace

VerbsContext::VerbsContext(std::shared_ptr<VerbsDevice> device, int rank, int size, const std::string& name)
    : Context(rank, size, name),
      device_(std::move(device)),
      id_(wire::contextId(name)),
      accepted_(static_cast<size_t>(size), false) {
  pairs_.resize(static_cast<size_t>(size));
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) pairs_[static_cast<size_t>(peer)] = std::make_unique<VerbsPair>(*device_, id_, rank, peer);
  }
}

VerbsContext::~VerbsContext() {
  device_->unregisterContext(this);
  pairs_.clear();
}

Result<std::unique_ptr<MemoryRegion>> VerbsContext::registerMemory(void* data, size_t length) {
  if (data == nullptr && length > 0) {
    return makeStatus(StatusCode::kInvalidArgument, "cannot register {} bytes at a null address", length);
  }
  auto region = VerbsMemoryRegion::create(device_->pd(), data, length, kAccess, device_->options().deviceMemory(),
                                          device_->stagedRegions());
  if (!region) return region.status();
  return std::unique_ptr<MemoryRegion>(std::move(*region));
}

Status VerbsContext::acceptPair(const ConnectRequest& request, rdma_cm_id* cm_id) {
  const int src = static_cast<int>(request.src_rank);
  if (static_cast<int>(request.dst_rank) != rank() || src <= rank() || src >= size()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "connect request from rank {} to rank {} in context '{}' (rank {} of {})", src, request.dst_rank,
                      name(), rank(), size());
  }
  {
    std::lock_guard<std::mutex> lock(inbound_mutex_);
    if (accepted_[static_cast<size_t>(src)]) {
      return makeStatus(StatusCode::kInvalidArgument, "rank {} is already connected in context '{}'", src, name());
    }
    accepted_[static_cast<size_t>(src)] = true;
  }
  VerbsPair& pair = *pairs_[static_cast<size_t>(src)];
  // A peer that chose its GID must be addressed there, which rdma_cm's own QP cannot do.
  Status st = pair.createQueuePair(
      cm_id, /*passive=*/true, [this] { notifyInbound(); },
      /*own_qp=*/request.source_gid.has_value());
  rdma_conn_param param{};
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  AcceptReply reply;
  std::array<uint8_t, AcceptReply::kSize> reply_bytes{};
  if (st.isOk() && pair.ownsQueuePair()) {
    // rdma_cm moves only QPs it created: ours must be ready to receive before the peer hears yes.
    auto source = pair.moveToRts(request.source_gid);
    st = source.status();
    if (source) reply.source_gid = *source;
    reply_bytes = reply.encode();
    param.qp_num = pair.qpNum();
    param.srq = 0;
    param.private_data = reply_bytes.data();
    param.private_data_len = static_cast<uint8_t>(reply_bytes.size());
  }
  if (st.isOk() && rdma_accept(cm_id, &param) != 0) st = errnoStatus(StatusCode::kConnectionError, "rdma_accept");
  // This rank will not accept that peer again: the pair carries the cause to waitForInbound().
  if (!st.isOk()) pair.fail(st);
  return st;
}

Status VerbsContext::connectTo(int peer, const std::string& address_text, Deadline deadline) {
  auto host_port = splitHostPort(address_text);
  if (!host_port) return host_port.status().withContext(fmt::format("address of rank {}", peer));
  auto addresses = resolve(host_port->first, host_port->second);
  if (!addresses) return addresses.status().withContext(fmt::format("address of rank {}", peer));
  const std::string peer_name = fmt::format("rank {} ({})", peer, address_text);
  ConnectChannel channel;
  if (channel.get() == nullptr) return errnoStatus(StatusCode::kUnavailable, "rdma_create_event_channel");
  rdma_cm_id* cm_id = nullptr;
  if (rdma_create_id(channel.get(), &cm_id, nullptr, RDMA_PS_TCP) != 0) {
    return errnoStatus(StatusCode::kUnavailable, "rdma_create_id");
  }
  VerbsPair& pair = *pairs_[static_cast<size_t>(peer)];
  pair.setPeerAddress(address_text);
  // Until the QP exists the id is ours to destroy; afterwards the pair owns it.
  auto destroy_if_unowned = [&](Status st) {
    if (pair.cmId() != cm_id) rdma_destroy_id(cm_id);
    return st;
  };
  SocketAddress source = device_->boundAddress();
  reinterpret_cast<sockaddr_in*>(&source.storage)->sin_port = 0;  // any local port (v4 and v6 alike)
  if (rdma_resolve_addr(cm_id, const_cast<sockaddr*>(source.data()), const_cast<sockaddr*>(addresses->front().data()),
                        kResolveTimeoutMs) != 0) {
    return destroy_if_unowned(errnoStatus(StatusCode::kConnectionError, "rdma_resolve_addr to " + peer_name));
  }
  Status st = channel.expect(RDMA_CM_EVENT_ADDR_RESOLVED, deadline, peer_name).status();
  if (!st.isOk()) return destroy_if_unowned(st);
  if (rdma_resolve_route(cm_id, kResolveTimeoutMs) != 0) {
    return destroy_if_unowned(errnoStatus(StatusCode::kConnectionError, "rdma_resolve_route to " + peer_name));
  }
  st = channel.expect(RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, peer_name).status();
  if (!st.isOk()) return destroy_if_unowned(st);
  if (cm_id->verbs != device_->verbs()) {
    return destroy_if_unowned(makeStatus(StatusCode::kUnavailable,
                                         "{} is reached through RDMA device {}, not this device {}", peer_name,
                                         ibv_get_device_name(cm_id->verbs->device), device_->describe()));
  }
  st = pair.createQueuePair(cm_id, /*passive=*/false);
  if (!st.isOk()) return destroy_if_unowned(st);
  ConnectRequest request;
  request.context_id = id_;
  request.src_rank = static_cast<uint32_t>(rank());
  request.dst_rank = static_cast<uint32_t>(peer);
  if (device_->options().gid_index >= 0) {
    auto gid = pair.configuredGid();
    if (!gid) return gid.status();
    request.source_gid = *gid;
  }
  const auto private_data = request.encode();
  rdma_conn_param param{};
  param.private_data = private_data.data();
  param.private_data_len = static_cast<uint8_t>(private_data.size());
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (pair.ownsQueuePair()) {
    param.qp_num = pair.qpNum();
    param.srq = 0;
  }
  if (rdma_connect(cm_id, &param) != 0)
    return errnoStatus(StatusCode::kConnectionError, "rdma_connect to " + peer_name);
  if (pair.ownsQueuePair()) {
    // rdma_cm hands us the peer's answer instead of moving a QP it does not know: move ours to
    // RTS, then tell the peer we are established.
    auto reply = channel.expect(RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, peer_name);
    if (!reply) return reply.status();
    auto moved = pair.moveToRts(reply->source_gid);
    if (!moved) {
      rdma_reject(cm_id, nullptr, 0);  // the peer accepted: tell it now rather than at its deadline
      return moved.status();
    }
    if (rdma_establish(cm_id) != 0) return errnoStatus(StatusCode::kConnectionError, "rdma_establish to " + peer_name);
  } else {
    POSEIDON_RETURN_IF_ERROR(channel.expect(RDMA_CM_EVENT_ESTABLISHED, deadline, peer_name).status());
  }
  // From now on the engine thread sees this id's events (a disconnect, above all).
  if (rdma_migrate_id(cm_id, device_->eventChannel()) != 0) {
    return errnoStatus(StatusCode::kInternal, "rdma_migrate_id for " + peer_name);
  }
  return pair.clientHandshake(device_->options().secret, deadline);
}

Status VerbsContext::waitForInbound(Deadline deadline) {
  std::unique_lock<std::mutex> lock(inbound_mutex_);
  auto missing = [this] {
    std::vector<std::string> out;
    for (int peer = rank() + 1; peer < size(); ++peer) {
      VerbsPair& p = *pairs_[static_cast<size_t>(peer)];
      if (!p.ready()) {
        out.push_back(p.failed() ? fmt::format("rank {} ({})", peer, p.status().message())
                                 : fmt::format("rank {}", peer));
      }
    }
    return out;
  };
  while (true) {
    auto waiting_for = missing();
    if (waiting_for.empty()) return Status::ok();
    if (inbound_cv_.wait_until(lock, std::min(deadline.at(), Clock::now() + std::chrono::milliseconds(50))) ==
            std::cv_status::timeout &&
        deadline.expired()) {
      return makeStatus(StatusCode::kTimeout, "context '{}' rank {}: timed out waiting for connections from {}", name(),
                        rank(), fmt::join(missing(), ", "));
    }
  }
}

Status VerbsContext::connect(bootstrap::Store& store, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(
      connectToLowerRanks(store, *this, "verbs-address", device_->listenAddress(), deadline,
                          [&](int peer, const std::string& address) { return connectTo(peer, address, deadline); }));
  return waitForInbound(deadline);
}

Pair& VerbsContext::pair(int peer) { return pairOfPeer(pairs_, *this, peer); }

}  // namespace poseidon::transport::verbs
