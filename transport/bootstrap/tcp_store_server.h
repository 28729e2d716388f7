// TcpStoreServer: the key-value store rank 0 serves to the whole job while it starts.
//
// One thread runs an epoll loop over every client, so the server's cost does not grow with a
// thread per rank. A get() of a key not yet set parks that client (the thread goes on serving
// others) and is answered when the key is set. A client must prove the job's secret before any
// request is acted on, and every message after that is authenticated (store_auth.h). Every
// request header is checked against the limits before anything is allocated, and the limits count
// what is really held (store_ledger.h); a set over a limit is refused with a reason and the
// connection stays. A client that breaks the protocol is told why and disconnected; the others
// are untouched. Strangers cannot crowd the job out: connections still to authenticate have their
// own small quota per host (the host's oldest is dropped for its new one) and a short deadline,
// and never count against the limit on authenticated connections.
//
// Destroying the server first lets the ranks finish with it (up to `leave_timeout`): rank 0 may
// pass the job's last barrier and leave before another rank has read the barrier's end, which
// that rank must still be able to read. While leaving, the server serves every request but a get()
// of a key not set, which fails with kConnectionError at once instead of waiting (a rank waiting on
// rank 0 must learn that it left); it closes when the last connection has, or at the time-out,
// and then every connection is closed, so clients fail with kConnectionError instead of waiting on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace poseidon::transport::bootstrap {

struct TcpStoreServerOptions {
  std::string secret;  // the job's; every client proves it (empty: a job run without one)
  // Authenticated connections: a job holds one per rank and calling thread; far more is a runaway.
  size_t max_clients = 4096;
  // Connections that have not authenticated yet, from one host and from all: a new one beyond
  // either limit drops the oldest of that host (or of all) that still has not sent its hello, so
  // a flood from a few hosts displaces only its own connections. A flood from hundreds of hosts
  // can make a rank's connection be dropped too; TcpStore then connects again until its deadline.
  size_t max_pending_per_host = 64;
  size_t max_pending_clients = 256;
  // All entries together, and those one connection set, counted as memory held (store_ledger.h).
  size_t max_total_bytes = size_t{1} << 30;
  size_t max_client_bytes = size_t{256} << 20;
  // A new connection must authenticate within this.
  std::chrono::milliseconds handshake_timeout{10'000};
  // A request (or its response) that stops moving for this long is dropped with its reservation.
  std::chrono::milliseconds request_timeout{30'000};
  // An authenticated connection with no request for this long is closed; TcpStore reconnects.
  std::chrono::milliseconds idle_timeout{600'000};
  // How long destroying the server waits for the authenticated connections to close (0: not at
  // all). A client holds its connections while its Store lives, so a rank still running past rank
  // 0's end delays rank 0's exit by this much at most.
  std::chrono::milliseconds leave_timeout{5'000};
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
