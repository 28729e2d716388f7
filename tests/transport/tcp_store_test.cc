// The TCP store: serving, limits that count what is held, and clients that misbehave.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/log_capture.h"
#include "tests/support/process.h"
#include "tests/transport/store_test_support.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_ledger.h"
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

Bytes bytes(const std::string& text) { return {text.begin(), text.end()}; }

std::unique_ptr<TcpStore> connectTo(uint16_t port) {
  Result<std::unique_ptr<TcpStore>> store = connectWith(port, kTestSecret);
  if (!store) ADD_FAILURE() << store.status().toString();
  return store ? std::move(*store) : nullptr;
}

// A port nothing listens on right now, below the ephemeral range (tests/support/process.h).
uint16_t unusedPort() { return ::poseidon::testing::free_loopback_port(); }

// Resident memory of this process (server and clients share it in these tests).
size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

TEST(TcpStore, ReportsItsEphemeralPortAndAddress) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  EXPECT_NE(server->port(), 0);
  EXPECT_EQ(server->address(), fmt::format("127.0.0.1:{}", server->port()));
}

TEST(TcpStore, BindingABusyPortFailsNamingIt) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  Result<std::unique_ptr<TcpStoreServer>> second = TcpStoreServer::start("127.0.0.1", server->port());
  ASSERT_FALSE(second);
  EXPECT_NE(second.status().message().find(std::to_string(server->port())), std::string::npos)
      << second.status().message();
}

TEST(TcpStore, LargeValuesRoundTrip) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto writer = connectTo(server->port());
  auto reader = connectTo(server->port());
  Bytes value(8 << 20);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<uint8_t>(i * 7 + 3);
  // The reader parks first, so the server answers it from the wake-up path.
  std::thread parked([&] {
    Result<Bytes> got = reader->get("blob", soon());
    ASSERT_TRUE(got) << got.status().toString();
    EXPECT_TRUE(*got == value);
  });
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(writer->set("blob", value).isOk());
  parked.join();
  EXPECT_TRUE(writer->get("blob", soon()).value() == value);
}

TEST(TcpStore, GarbageClosesOnlyThatConnection) {
  ::poseidon::testing::LogCapture log;
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto good = connectTo(server->port());
  ASSERT_NE(good, nullptr);
  ASSERT_TRUE(setString(*good, "before", "yes").isOk());

  // A well-behaved client parked in get() must survive everything below too.
  auto waiter = connectTo(server->port());
  std::thread parked([&] { EXPECT_EQ(getString(*waiter, "after", soon()).value(), "done"); });

  struct Case {
    const char* what;
    Bytes data;
    const char* logged;  // part of the reason the server must log
  };
  const uint32_t magic = kStoreMagic;
  const uint16_t version = kStoreVersion;
  const std::vector<Case> cases = {
      {"bad magic", requestHeader(0xdeadbeef, version, 1, 1, 1), "magic 0xdeadbeef"},
      {"bad version", requestHeader(magic, 9, 1, 1, 1), "version 9"},
      {"bad op", requestHeader(magic, version, 77, 1, 1), "op 77"},
      {"absurd value length", requestHeader(magic, version, 1, 3, 0xFFFFFFFF), "4294967295 exceeds limit"},
      {"absurd key length", requestHeader(magic, version, 2, 0xFFFFFFFF, 0), "key length 4294967295"},
      {"get with a body", requestHeader(magic, version, 2, 1, 5), "value length 5, expected 0"},
      {"add with a short delta", requestHeader(magic, version, 3, 1, 4), "value length 4, expected 8"},
      {"a second hello", requestHeader(magic, version, 4, 0, kStoreNonceBytes), "a second hello"},
      {"text instead of a header", bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "magic 0x20544547"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    // From a client that proved the secret: a bad header still ends only its own connection.
    RawStoreClient raw(server->port());
    ASSERT_TRUE(raw.authenticate(kTestSecret).isOk());
    ASSERT_TRUE(raw.sendBytes(c.data).isOk());
    EXPECT_TRUE(raw.closedByServer(Deadline::after(2s))) << "server kept a connection that sent " << c.what;
    EXPECT_NE(log.text().find(c.logged), std::string::npos) << log.text();
    // Every other client is still served.
    EXPECT_EQ(getString(*good, "before", soon()).value(), "yes");
  }
  {
    // Before the greeting is even read: the same, with the reason sent back.
    RawStoreClient raw(server->port());
    ASSERT_TRUE(raw.sendBytes(bytes("GET / HTTP/1.1\r\n\r\n")).isOk());
    EXPECT_TRUE(raw.closedByServer(Deadline::after(2s)));
    EXPECT_NE(raw.text().find("magic 0x20544547"), std::string::npos) << raw.text();
  }

  // A client that hangs up in the middle of a request.
  {
    RawStoreClient raw(server->port());
    ASSERT_TRUE(raw.authenticate(kTestSecret).isOk());
    Bytes partial = requestHeader(magic, version, 1, 3, 100);
    partial.push_back('k');
    ASSERT_TRUE(raw.sendBytes(partial).isOk());
  }
  EXPECT_EQ(good->add("count", 1).value(), 1);
  ASSERT_TRUE(setString(*good, "after", "done").isOk());
  parked.join();
}

TEST(TcpStore, ServerDestroyedWhileClientWaitsGivesConnectionError) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  ASSERT_NE(client, nullptr);
  const auto start = Clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    server.reset();
  });
  Result<Bytes> got = client->get("never", Deadline::after(5s));
  const double waited = secondsSince(start);
  stopper.join();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.status().code(), StatusCode::kConnectionError) << got.status().toString();
  EXPECT_NE(got.status().message().find("'never'"), std::string::npos) << got.status().message();
  EXPECT_LT(waited, 2.0);

  // Later calls fail at once too: the server is gone, nothing retries until a deadline.
  const auto again = Clock::now();
  EXPECT_EQ(client->set("k", bytes("v")).code(), StatusCode::kConnectionError);
  EXPECT_EQ(client->get("k", Deadline::after(5s)).status().code(), StatusCode::kConnectionError);
  EXPECT_LT(secondsSince(again), 2.0);
}

