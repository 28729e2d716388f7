// TcpStoreServer: the key-value store rank 0 serves to the whole job while it starts.
//
// One thread runs an epoll loop over every client, so the server's cost does not grow with a
// thread per rank. A get() of a key not yet set parks that client (the thread goes on serving
// others) and is answered when the key is set. Every request header is checked against the
// limits before anything is allocated; a client that breaks the protocol is disconnected with a
// logged reason and the others are untouched. Destroying the server closes every connection,
// so clients fail with kConnectionError instead of waiting on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace poseidon::transport::bootstrap {

struct TcpStoreServerOptions {
  // A job holds one connection per rank and calling thread; far more than that is a runaway.
  size_t max_clients = 4096;
  // Bound on all values held together, so clients cannot exhaust rank 0's memory.
  size_t max_total_bytes = size_t{1} << 30;
};

class TcpStoreServer {
 public:
  // Binds host:port ("" = every interface, port 0 = an ephemeral port) and starts serving.
  static Result<std::unique_ptr<TcpStoreServer>> start(const std::string& host, uint16_t port,
                                                       TcpStoreServerOptions options = {});
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const { return port_; }
  // The bound address as "host:port", for logs and messages.
  const std::string& address() const { return address_; }

  class Loop;  // the epoll loop and all client state; defined in the .cc

 private:
  TcpStoreServer(std::unique_ptr<Loop> loop, uint16_t port, std::string address);

  std::unique_ptr<Loop> loop_;
  uint16_t port_;
  std::string address_;
  std::thread thread_;
};

}  // namespace poseidon::transport::bootstrap
