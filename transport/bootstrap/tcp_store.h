// TcpStore: the client side of the TCP store that rank 0 serves (tcp_store_server.h).
//
// Safe to call from many threads at once: each call borrows an idle connection or opens one
// more, so a thread parked in get() never holds up another thread's add() (barrier needs that).
// A call whose connection fails or times out discards that connection; the next call opens a
// fresh one. Only the first connection is retried (rank 0 may not be listening yet); after that
// a server that is gone is reported as kConnectionError at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {

struct TcpStoreOptions {
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
  TcpStore(std::string host, uint16_t port, TcpStoreOptions options, Fd first);

  // Sends one request and returns the response body, or the server's error for it.
  Result<std::vector<uint8_t>> roundTrip(StoreOp op, const std::string& key, const std::vector<uint8_t>& value,
                                         Deadline deadline);
  Result<Fd> borrowConnection(Deadline deadline);
  void returnConnection(Fd fd);

  const std::string host_;
  const uint16_t port_;
  const std::string address_;
  const TcpStoreOptions options_;
  std::mutex mutex_;
  std::vector<Fd> idle_;  // guarded by mutex_
};

}  // namespace poseidon::transport::bootstrap
