// TcpDevice: the TCP backend's Device — a listening socket with an acceptor thread that runs
// the handshake and routes each connection to its context, and the progress engine.
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "transport/common/send_budget.h"
#include "transport/common/socket.h"
#include "transport/device.h"
#include "transport/tcp/progress_engine.h"

namespace poseidon::transport::tcp {

class TcpContext;

class TcpDevice final : public Device, public std::enable_shared_from_this<TcpDevice> {
 public:
  static Result<std::shared_ptr<TcpDevice>> create(const DeviceOptions& options);
  ~TcpDevice() override;

  std::string backendName() const override { return "tcp"; }
  std::string listenAddress() const override { return listen_address_.toString(); }
  Result<std::shared_ptr<Context>> createContext(int rank, int size, const std::string& name) override;

  const DeviceOptions& options() const { return options_; }
  ProgressEngine& engine() { return *engine_; }
  SendBudget* sendBudget() { return send_budget_.get(); }  // nullptr: unmetered
  Status registerContext(TcpContext* context);
  void unregisterContext(TcpContext* context);

 private:
  explicit TcpDevice(const DeviceOptions& options);
  void acceptLoop();
  // One accepted connection still in its handshake. The device owns the thread and joins it in
  // its destructor, after shutting the socket down, so no handshake outlives the device (a silent
  // peer would otherwise keep a detached thread running into process exit).
  struct Handshake {
    std::thread thread;
    int fd = -1;        // while registered: the socket the destructor may shut down
    bool done = false;  // the thread has finished and may be joined
  };
  class HandshakeRegistration;
  void handleIncoming(Fd fd, Handshake* handshake);
  void reapHandshakesLocked();

  DeviceOptions options_;
  std::unique_ptr<ProgressEngine> engine_;
  std::unique_ptr<SendBudget> send_budget_;  // DeviceOptions::send_budget_bytes_per_s
  Fd listener_;
  Fd stop_event_;
  SocketAddress listen_address_;
  std::thread acceptor_;
  static constexpr size_t kMaxConcurrentHandshakes = 256;
  std::mutex handshakes_mutex_;
  std::list<std::unique_ptr<Handshake>> handshakes_;
  std::mutex contexts_mutex_;
  std::map<uint64_t, TcpContext*> contexts_;
};

Result<std::shared_ptr<Device>> createTcpDevice(const DeviceOptions& options);

}  // namespace poseidon::transport::tcp
