// The TCP store's defences: only holders of the job's secret get a request acted on, messages
// cannot be altered or replayed, and strangers, stalled requests and idle connections cannot
// crowd out the job's ranks.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/log_capture.h"
#include "tests/transport/store_test_support.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_auth.h"
#include "transport/bootstrap/store_protocol.h"
#include "transport/bootstrap/tcp_store.h"
#include "transport/bootstrap/tcp_store_server.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::Bytes;
using testing::connectWith;
using testing::kTestSecret;
using testing::RawStoreClient;
using testing::requestBytes;
using testing::requestHeader;
using testing::secondsSince;
using testing::soon;
using testing::startServer;

// A fake store's first steps: accept one client, greet it with a fresh nonce, read its hello.
struct FakeStoreConnection {
  Fd fd;
  StoreNonce server_nonce{};
  Bytes hello;  // header, client nonce, MAC
};
FakeStoreConnection acceptAndGreet(int listener) {
  FakeStoreConnection out;
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return out;
  out.fd = Fd(::accept(listener, nullptr, nullptr));
  out.server_nonce = randomStoreNonce();
  const Bytes greeting = encodeResponse(StatusCode::kOk, {out.server_nonce.begin(), out.server_nonce.end()});
  out.hello.resize(kRequestHeaderBytes + kStoreNonceBytes + kStoreMacBytes);
  if (!sendAll(out.fd.get(), greeting.data(), greeting.size(), soon(), "client").isOk() ||
      !recvAll(out.fd.get(), out.hello.data(), out.hello.size(), soon(), "client").isOk()) {
    out.fd.reset();
  }
  return out;
}

// True when `key` is not set: a get() with a short deadline times out.
bool unset(Store& store, const std::string& key) {
  return store.get(key, Deadline::after(100ms)).status().code() == StatusCode::kTimeout;
}

TEST(TcpStoreSecurity, AClientWithAnotherSecretIsRefusedNamingTheCause) {
  ::poseidon::testing::LogCapture log;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Result<std::unique_ptr<TcpStore>> stranger = connectWith(server->port(), "a-guess");
  ASSERT_FALSE(stranger);
  EXPECT_EQ(stranger.status().code(), StatusCode::kAuthError) << stranger.status().toString();
  EXPECT_NE(stranger.status().message().find("another secret"), std::string::npos) << stranger.status().message();
  // And the job's own clients are served.
  Result<std::unique_ptr<TcpStore>> rank = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(rank) << rank.status().toString();
  EXPECT_TRUE(setString(**rank, "k", "v").isOk());
  // Strangers' failures are logged once per sweep (a quarter second), not one line each.
  std::this_thread::sleep_for(400ms);
  EXPECT_NE(log.text().find("does not prove this job's secret"), std::string::npos) << log.text();
}

TEST(TcpStoreSecurity, RequestsBeforeTheHelloAreNotActedOn) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto rank = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(rank);
  for (StoreOp op : {StoreOp::kSet, StoreOp::kAdd}) {
    SCOPED_TRACE(storeOpName(op));
    RawStoreClient raw(server->port());
    ASSERT_TRUE(raw.readGreeting().isOk());
    const Bytes value = op == StoreOp::kAdd ? Bytes(kCounterBytes, 1) : Bytes{'e', 'v', 'i', 'l'};
    Bytes request = requestBytes(op, "rank0/address", value);
    request.resize(request.size() + kStoreMacBytes);  // a MAC of zeros, as a stranger could send
    ASSERT_TRUE(raw.sendBytes(request).isOk());
    EXPECT_TRUE(raw.closedByServer(soon()));
    EXPECT_NE(raw.text().find("before the hello"), std::string::npos) << raw.text();
  }
  EXPECT_TRUE(unset(**rank, "rank0/address"));
}

TEST(TcpStoreSecurity, AnAlteredRequestIsRefusedAndNotActedOn) {
  ::poseidon::testing::LogCapture log;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto rank = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(rank);
  RawStoreClient raw(server->port());
  ASSERT_TRUE(raw.authenticate(kTestSecret).isOk());
  // What a relay in the middle would do: change the value, keep the MAC.
  Bytes request = requestBytes(StoreOp::kSet, "rank1/address", {'1', '0', '.', '0', '.', '0', '.', '1'});
  const Bytes mac = raw.macOf(request);
  request.back() = '2';
  request.insert(request.end(), mac.begin(), mac.end());
  ASSERT_TRUE(raw.sendBytes(request).isOk());
  EXPECT_TRUE(raw.closedByServer(soon()));
  EXPECT_NE(log.text().find("failed authentication"), std::string::npos) << log.text();
  EXPECT_TRUE(unset(**rank, "rank1/address"));
}

