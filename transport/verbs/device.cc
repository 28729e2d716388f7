#include "transport/verbs/device.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/verbs/connect_data.h"
#include "transport/verbs/context.h"
#include "transport/verbs/explicit_gid.h"
#include "transport/verbs/pair.h"

namespace poseidon::transport::verbs {
namespace {

constexpr int kMaxCqEntries = 65536;

Status setNonBlockingFd(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return errnoStatus(StatusCode::kIoError, "fcntl(O_NONBLOCK)");
  }
  return Status::ok();
}

const char* mtuName(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return "256";
    case IBV_MTU_512: return "512";
    case IBV_MTU_1024: return "1024";
    case IBV_MTU_2048: return "2048";
    case IBV_MTU_4096: return "4096";
  }
  return "unknown";
}

}  // namespace

Result<std::shared_ptr<VerbsDevice>> VerbsDevice::create(const DeviceOptions& options) {
  POSEIDON_RETURN_IF_ERROR(options.validate());
  std::shared_ptr<VerbsDevice> d(new VerbsDevice(options));
  d->channel_ = rdma_create_event_channel();
  if (d->channel_ == nullptr) {
    return errnoStatus(StatusCode::kUnavailable,
                       "rdma_create_event_channel (no RDMA devices here? /dev/infiniband/rdma_cm needs rdma_ucm)");
  }
  if (rdma_create_id(d->channel_, &d->listener_, nullptr, RDMA_PS_TCP) != 0) {
    return errnoStatus(StatusCode::kUnavailable, "rdma_create_id");
  }
  auto addresses = resolve(options.address, options.port, /*passive=*/true);
  if (!addresses) return addresses.status().withContext("verbs device address");
  d->bound_ = addresses->front();
  if (rdma_bind_addr(d->listener_, const_cast<sockaddr*>(d->bound_.data())) != 0) {
    return errnoStatus(StatusCode::kUnavailable, "rdma_bind_addr to " + d->bound_.toString());
  }
  d->verbs_ = d->listener_->verbs;
  if (d->verbs_ == nullptr) {
    return makeStatus(StatusCode::kUnavailable,
                      "address {} is not carried by an RDMA device (give the address of a RoCE/IB netdev, e.g. "
                      "after `rdma link add rxe0 type rxe netdev eth0`)",
                      options.address);
  }
  if (rdma_listen(d->listener_, 128) != 0) return errnoStatus(StatusCode::kIoError, "rdma_listen");
  d->listen_address_ = formatHostPort(options.address, ntohs(rdma_get_src_port(d->listener_)));

  d->pd_ = ibv_alloc_pd(d->verbs_);
  d->completion_channel_ = ibv_create_comp_channel(d->verbs_);
  if (d->pd_ == nullptr || d->completion_channel_ == nullptr) {
    return errnoStatus(StatusCode::kIoError, "ibv_alloc_pd/ibv_create_comp_channel");
  }
  ibv_device_attr attr{};
  if (ibv_query_device(d->verbs_, &attr) != 0) return errnoStatus(StatusCode::kIoError, "ibv_query_device");
  // One CQ serves every queue pair of the device: each may have kMaxSendWr + kRingSlots
  // completions outstanding, so size it for as many pairs as the device allows.
  const int cq_entries = std::min(attr.max_cqe, kMaxCqEntries);
  d->max_pairs_ = static_cast<uint32_t>(cq_entries) / (kMaxSendWr + kRingSlots);
  d->cq_ = ibv_create_cq(d->verbs_, cq_entries, nullptr, d->completion_channel_, 0);
  if (d->cq_ == nullptr)
    return errnoStatus(StatusCode::kIoError, fmt::format("ibv_create_cq of {} entries", cq_entries));
  d->max_sge_ = static_cast<uint32_t>(std::min(attr.max_sge, 16));
  ibv_port_attr port{};
  if (ibv_query_port(d->verbs_, d->listener_->port_num, &port) != 0) {
    return errnoStatus(StatusCode::kIoError, "ibv_query_port");
  }
  d->description_ =
      fmt::format("{} port {} (active MTU {}, {}{})", ibv_get_device_name(d->verbs_->device), d->listener_->port_num,
                  mtuName(port.active_mtu), port.state == IBV_PORT_ACTIVE ? "active" : "NOT active",
                  options.gid_index >= 0 ? fmt::format(", GID index {} by gid_index", options.gid_index) : "");
  if (port.state != IBV_PORT_ACTIVE) {
    return makeStatus(StatusCode::kUnavailable, "RDMA port {} is not active", d->description_);
  }
  if (options.gid_index >= 0) {
    // A wrong index fails here, before any peer waits on this rank.
    POSEIDON_RETURN_IF_ERROR(checkGidIndex(d->verbs_, d->listener_->port_num, options.gid_index, d->bound_.data())
                                 .withContext("DeviceOptions::gid_index"));
  }
  POSEIDON_RETURN_IF_ERROR(setNonBlockingFd(d->channel_->fd));
  POSEIDON_RETURN_IF_ERROR(setNonBlockingFd(d->completion_channel_->fd));
  d->wake_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  reserveRequests(256);  // operations in flight at once before the hot path reaches the heap
  d->engine_ = std::thread([raw = d.get()] { raw->run(); });
  spdlog::debug("transport: verbs device {} listening on {}", d->description_, d->listen_address_);
  return d;
}