// The end of a job: rank 0 sets the last barrier's key and leaves at once, before another rank has
// asked for it. That rank still reads it, and rank 0's server closes as soon as that rank is done.
TEST(TcpStore, ALeavingServerAnswersWhatWasSetAndClosesWhenTheClientsHave) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  auto last = connectTo(server->port());
  auto other = connectTo(server->port());
  ASSERT_NE(last, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(setString(*last, "done", "1").isOk());  // its connection stays open, idle
  ASSERT_TRUE(setString(*other, "mine", "1").isOk());
  std::atomic<bool> left{false};
  std::thread leaver([&] {
    server.reset();
    left = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(left) << "the server closed under clients that were still connected";
  EXPECT_EQ(getString(*last, "done", Deadline::after(5s)).value(), "1");
  // A key not set is refused at once, not waited for. That connection then ends.
  const auto asked = Clock::now();
  Result<std::string> never = getString(*other, "never", Deadline::after(5s));
  EXPECT_LT(secondsSince(asked), 2.0);
  ASSERT_FALSE(never);
  EXPECT_EQ(never.status().code(), StatusCode::kConnectionError);
  EXPECT_NE(never.status().message().find("is leaving, and key 'never' is not set"), std::string::npos)
      << never.status().toString();
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(left) << "the server closed under a client that was still connected";
  const auto closed = Clock::now();
  last.reset();
  leaver.join();
  EXPECT_LT(secondsSince(closed), 2.0);  // closed once its last client had, not at the time-out
}

TEST(TcpStore, ALeavingServerClosesAtItsTimeOutUnderAClientThatStays) {
  TcpStoreServerOptions options;
  options.leave_timeout = 300ms;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto stays = connectTo(server->port());
  ASSERT_NE(stays, nullptr);
  ASSERT_TRUE(setString(*stays, "k", "v").isOk());
  const auto start = Clock::now();
  server.reset();
  const double waited = secondsSince(start);
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 3.0);
  EXPECT_EQ(stays->get("k", Deadline::after(5s)).status().code(), StatusCode::kConnectionError);
}

TEST(TcpStore, ConnectRetriesUntilTheServerComesUp) {
  const uint16_t port = unusedPort();
  ASSERT_NE(port, 0);
  std::unique_ptr<TcpStoreServer> server;
  std::thread late_root([&] {
    std::this_thread::sleep_for(300ms);
    Result<std::unique_ptr<TcpStoreServer>> started = TcpStoreServer::start("127.0.0.1", port);
    ASSERT_TRUE(started) << started.status().toString();
    server = std::move(*started);
  });
  Result<std::unique_ptr<TcpStore>> client = TcpStore::connect("127.0.0.1", port, soon());
  late_root.join();
  ASSERT_TRUE(client) << client.status().toString();
  EXPECT_TRUE(setString(**client, "k", "v").isOk());
}

TEST(TcpStore, ConnectGivesUpAtTheDeadlineNamingTheAddress) {
  const uint16_t port = unusedPort();
  ASSERT_NE(port, 0);
  const auto start = Clock::now();
  Result<std::unique_ptr<TcpStore>> client = TcpStore::connect("127.0.0.1", port, Deadline::after(300ms));
  const double waited = secondsSince(start);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.status().code(), StatusCode::kConnectionError);
  EXPECT_NE(client.status().message().find(fmt::format("127.0.0.1:{}", port)), std::string::npos)
      << client.status().message();
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 2.0);
}

