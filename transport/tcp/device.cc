#include "transport/tcp/device.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/common/block_pool.h"
#include "transport/tcp/context.h"
#include "transport/tcp/handshake.h"

namespace poseidon::transport::tcp {

TcpDevice::TcpDevice(const DeviceOptions& options) : options_(options) {}

Result<std::shared_ptr<TcpDevice>> TcpDevice::create(const DeviceOptions& options) {
  POSEIDON_RETURN_IF_ERROR(options.validate());
  if (options.secret.empty()) {
    spdlog::warn("transport: no job secret was given; any process that can reach {} may join", options.address);
  }
  std::shared_ptr<TcpDevice> device(new TcpDevice(options));
  auto listener = listenOn(options.address, options.port, 512);
  if (!listener) return listener.status().withContext("device address");
  auto bound = localAddress(listener->get());
  if (!bound) return bound.status();
  device->listener_ = std::move(*listener);
  device->listen_address_ = *bound;
  device->stop_event_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  try {
    device->engine_ = std::make_unique<ProgressEngine>(options.busy_poll);
    // Operations in flight at once before the hot path reaches the heap (allocation_test).
    constexpr size_t kReservedOperations = 256;
    reserveRequests(kReservedOperations);
    reservePooled<SendOp>(kReservedOperations);
    auto budget = SendBudget::forDevice(options.send_budget_bytes_per_s, options.send_budget_share);
    if (!budget) return budget.status();
    device->send_budget_ = std::move(*budget);
  } catch (const StatusError& e) {
    return e.status();
  }
  device->acceptor_ = std::thread([raw = device.get()] { raw->acceptLoop(); });
  return device;
}

TcpDevice::~TcpDevice() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_event_.get(), &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  // No new handshakes now; wake the ones still waiting on their peers and wait for them.
  std::list<std::unique_ptr<Handshake>> handshakes;
  {
    std::lock_guard<std::mutex> lock(handshakes_mutex_);
    for (auto& handshake : handshakes_) {
      if (handshake->fd >= 0) ::shutdown(handshake->fd, SHUT_RDWR);
    }
    handshakes.swap(handshakes_);
  }
  for (auto& handshake : handshakes) handshake->thread.join();
}

// Clears a handshake's socket from the registry before the socket closes or moves to a context,
// so the destructor never shuts down a descriptor number that has been reused meanwhile.
class TcpDevice::HandshakeRegistration {
 public:
  HandshakeRegistration(TcpDevice& device, Handshake* handshake) : device_(device), handshake_(handshake) {}
  ~HandshakeRegistration() { release(); }
  void release() {
    std::lock_guard<std::mutex> lock(device_.handshakes_mutex_);
    handshake_->fd = -1;
  }

 private:
  TcpDevice& device_;
  Handshake* handshake_;
};

void TcpDevice::reapHandshakesLocked() {
  for (auto it = handshakes_.begin(); it != handshakes_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = handshakes_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<std::shared_ptr<Context>> TcpDevice::createContext(int rank, int size, const std::string& name) {
  if (size < 1 || rank < 0 || rank >= size) {
    return makeStatus(StatusCode::kInvalidArgument, "rank {} and size {}: expected 0 <= rank < size", rank, size);
  }
  auto context = std::make_shared<TcpContext>(shared_from_this(), rank, size, name);
  POSEIDON_RETURN_IF_ERROR(registerContext(context.get()));
  return std::shared_ptr<Context>(context);
}

Status TcpDevice::registerContext(TcpContext* context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  if (!contexts_.emplace(context->id(), context).second) {
    return makeStatus(StatusCode::kInvalidArgument, "a context named '{}' already exists on device {}", context->name(),
                      listenAddress());
  }
  return Status::ok();
}

void TcpDevice::unregisterContext(TcpContext* context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  auto it = contexts_.find(context->id());
  if (it != contexts_.end() && it->second == context) contexts_.erase(it);
}

void TcpDevice::acceptLoop() {
  while (true) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_event_.get(), POLLIN, 0}};
    const int rc = ::poll(fds, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      spdlog::error("transport: acceptor poll failed: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    if (fds[0].revents & POLLIN) {
      Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) {
        if (errno != EAGAIN && errno != EINTR) spdlog::warn("transport: accept failed: {}", std::strerror(errno));
        continue;
      }
      // Each handshake runs on its own thread, so a peer that connects and then stays silent
      // holds up nobody else for the handshake timeout; a flood of them is refused.
      std::lock_guard<std::mutex> lock(handshakes_mutex_);
      reapHandshakesLocked();
      if (handshakes_.size() >= kMaxConcurrentHandshakes) {
        spdlog::warn("transport: refused a connection on {}: {} handshakes already in progress", listenAddress(),
                     kMaxConcurrentHandshakes);
        continue;
      }
      auto handshake = std::make_unique<Handshake>();
      Handshake* raw = handshake.get();
      raw->fd = fd.get();
      handshakes_.push_back(std::move(handshake));
      raw->thread = std::thread([this, raw, fd = std::move(fd)]() mutable {
        handleIncoming(std::move(fd), raw);
        std::lock_guard<std::mutex> done_lock(handshakes_mutex_);
        raw->done = true;
      });
    }
  }
}

void TcpDevice::handleIncoming(Fd socket, Handshake* handshake) {
  Fd fd = std::move(socket);
  HandshakeRegistration registration(*this, handshake);  // destroyed before fd closes
  auto peer = peerAddress(fd.get());
  const std::string peer_text = peer ? peer->toString() : "an unknown peer";
  Status st = configureDataSocket(fd.get(), options_.socket_buffer_bytes);
  if (!st.isOk()) {
    spdlog::warn("transport: refused {}: {}", peer_text, st.toString());
    return;
  }
  auto admit = [this](const wire::ClientHello& hello) {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    auto it = contexts_.find(hello.context_id);
    if (it == contexts_.end()) return wire::Verdict::kUnknownPeer;
    // What the peer will do must be what we do: a sealed and an unsealed side cannot talk.
    if (hello.features != helloFeatures(options_)) return wire::Verdict::kFeatureMismatch;
    const bool expected = static_cast<int>(hello.dst_rank) == it->second->rank() &&
                          it->second->expectsInbound(static_cast<int>(hello.src_rank), static_cast<int>(hello.stream),
                                                     static_cast<int>(hello.num_streams));
    return expected ? wire::Verdict::kAccepted : wire::Verdict::kUnknownPeer;
  };
  auto accepted =
      serverHandshake(fd.get(), options_.secret, Deadline::after(options_.handshake_timeout), peer_text, admit);
  if (!accepted) {
    spdlog::warn("transport: {}", accepted.status().toString());
    return;
  }
  const wire::ClientHello& hello = accepted->hello;
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  auto it = contexts_.find(hello.context_id);
  if (it == contexts_.end()) {
    spdlog::warn("transport: context of {} closed during its handshake", peer_text);
    return;
  }
  registration.release();
  Status attached = it->second->attachInbound(static_cast<int>(hello.src_rank), static_cast<int>(hello.stream),
                                              std::move(fd), peer_text, accepted->keys);
  if (!attached.isOk()) spdlog::warn("transport: refused {}: {}", peer_text, attached.toString());
}

Result<std::shared_ptr<Device>> createTcpDevice(const DeviceOptions& options) {
  auto device = TcpDevice::create(options);
  if (!device) return device.status();
  return std::shared_ptr<Device>(std::move(*device));
}

}  // namespace poseidon::transport::tcp