VerbsDevice::~VerbsDevice() {
  stop_.store(true);
  uint64_t one = 1;
  if (wake_.valid()) [[maybe_unused]]
    ssize_t n = ::write(wake_.get(), &one, sizeof(one));
  if (engine_.joinable()) engine_.join();
  if (cq_) ibv_destroy_cq(cq_);
  if (completion_channel_) ibv_destroy_comp_channel(completion_channel_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (listener_) rdma_destroy_id(listener_);
  if (channel_) rdma_destroy_event_channel(channel_);
}

Result<std::shared_ptr<Context>> VerbsDevice::createContext(int rank, int size, const std::string& name) {
  if (size < 1 || rank < 0 || rank >= size) {
    return makeStatus(StatusCode::kInvalidArgument, "rank {} and size {}: expected 0 <= rank < size", rank, size);
  }
  auto context = std::make_shared<VerbsContext>(shared_from_this(), rank, size, name);
  POSEIDON_RETURN_IF_ERROR(registerContext(context.get()));
  return std::shared_ptr<Context>(context);
}

Status VerbsDevice::registerContext(VerbsContext* context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  if (!contexts_.emplace(context->id(), context).second) {
    return makeStatus(StatusCode::kInvalidArgument, "a context named '{}' already exists on device {}", context->name(),
                      listen_address_);
  }
  return Status::ok();
}

void VerbsDevice::unregisterContext(VerbsContext* context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  auto it = contexts_.find(context->id());
  if (it != contexts_.end() && it->second == context) contexts_.erase(it);
}

Status VerbsDevice::registerPair(uint32_t qp_num, VerbsPair* pair) {
  std::lock_guard<std::mutex> lock(pairs_mutex_);
  if (pairs_.size() >= max_pairs_) {
    return makeStatus(StatusCode::kUnavailable, "device {} serves at most {} queue pairs (its completion queue size)",
                      description_, max_pairs_);
  }
  pairs_[qp_num] = pair;
  pairs_by_id_[pair->cmId()] = pair;
  return Status::ok();
}

void VerbsDevice::unregisterPair(uint32_t qp_num) {
  {
    std::lock_guard<std::mutex> lock(pairs_mutex_);
    if (auto it = pairs_.find(qp_num); it != pairs_.end()) {
      pairs_by_id_.erase(it->second->cmId());
      pairs_.erase(it);
    }
  }
  // The engine thread or a driving waiter may be inside a call into that pair.
  gate_.quiesce([this] {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof(one));
  });
}

bool VerbsDevice::pollCompletions() {
  ibv_wc wcs[32];
  const int n = ibv_poll_cq(cq_, 32, wcs);
  if (n < 0) {
    spdlog::error("transport: ibv_poll_cq on {} failed ({})", description_, n);
    return false;
  }
  for (int i = 0; i < n; ++i) {
    VerbsPair* pair = nullptr;
    {
      std::lock_guard<std::mutex> lock(pairs_mutex_);
      auto it = pairs_.find(wcs[i].qp_num);
      if (it != pairs_.end()) pair = it->second;
    }
    if (pair) pair->onWorkCompletion(wcs[i]);
  }
  return n > 0;
}

void VerbsDevice::drainConnectionEvents() {
  while (true) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel_, &event) != 0) return;  // EAGAIN: nothing pending
    onConnectionEvent(event);
  }
}

