// TcpStore: the client side of the TCP store that rank 0 serves (tcp_store_server.h).
//
// Safe to call from many threads at once: each call borrows an idle connection or opens one
// more, so a thread parked in get() never holds up another thread's add() (barrier needs that).
// A call whose connection fails or times out discards that connection; the next call opens a
// fresh one. Connecting waits for rank 0 to come up only the first time; after that a server
// that is gone is reported as kConnectionError at once. Every connection proves the job's secret
// and checks the server's proof before its first request, and every request and response is
// authenticated (store_auth.h). The server closes connections idle past a time-out it announces
// in the hello's reply; a pooled connection idle for half of that is closed here first, so no
// request is ever sent into a closing connection and none is ever sent twice.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_auth.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {

struct TcpStoreOptions {
  std::string secret;  // the job's, as the server was given it
  // Bound on set() and add(), which take no deadline: the server answers them at once, so this
  // only matters when rank 0's host vanished without closing the connection.
  std::chrono::milliseconds io_timeout{60'000};
};

class TcpStore final : public Store {
 public:
  // Connects to host:port, retrying with backoff until the deadline while the server is not
  // there yet (see connectWithRetry); kConnectionError names the address and the last failure.
  static Result<std::unique_ptr<TcpStore>> connect(const std::string& host, uint16_t port, Deadline deadline,
                                                   TcpStoreOptions options = {});

  Status set(const std::string& key, const std::vector<uint8_t>& value) override;
  Result<std::vector<uint8_t>> get(const std::string& key, Deadline deadline) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;

  // The server's address as "host:port".
  const std::string& address() const { return address_; }

 private:
  // One authenticated connection and where its message numbering stands.
  struct Connection {
    Fd fd;
    Sha256Mac session_key{};
    uint64_t sequence = 0;
    Clock::duration retire_after{};  // idle longer than this: closed, not reused
    Clock::time_point idle_since;
  };

  TcpStore(std::string host, uint16_t port, TcpStoreOptions options, Connection first);

  // How an authentication failed, where that decides whether to try again on a new connection.
  enum class Failure {
    kOther,
    kClosedFirst,  // the connection ended before any byte of a reply
    kDisplaced,    // the server dropped us before we authenticated (a flood of new connections)
  };
  // Reads the greeting, sends the hello and checks the server's proof on a fresh connection.
  static Result<Connection> authenticate(Fd fd, const std::string& secret, const std::string& address,
                                         Deadline deadline, Failure& failure);
  // Connects (retrying until the deadline while the server is not up, when `wait_for_server`) and
  // authenticates, again while the server displaces us for newer strangers.
  static Result<Connection> open(const std::string& host, uint16_t port, const std::string& secret, Deadline deadline,
                                 bool wait_for_server);
  // Sends one request and returns the response body, or the server's error for it.
  Result<std::vector<uint8_t>> roundTrip(StoreOp op, const std::string& key, const std::vector<uint8_t>& value,
                                         Deadline deadline);
  // One request and its reply on one connection. An error reply without a valid MAC is believed
  // only as the answer to the hello (the server has no key before it); then kDisplaced when it
  // is kUnavailable.
  // `request` is sealed in place (its MAC appended) and sent in one piece.
  static Result<std::vector<uint8_t>> exchange(Connection& connection, std::vector<uint8_t> request, Deadline deadline,
                                               const std::string& address, Failure& failure);
  Result<Connection> borrowConnection(Deadline deadline);
  void returnConnection(Connection connection);

  const std::string host_;
  const uint16_t port_;
  const std::string address_;
  const TcpStoreOptions options_;
  std::mutex mutex_;
  std::vector<Connection> idle_;  // guarded by mutex_
};

}  // namespace poseidon::transport::bootstrap
