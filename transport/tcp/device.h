// TcpDevice: the TCP backend's Device — a listening socket with an acceptor thread that runs
// the handshake and routes each connection to its context, and the progress engine.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "transport/device.h"
#include "transport/socket.h"
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
  Status registerContext(TcpContext* context);
  void unregisterContext(TcpContext* context);

 private:
  explicit TcpDevice(const DeviceOptions& options);
  void acceptLoop();
  void handleIncoming(Fd fd);

  DeviceOptions options_;
  std::unique_ptr<ProgressEngine> engine_;
  Fd listener_;
  Fd stop_event_;
  SocketAddress listen_address_;
  std::thread acceptor_;
  static constexpr int kMaxConcurrentHandshakes = 256;
  std::atomic<int> handshakes_in_flight_{0};
  std::mutex contexts_mutex_;
  std::map<uint64_t, TcpContext*> contexts_;
};

Result<std::shared_ptr<Device>> createTcpDevice(const DeviceOptions& options);

}  // namespace poseidon::transport::tcp