TEST(TcpStoreSecurity, AReplayedRequestIsRefused) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto rank = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(rank);
  RawStoreClient first(server->port());
  ASSERT_TRUE(first.authenticate(kTestSecret).isOk());
  const Bytes add = requestBytes(StoreOp::kAdd, "barrier/count", Bytes{1, 0, 0, 0, 0, 0, 0, 0});
  Bytes recorded = add;
  const Bytes mac = first.macOf(add);
  recorded.insert(recorded.end(), mac.begin(), mac.end());
  ASSERT_TRUE(first.sendBytes(recorded).isOk());
  ASSERT_TRUE(first.readResponse().isOk());
  EXPECT_EQ((*rank)->add("barrier/count", 0).value(), 1);

  // Sent again on the same connection: its sequence number has moved on.
  ASSERT_TRUE(first.sendBytes(recorded).isOk());
  EXPECT_TRUE(first.closedByServer(soon()));
  // Sent on a new connection: its key is another.
  RawStoreClient second(server->port());
  ASSERT_TRUE(second.authenticate(kTestSecret).isOk());
  ASSERT_TRUE(second.sendBytes(recorded).isOk());
  EXPECT_TRUE(second.closedByServer(soon()));
  EXPECT_EQ((*rank)->add("barrier/count", 0).value(), 1);
}

TEST(TcpStoreSecurity, AServerThatCannotProveTheSecretIsNotBelieved) {
  // A fake store: a proper greeting, then an OK reply to the hello with a made-up MAC.
  Result<Fd> listener = listenOn("127.0.0.1", 0);
  ASSERT_TRUE(listener);
  const uint16_t port = localAddress(listener->get())->port();
  std::thread fake([&] {
    FakeStoreConnection fake_store = acceptAndGreet(listener->get());
    ASSERT_TRUE(fake_store.fd.valid());
    const Fd& conn = fake_store.fd;
    Bytes reply = encodeResponse(StatusCode::kOk, {});
    reply.resize(reply.size() + kStoreMacBytes, 0x5a);
    ASSERT_TRUE(sendAll(conn.get(), reply.data(), reply.size(), soon(), "client").isOk());
    uint8_t sink[64];
    ::recv(conn.get(), sink, sizeof(sink), 0);
  });
  Result<std::unique_ptr<TcpStore>> client = connectWith(port, kTestSecret);
  fake.join();
  ASSERT_FALSE(client);
  EXPECT_EQ(client.status().code(), StatusCode::kAuthError) << client.status().toString();
  EXPECT_NE(client.status().message().find("failed authentication"), std::string::npos) << client.status().message();
}