TEST(TcpStore, ServerRefusesToHoldMoreThanItsLimit) {
  TcpStoreServerOptions options;
  options.max_total_bytes = 1000;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  // 500 + 5 + the entry's bookkeeping (StoreLedger::kEntryOverheadBytes) fits, and 600 more does not.
  ASSERT_TRUE(client->set("small", Bytes(500)).isOk());
  Status status = client->set("large", Bytes(600));
  ASSERT_FALSE(status.isOk());
  // The server reads the refused body and answers: a reason, never a reset.
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
  EXPECT_NE(status.message().find("its limit is 1000"), std::string::npos) << status.message();
  // Replacing a value frees its room.
  EXPECT_TRUE(client->set("small", Bytes(10)).isOk());
  EXPECT_TRUE(client->set("large", Bytes(600)).isOk());
  EXPECT_EQ(client->get("large", soon()).value().size(), 600u);
}

TEST(TcpStore, ManyClientsAnnouncingHugeValuesCostNothingUntilTheBytesArrive) {
  auto server = startServer();
  ASSERT_NE(server, nullptr);
  // Each announces a 60 MiB set and sends 10 bytes: the server must not set aside 60 MiB each.
  const size_t rss_before = residentBytes();
  std::vector<std::unique_ptr<RawStoreClient>> hogs;
  for (int i = 0; i < 8; ++i) {
    hogs.push_back(std::make_unique<RawStoreClient>(server->port()));
    ASSERT_TRUE(hogs.back()->authenticate(kTestSecret).isOk());
    Bytes data = requestHeader(kStoreMagic, kStoreVersion, 1, 1, 60u << 20);
    data.resize(data.size() + 10, 'x');
    ASSERT_TRUE(hogs.back()->sendBytes(data).isOk());
  }
  auto client = connectTo(server->port());
  ASSERT_TRUE(setString(*client, "k", "v").isOk());
  EXPECT_EQ(getString(*client, "k", soon()).value(), "v");
  std::this_thread::sleep_for(50ms);  // let the server read every header
  EXPECT_LT(residentBytes(), rss_before + (64u << 20)) << "the server allocated what the headers announced";
  hogs.clear();  // hanging up mid-request releases their reservations
  EXPECT_TRUE(client->set("after", Bytes(1 << 20)).isOk());
}

TEST(TcpStore, ResponseHeadersAreValidatedToo) {
  // A fake server whose greeting claims an absurd length: the client must refuse, not allocate.
  Result<Fd> listener = listenOn("127.0.0.1", 0);
  ASSERT_TRUE(listener);
  Result<SocketAddress> bound = localAddress(listener->get());
  ASSERT_TRUE(bound) << bound.status().toString();
  const uint16_t port = bound->port();
  std::thread fake([&] {
    pollfd p{listener->get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    Fd conn(::accept(listener->get(), nullptr, nullptr));
    Bytes reply = {0x50, 0x53, 0x54, 0x52, kStoreVersion, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
    uint8_t sink[256];
    ::recv(conn.get(), sink, sizeof(sink), 0);
  });
  Result<std::unique_ptr<TcpStore>> client = TcpStore::connect("127.0.0.1", port, soon());
  fake.join();
  ASSERT_FALSE(client);
  EXPECT_EQ(client.status().code(), StatusCode::kProtocolError);
  EXPECT_NE(client.status().message().find("4294967295"), std::string::npos) << client.status().message();
}

// Entries cost their bookkeeping too: a flood of empty sets is counted at what it really holds.
TEST(TcpStore, EmptyEntriesCountTheirBookkeeping) {
  TcpStoreServerOptions options;
  const size_t entry = StoreLedger::entryCost(8, 0);  // keys "key-0000" .. "key-0099"
  options.max_total_bytes = 100 * entry;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto client = connectTo(server->port());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(client->set(fmt::format("key-{:04}", i), {}).isOk()) << i;
  Status refused = client->set("key-0100", {});
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.toString();
  EXPECT_NE(refused.message().find("bookkeeping"), std::string::npos) << refused.message();
  // add() of a new counter is an entry like any other.
  EXPECT_EQ(client->add("counter", 1).status().code(), StatusCode::kInvalidArgument);
}

TEST(TcpStore, OneConnectionCannotTakeMoreThanItsShare) {
  TcpStoreServerOptions options;
  options.max_client_bytes = 64 << 10;
  auto server = startServer(options);
  ASSERT_NE(server, nullptr);
  auto greedy = connectTo(server->port());
  auto other = connectTo(server->port());
  ASSERT_TRUE(greedy->set("a", Bytes(40 << 10)).isOk());
  Status refused = greedy->set("b", Bytes(40 << 10));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.toString();
  EXPECT_NE(refused.message().find("this connection's share"), std::string::npos) << refused.message();
  EXPECT_TRUE(other->set("b", Bytes(40 << 10)).isOk());
}

}  // namespace
}  // namespace poseidon::transport::bootstrap
