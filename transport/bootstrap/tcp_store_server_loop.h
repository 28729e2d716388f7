// The TCP store server's event loop and per-client state, shared by tcp_store_server.cc (the
// loop, connections coming and going, time-outs) and tcp_store_server_requests.cc (reading,
// checking and answering requests). Private to the server.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/deadline.h"
#include "transport/bootstrap/store_auth.h"
#include "transport/bootstrap/store_ledger.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/bootstrap/tcp_store_server.h"
#include "transport/common/fd.h"

namespace poseidon::transport::bootstrap::store_server {

// epoll tokens: the listener and the stop event, then one per client, never reused, so a
// stale event for a client closed earlier in the same batch finds nothing.
constexpr uint64_t kListenToken = 0;
constexpr uint64_t kWakeToken = 1;
constexpr uint64_t kFirstClientToken = 2;
constexpr int kMaxEvents = 64;
// Reads per readiness event, so one client uploading a large value does not starve the rest.
constexpr int kMaxReadsPerEvent = 16;
// A body buffer grows with the bytes that actually arrived, never straight to the size a header
// claims: a thousand clients each announcing 64 MiB and sending nothing cost nothing.
constexpr size_t kFirstBodyChunk = 64 << 10;
// Below the per-host quota of connections still to authenticate, so one batch cannot displace
// the connections of an earlier one before their hellos are read.
constexpr int kMaxAcceptsPerEvent = 8;
// When accept() fails for lack of descriptors the listener stays readable; pausing it keeps the
// loop from spinning while connections close.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// How often the time-outs are checked: they are seconds long and need no finer grain.
constexpr auto kSweepPeriod = std::chrono::milliseconds(250);

// A client is always in exactly one phase; it sends its next request only after our response.
enum class Phase {
  kHeader,   // reading the fixed request header
  kBody,     // reading key and value, sized from the validated header
  kMac,      // reading the request's MAC
  kParked,   // a get() of a key not set yet; answered from wakeWaiters()
  kWriting,  // the response did not fit in the socket buffer; waiting for EPOLLOUT
};

struct Client {
  uint64_t token = 0;
  Fd fd;
  std::string peer;  // host:port
  std::string host;  // the peer's address alone: the unit of the pending quota
  Phase phase = Phase::kHeader;
  uint32_t interest = 0;
  bool closing = false;
  bool close_after_write = false;  // the response is a refusal; the connection ends with it
  Clock::time_point accepted_at;
  Clock::time_point last_activity;  // the last byte moved either way

  bool authenticated = false;
  bool has_key = false;  // the hello's nonce arrived, so responses can carry a MAC
  StoreNonce server_nonce{};
  Sha256Mac session_key{};
  uint64_t sequence = 0;  // of the request being served; its response carries the same

  std::array<uint8_t, kRequestHeaderBytes> header_bytes{};
  size_t header_got = 0;
  RequestHeader header;
  std::optional<StoreMessageMac> request_mac;  // fed as the body arrives
  std::vector<uint8_t> body;                   // holds body_got bytes received; grows towards body_expected
  size_t body_got = 0;
  size_t body_expected = 0;
  // A set refused at its header: its body is read and dropped (the MAC still checked), then this
  // is the answer and the connection stays, so the client reads a reason, not a reset.
  Status refusal;
  std::array<uint8_t, kStoreMacBytes> mac{};
  size_t mac_got = 0;
  std::string parked_key;
  std::vector<uint8_t> out;
  size_t out_sent = 0;
};

}  // namespace poseidon::transport::bootstrap::store_server

namespace poseidon::transport::bootstrap {

using store_server::Client;

class TcpStoreServer::Loop {
 public:
  Loop(Fd listen_fd, Fd epoll_fd, Fd wake_fd, std::string address, TcpStoreServerOptions options)
      : listen_fd_(std::move(listen_fd)),
        epoll_fd_(std::move(epoll_fd)),
        wake_fd_(std::move(wake_fd)),
        address_(std::move(address)),
        options_(std::move(options)),
        ledger_(StoreLimits{options_.max_total_bytes, options_.max_client_bytes}) {}

  void run();
  // Any thread: asks run() to return once the clients have closed (TcpStoreServerOptions::
  // leave_timeout); it closes every connection on the way out.
  void stop() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
  }

 private:
  void acceptAll();
  void admit(Fd fd, std::string peer);
  // Drops the connection waiting longest to authenticate from `host` ("" = from any host).
  void dropOldestPending(const std::string& host);
  void onEvent(Client& c, uint32_t events);
  void readRequest(Client& c);
  void onHeader(Client& c);
  void onBodyComplete(Client& c);
  void onRequestComplete(Client& c);
  void finishHello(Client& c);
  void handleRequest(Client& c);
  void wakeWaiters(const std::string& key);
  void park(Client& c, const std::string& key);
  // Sends a response carrying the MAC of the request it answers (store_auth.h).
  void respond(Client& c, StatusCode code, const std::vector<uint8_t>& value);
  void respondError(Client& c, const Status& status, bool then_close);
  void send(Client& c, std::vector<uint8_t> bytes);
  void flush(Client& c);
  void setInterest(Client& c, uint32_t events);
  void sweep(Clock::time_point now);
  // stop() was called: answers every parked get() with an error and starts waiting for the
  // authenticated connections to close. Returns whether the loop may stop at once.
  bool startLeaving(Clock::time_point now);
  // While leaving: whether every authenticated connection has closed, or the time is up.
  bool doneLeaving(Clock::time_point now);
  Status leavingRefusal(const std::string& key) const;
  // What leaving waits for: authenticated connections, and those still authenticating (a rank
  // reconnecting after an error reply); strangers among the latter hold it up to the time-out.
  size_t connectedRanks() const { return authenticated_ + pending_; }
  // The client broke the protocol or ran out of time: log why, tell it (best effort) and close.
  void reject(Client& c, const Status& why);
  // The connection ended or failed; `expected` ones (a clean close) are logged at debug level.
  void disconnect(Client& c, const std::string& why, bool expected);
  // Best effort, never blocking: a client that reads gets the reason, others just see the close.
  void sendReasonAndClose(Client& c, const std::vector<uint8_t>& reply);
  // An unauthenticated connection closed for cause: logged at debug, summed up once per sweep.
  void countStranger(const Client& c, const std::string& why);
  void closeClient(Client& c);
  void leavePending(const Client& c);
  void pauseAccept();

  Fd listen_fd_;
  Fd epoll_fd_;
  Fd wake_fd_;
  const std::string address_;
  const TcpStoreServerOptions options_;

  std::unordered_map<uint64_t, std::unique_ptr<Client>> clients_;
  std::vector<uint64_t> closed_;  // erased after the event batch, so references stay valid
  uint64_t next_token_ = store_server::kFirstClientToken;
  StoreLedger ledger_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;  // key -> parked clients
  std::vector<uint8_t> scratch_;                                    // where refused bodies are read to
  size_t authenticated_ = 0;
  size_t pending_ = 0;
  std::unordered_map<std::string, size_t> pending_by_host_;
  std::deque<uint64_t> pending_order_;  // oldest first; may hold tokens no longer pending
  size_t dropped_pending_ = 0;          // since the last sweep, for one log line per sweep
  size_t rejected_strangers_ = 0;       // likewise: unauthenticated connections closed for cause
  std::string last_stranger_reason_;
  bool accept_paused_ = false;
  Clock::time_point accept_resume_at_;
  Clock::time_point next_sweep_;
  bool leaving_ = false;
  Clock::time_point leave_by_;
};

}  // namespace poseidon::transport::bootstrap