TEST(TcpStoreSecurity, AReplyWithoutAMacIsNotTakenAsAnAnswer) {
  // A store that authenticates properly, then answers a set with an error it does not seal: what
  // anyone on the path could inject. The client must not report it as the store's answer.
  Result<Fd> listener = listenOn("127.0.0.1", 0);
  ASSERT_TRUE(listener);
  const uint16_t port = localAddress(listener->get())->port();
  std::thread fake([&] {
    FakeStoreConnection fake_store = acceptAndGreet(listener->get());
    ASSERT_TRUE(fake_store.fd.valid());
    const Fd& conn = fake_store.fd;
    const Bytes& hello = fake_store.hello;
    StoreNonce client_nonce{};
    std::copy(hello.begin() + kRequestHeaderBytes, hello.begin() + kRequestHeaderBytes + kStoreNonceBytes,
              client_nonce.begin());
    const Sha256Mac key = storeSessionKey(kTestSecret, fake_store.server_nonce, client_nonce).value();
    const auto idle = encodeInt64(60'000);
    Bytes reply = encodeResponse(StatusCode::kOk, {idle.begin(), idle.end()});
    const Sha256Mac sealed =
        StoreMessageMac(key, StoreDirection::kResponse, 0).update(reply.data(), reply.size()).finish().value();
    reply.insert(reply.end(), sealed.begin(), sealed.end());
    ASSERT_TRUE(sendAll(conn.get(), reply.data(), reply.size(), soon(), "client").isOk());
    Bytes set(kRequestHeaderBytes + 1 + 1 + kStoreMacBytes);  // set("k", "v")
    ASSERT_TRUE(recvAll(conn.get(), set.data(), set.size(), soon(), "client").isOk());
    const Bytes forged = encodeErrorResponse(Status(StatusCode::kInvalidArgument, "the store is full"));
    ASSERT_TRUE(sendAll(conn.get(), forged.data(), forged.size(), soon(), "client").isOk());
  });
  Result<std::unique_ptr<TcpStore>> client = connectWith(port, kTestSecret);
  ASSERT_TRUE(client) << client.status().toString();
  Status set = setString(**client, "k", "v");
  fake.join();
  EXPECT_EQ(set.code(), StatusCode::kConnectionError) << set.toString();
  EXPECT_NE(set.message().find("without a MAC, so not believed"), std::string::npos) << set.message();
}

// Opens connections from 127.0.0.2 as fast as it can and never speaks: a stranger on another host.
class Flood {
 public:
  explicit Flood(uint16_t port) : port_(port) {
    thread_ = std::thread([this] { run(); });
  }
  ~Flood() {
    stop_ = true;
    thread_.join();
  }
  size_t opened() const { return opened_; }

 private:
  void run() {
    std::vector<Fd> held;
    while (!stop_) {
      Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in source{};
      source.sin_family = AF_INET;
      ::inet_pton(AF_INET, "127.0.0.2", &source.sin_addr);
      sockaddr_in target{};
      target.sin_family = AF_INET;
      target.sin_port = htons(port_);
      ::inet_pton(AF_INET, "127.0.0.1", &target.sin_addr);
      if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0 ||
          ::connect(fd.get(), reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
        std::this_thread::sleep_for(1ms);
        continue;
      }
      ++opened_;
      held.push_back(std::move(fd));
      if (held.size() > 400) held.erase(held.begin(), held.begin() + 200);
    }
  }

  const uint16_t port_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> opened_{0};
  std::thread thread_;
};

TEST(TcpStoreSecurity, AFloodOfStrangersCannotRefuseTheRanks) {
  ::poseidon::testing::LogCapture log;
  // Room for the ranks' own connections and no more: the flood holds hundreds, and were they
  // counted against this limit, as they were once, the ranks would be refused.
  TcpStoreServerOptions options;
  options.max_clients = 16;
  // Below what the flood holds (up to 400), so it is certainly displacing its own connections.
  options.max_pending_per_host = 16;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  Flood flood(server->port());
  while (flood.opened() < 100) std::this_thread::sleep_for(1ms);  // the flood is on before the job starts
  constexpr int kRanks = 4;
  std::vector<Status> results(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      Result<std::unique_ptr<TcpStore>> store = connectWith(server->port(), kTestSecret);
      if (!store) {
        results[r] = store.status();
        return;
      }
      results[r] = setString(**store, fmt::format("rank{}", r), "here");
      if (results[r]) results[r] = barrier(**store, "started", kRanks, soon());
      for (int other = 0; other < kRanks && results[r]; ++other) {
        results[r] = getString(**store, fmt::format("rank{}", other), soon()).status();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].toString();
  EXPECT_GT(flood.opened(), 100u);
  // The flood really was pushing connections out (said at the next sweep, a quarter second apart;
  // the ranks may finish within the first).
  const Deadline said = Deadline::after(3s);
  while (log.text().find("that had not authenticated") == std::string::npos && !said.expired()) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(log.text().find("that had not authenticated"), std::string::npos) << log.text();
}

TEST(TcpStoreSecurity, TooManyConnectionsAreRefusedNamingTheLimit) {
  TcpStoreServerOptions options;
  options.max_clients = 2;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto one = connectWith(server->port(), kTestSecret);
  auto two = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(one && two);
  auto three = connectWith(server->port(), kTestSecret);
  ASSERT_FALSE(three);
  EXPECT_EQ(three.status().code(), StatusCode::kUnavailable) << three.status().toString();
  EXPECT_NE(three.status().message().find("serves 2 connections, its limit"), std::string::npos)
      << three.status().message();
}

TEST(TcpStoreSecurity, AConnectionThatNeverAuthenticatesIsDropped) {
  TcpStoreServerOptions options;
  options.handshake_timeout = 300ms;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  RawStoreClient silent(server->port());
  ASSERT_TRUE(silent.readGreeting().isOk());
  const auto start = Clock::now();
  EXPECT_TRUE(silent.closedByServer(soon()));
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_NE(silent.text().find("did not authenticate within 300 ms"), std::string::npos) << silent.text();
}

TEST(TcpStoreSecurity, AStalledSetTimesOutAndGivesBackItsRoom) {
  TcpStoreServerOptions options;
  options.request_timeout = 300ms;
  options.max_total_bytes = 64 << 10;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto rank = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(rank);
  RawStoreClient staller(server->port());
  ASSERT_TRUE(staller.authenticate(kTestSecret).isOk());
  // Announces 48 KiB, sends 10 bytes and stops: the room is reserved until the time-out.
  Bytes partial = requestHeader(kStoreMagic, kStoreVersion, 1, 1, 48 << 10);
  partial.resize(partial.size() + 10, 'x');
  ASSERT_TRUE(staller.sendBytes(partial).isOk());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ((*rank)->set("value", Bytes(32 << 10)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(staller.closedByServer(soon()));
  EXPECT_NE(staller.text().find("request stalled"), std::string::npos) << staller.text();
  EXPECT_TRUE((*rank)->set("value", Bytes(32 << 10)).isOk());
}

TEST(TcpStoreSecurity, IdleConnectionsCloseAndTheClientReconnectsUnnoticed) {
  ::poseidon::testing::LogCapture log;
  TcpStoreServerOptions options;
  options.idle_timeout = 200ms;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto rank = connectWith(server->port(), kTestSecret);
  ASSERT_TRUE(rank);
  ASSERT_TRUE(setString(**rank, "k", "v").isOk());
  std::this_thread::sleep_for(700ms);              // the server closes the pooled connection meanwhile
  EXPECT_EQ((*rank)->add("count", 1).value(), 1);  // not applied twice by the retry
  EXPECT_EQ((*rank)->add("count", 1).value(), 2);
  EXPECT_EQ(getString(**rank, "k", soon()).value(), "v");
}

}  // namespace
}  // namespace poseidon::transport::bootstrap