void VerbsDevice::onConnectRequest(rdma_cm_event* event) {
  const auto request = ConnectRequest::decode(event->param.conn.private_data, event->param.conn.private_data_len);
  std::string refusal;
  if (!request) {
    refusal = "connect request without Poseidon private data";
  } else {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    auto it = contexts_.find(request->context_id);
    if (it == contexts_.end()) {
      refusal = fmt::format("no context with id 0x{:016x}", request->context_id);
    } else {
      Status st = it->second->acceptPair(*request, event->id);
      if (!st.isOk()) refusal = st.message();
    }
  }
  if (!refusal.empty()) {
    spdlog::warn("transport: refused an RDMA connection on {}: {}", listen_address_, refusal);
    rdma_reject(event->id, nullptr, 0);
    rdma_ack_cm_event(event);
    return;
  }
  rdma_ack_cm_event(event);
}

void VerbsDevice::onConnectionEvent(rdma_cm_event* event) {
  if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    onConnectRequest(event);
    return;
  }
  // By id, not by event->id->qp: a pair with its own QP (explicit GID index) has none there.
  VerbsPair* pair = nullptr;
  if (event->id != nullptr) {
    std::lock_guard<std::mutex> lock(pairs_mutex_);
    auto it = pairs_by_id_.find(event->id);
    if (it != pairs_by_id_.end()) pair = it->second;
  }
  const rdma_cm_event_type type = event->event;
  const int status = event->status;
  rdma_ack_cm_event(event);
  if (pair == nullptr) return;
  // ESTABLISHED needs nothing here: on the accepting side the peer's hello drives the handshake.
  // A peer that disconnects right after its last write (a job's goodbye): that write's completion
  // may still wait in the queue, as the loop also looks at connection events while completions
  // keep coming. Those queued before this event are handled first (at most the queue's depth, 32
  // a poll), or failing the pair would drop them.
  if (type == RDMA_CM_EVENT_DISCONNECTED) {
    for (int polls = cq_->cqe / 32 + 1; polls > 0 && pollCompletions(); --polls) {}
  }
  switch (type) {
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:  // after accepting: the connecting side could not set its QP up
      pair->fail(makeStatus(StatusCode::kConnectionError, "{}: {} (status {})", pair->peerName(), rdma_event_str(type),
                            status));
      break;
    default: break;
  }
}

void VerbsDevice::run() {
  uint64_t loops = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    bool busy = false;
    {
      if (gate_.leaveRequested()) std::this_thread::yield();  // a quiescing thread goes first
      DispatchGate::Turn turn(gate_);
      busy = pollCompletions();
      if (!busy || (++loops & 63) == 0) drainConnectionEvents();
      if (!busy && !options_.busy_poll) {
        // Idle: arm the completion channel and look once more (a completion may have slipped
        // in before arming).
        ibv_req_notify_cq(cq_, 0);
        busy = pollCompletions();
      }
    }
    if (busy || options_.busy_poll) continue;
    // Sleep until a completion, a connection event or a wake-up.
    pollfd fds[3] = {{completion_channel_->fd, POLLIN, 0}, {channel_->fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    ::poll(fds, 3, 100);
    if (fds[0].revents & POLLIN) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (ibv_get_cq_event(completion_channel_, &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
    }
    if (fds[2].revents & POLLIN) {
      uint64_t drained;
      [[maybe_unused]] ssize_t n = ::read(wake_.get(), &drained, sizeof(drained));
    }
  }
}

void VerbsDevice::drive(const Request& request, Deadline deadline) {
  if (options_.busy_poll || stop_.load(std::memory_order_relaxed) || gate_.leaveRequested()) return;
  DispatchGate::Turn turn(gate_, std::try_to_lock);
  if (!turn.owns()) return;
  spin_.spin(
      [&] {
        if (!request.test()) pollCompletions();
        return request.test();
      },
      [&] { return deadline.expired() || gate_.leaveRequested() || stop_.load(std::memory_order_relaxed); });
}

Result<std::shared_ptr<Device>> createVerbsDevice(const DeviceOptions& options) {
  auto device = VerbsDevice::create(options);
  if (!device) return device.status();
  return std::shared_ptr<Device>(std::move(*device));
}

}  // namespace poseidon::transport::verbs
