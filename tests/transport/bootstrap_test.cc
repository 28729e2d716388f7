// Bootstrap: the stores ranks rendezvous through, the launcher environment, and openStore.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "tests/support/process.h"
#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/launch_env.h"
#include "transport/bootstrap/open_store.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/tcp_store.h"
#include "transport/bootstrap/tcp_store_server.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

Bytes bytes(const std::string& text) { return {text.begin(), text.end()}; }

Deadline soon() { return Deadline::after(5s); }

std::unique_ptr<TcpStoreServer> startServer() {
  Result<std::unique_ptr<TcpStoreServer>> server = TcpStoreServer::start("127.0.0.1", 0);
  if (!server) ADD_FAILURE() << server.status().toString();
  return server ? std::move(*server) : nullptr;
}

std::unique_ptr<TcpStore> connectTo(uint16_t port) {
  Result<std::unique_ptr<TcpStore>> store = TcpStore::connect("127.0.0.1", port, soon());
  if (!store) ADD_FAILURE() << store.status().toString();
  return store ? std::move(*store) : nullptr;
}

// A port nothing listens on right now, below the ephemeral range (tests/support/process.h), so no
// test running beside this one is given it while rank 0 sleeps before serving it.
uint16_t unusedPort() { return testing::free_loopback_port(); }

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class TempDir {
 public:
  TempDir() {
    char templ[] = "/tmp/poseidon_bootstrap_test_XXXXXX";
    const char* made = ::mkdtemp(templ);
    EXPECT_NE(made, nullptr);
    path_ = made ? made : "/tmp/poseidon_bootstrap_test_failed";
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// Behaviour every Store must have, run against both implementations.

class StoreSemantics : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") {
      server_ = startServer();
      ASSERT_NE(server_, nullptr);
    }
  }
  std::unique_ptr<Store> open() {
    if (GetParam() == "tcp") return connectTo(server_->port());
    Result<std::unique_ptr<FileStore>> store = FileStore::open(dir_.path());
    EXPECT_TRUE(store) << store.status().toString();
    return store ? std::move(*store) : nullptr;
  }
  // Where timeouts must say they were waiting.
  std::string address() const { return GetParam() == "tcp" ? server_->address() : dir_.path(); }

  TempDir dir_;
  std::unique_ptr<TcpStoreServer> server_;
};

TEST_P(StoreSemantics, SetGetAdd) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->set("alpha", bytes("one")).isOk());
  Result<Bytes> got = store->get("alpha", soon());
  ASSERT_TRUE(got) << got.status().toString();
  EXPECT_EQ(*got, bytes("one"));

  ASSERT_TRUE(store->set("alpha", bytes("two")).isOk());  // replaces
  EXPECT_EQ(getString(*store, "alpha", soon()).value(), "two");

  ASSERT_TRUE(store->set("empty", {}).isOk());
  EXPECT_EQ(store->get("empty", soon()).value(), Bytes{});

  // Keys with separators and arbitrary bytes.
  const std::string odd_key = std::string("rank/3/addr\x01\xff%", 15);
  ASSERT_TRUE(setString(*store, odd_key, "10.0.0.3:4000").isOk());
  EXPECT_EQ(getString(*store, odd_key, soon()).value(), "10.0.0.3:4000");
  const std::string long_key(kMaxKeyBytes, 'k');
  ASSERT_TRUE(setString(*store, long_key, "long").isOk());
  EXPECT_EQ(getString(*store, long_key, soon()).value(), "long");

  EXPECT_EQ(store->add("counter", 5).value(), 5);
  EXPECT_EQ(store->add("counter", -2).value(), 3);
  EXPECT_EQ(store->add("counter", 0).value(), 3);
  EXPECT_EQ(getString(*store, "counter", soon()).value(), "3");
}

TEST_P(StoreSemantics, AddOnANonCounterFailsAndTheStoreGoesOn) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(setString(*store, "text", "hello").isOk());
  Result<int64_t> sum = store->add("text", 1);
  ASSERT_FALSE(sum);
  EXPECT_EQ(sum.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sum.status().message().find("'text'"), std::string::npos) << sum.status().message();
  EXPECT_NE(sum.status().message().find("hello"), std::string::npos) << sum.status().message();

  ASSERT_TRUE(setString(*store, "big", std::to_string(INT64_MAX)).isOk());
  Result<int64_t> overflow = store->add("big", 1);
  ASSERT_FALSE(overflow);
  EXPECT_NE(overflow.status().message().find("overflow"), std::string::npos) << overflow.status().message();

  EXPECT_EQ(store->add("fine", 1).value(), 1);
}

TEST_P(StoreSemantics, OversizedKeyOrValueIsRefusedBeforeSending) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  Status status = store->set(std::string(kMaxKeyBytes + 1, 'k'), bytes("v"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("4097 bytes"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("4096"), std::string::npos) << status.message();
  status = store->set("big", Bytes(kMaxValueBytes + 1));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(std::to_string(kMaxValueBytes + 1)), std::string::npos) << status.message();
}

TEST_P(StoreSemantics, GetWaitsUntilAnotherThreadSets) {
  auto reader = open();
  auto writer = open();
  ASSERT_NE(reader, nullptr);
  ASSERT_NE(writer, nullptr);
  const auto start = Clock::now();
  std::thread late_writer([&] {
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(setString(*writer, "late", "here").isOk());
  });
  Result<std::string> got = getString(*reader, "late", soon());
  late_writer.join();
  ASSERT_TRUE(got) << got.status().toString();
  EXPECT_EQ(*got, "here");
  EXPECT_GE(secondsSince(start), 0.15);
}

TEST_P(StoreSemantics, GetTimesOutNamingTheKeyAndTheStore) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  const auto start = Clock::now();
  Result<Bytes> got = store->get("never/set", Deadline::after(300ms));
  const double waited = secondsSince(start);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout);
  EXPECT_NE(got.status().message().find("'never/set'"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find(address()), std::string::npos) << got.status().message();
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 2.0);

  // The store still works afterwards, also for the key that was waited for.
  ASSERT_TRUE(setString(*store, "never/set", "now").isOk());
  EXPECT_EQ(getString(*store, "never/set", soon()).value(), "now");
}

TEST_P(StoreSemantics, AddIsAtomicAcrossThreadsAndClients) {
  constexpr int kThreads = 4;
  constexpr int kAddsPerThread = 50;
  auto shared = open();
  ASSERT_NE(shared, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share one client, half have their own.
      std::unique_ptr<Store> own = t % 2 == 0 ? open() : nullptr;
      Store& store = own ? *own : *shared;
      for (int i = 0; i < kAddsPerThread; ++i) EXPECT_TRUE(store.add("hits", 1));
      EXPECT_TRUE(setString(store, fmt::format("thread/{}", t), std::to_string(t)).isOk());
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(shared->add("hits", 0).value(), kThreads * kAddsPerThread);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(getString(*shared, fmt::format("thread/{}", t), soon()).value(), std::to_string(t));
  }
}

TEST_P(StoreSemantics, BarrierWithFourThreadsReleasesOnlyWhenAllArrived) {
  constexpr int kRanks = 4;
  auto shared = open();
  ASSERT_NE(shared, nullptr);
  for (int round = 0; round < 2; ++round) {
    std::atomic<int> arrived{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < kRanks; ++r) {
      ranks.emplace_back([&, r] {
        std::unique_ptr<Store> own = r == 0 ? open() : nullptr;  // rank 0 on its own client
        Store& store = own ? *own : *shared;
        std::this_thread::sleep_for(std::chrono::milliseconds(30 * r));
        arrived.fetch_add(1);
        Status status = barrier(store, fmt::format("start/{}", round), kRanks, soon());
        EXPECT_TRUE(status.isOk()) << status.toString();
        EXPECT_EQ(arrived.load(), kRanks) << "rank " << r << " left the barrier early";
      });
    }
    for (auto& rank : ranks) rank.join();
  }
}

TEST_P(StoreSemantics, BarrierTimeoutSaysHowManyArrived) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  Status status = barrier(*store, "lonely", 3, Deadline::after(200ms));
  EXPECT_EQ(status.code(), StatusCode::kTimeout);
  EXPECT_NE(status.message().find("'lonely'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("1 of 3"), std::string::npos) << status.message();
  EXPECT_EQ(barrier(*store, "bad", 0, soon()).code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreSemantics, ::testing::Values("tcp", "file"),
                         [](const auto& test) { return test.param; });

// ---------------------------------------------------------------------------------------------
// TCP store: what only the network side can get wrong.

// ---------------------------------------------------------------------------------------------
// File store specifics.

TEST(FileStore, WritesOneFilePerKeyAndNoTemporariesRemain) {
  TempDir dir;
  Result<std::unique_ptr<FileStore>> store = FileStore::open(dir.path() + "/job/1");
  ASSERT_TRUE(store) << store.status().toString();
  ASSERT_TRUE(setString(**store, "a/b", "x").isOk());
  ASSERT_TRUE((*store)->add("n", 2));
  const std::string long_key(1000, 'z');
  ASSERT_TRUE(setString(**store, long_key, "y").isOk());
  EXPECT_TRUE(std::filesystem::exists((*store)->pathFor("a/b")));
  EXPECT_LE(std::filesystem::path((*store)->pathFor(long_key)).filename().string().size(), 255u);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/job/1")) {
    EXPECT_EQ(entry.path().filename().string().rfind(".tmp", 0), std::string::npos) << entry.path();
  }
}

TEST(FileStore, AddGivesUpWhenTheLockIsHeld) {
  TempDir dir;
  FileStoreOptions options;
  options.lock_timeout = 200ms;
  Result<std::unique_ptr<FileStore>> store = FileStore::open(dir.path(), options);
  ASSERT_TRUE(store);
  Fd lock(::open((dir.path() + "/.lock").c_str(), O_RDWR | O_CREAT, 0644));
  ASSERT_EQ(::flock(lock.get(), LOCK_EX), 0);
  Result<int64_t> sum = (*store)->add("n", 1);
  ASSERT_FALSE(sum);
  EXPECT_EQ(sum.status().code(), StatusCode::kTimeout);
  EXPECT_NE(sum.status().message().find(".lock"), std::string::npos) << sum.status().message();
  lock.reset();
  EXPECT_EQ((*store)->add("n", 1).value(), 1);
}

TEST(FileStore, OpenRefusesAPathThatIsAFile) {
  TempDir dir;
  const std::string file = dir.path() + "/plain";
  { Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT, 0644)); }
  Result<std::unique_ptr<FileStore>> store = FileStore::open(file);
  ASSERT_FALSE(store);
  EXPECT_NE(store.status().message().find(file), std::string::npos) << store.status().message();
  EXPECT_EQ(FileStore::open("").status().code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Launcher environment.

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

LaunchInfo detectOk(std::map<std::string, std::string> vars) {
  Result<LaunchInfo> info = detectLaunch(fakeEnv(std::move(vars)));
  EXPECT_TRUE(info) << info.status().toString();
  return info ? *info : LaunchInfo{};
}

std::string detectError(std::map<std::string, std::string> vars) {
  Result<LaunchInfo> info = detectLaunch(fakeEnv(std::move(vars)));
  EXPECT_FALSE(info) << "expected an error";
  return info ? std::string() : info.status().message();
}

TEST(LaunchEnv, PlainVariables) {
  LaunchInfo info = detectOk({{"POSEIDON_RANK", "2"},
                              {"POSEIDON_SIZE", "4"},
                              {"POSEIDON_LOCAL_RANK", "1"},
                              {"POSEIDON_ROOT", "10.0.0.1:5000"}});
  EXPECT_EQ(info.source, "poseidon");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.root_host, "10.0.0.1");
  EXPECT_EQ(info.root_port, 5000);
  EXPECT_FALSE(info.file_store_dir);
}

TEST(LaunchEnv, OpenMpi) {
  LaunchInfo info = detectOk({{"OMPI_COMM_WORLD_RANK", "5"},
                              {"OMPI_COMM_WORLD_SIZE", "8"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                              {"POSEIDON_ROOT", "node01:29500"}});
  EXPECT_EQ(info.source, "openmpi");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.root_host, "node01");
  EXPECT_EQ(info.root_port, 29500);
}

TEST(LaunchEnv, Slurm) {
  LaunchInfo info = detectOk(
      {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}, {"POSEIDON_ROOT", "[fe80::1]:7000"}});
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.root_host, "fe80::1");
  EXPECT_EQ(info.root_port, 7000);
}

TEST(LaunchEnv, PrecedencePlainThenOpenMpiThenSlurm) {
  const std::map<std::string, std::string> slurm = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}};
  const std::map<std::string, std::string> ompi = {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}};
  const std::map<std::string, std::string> plain = {{"POSEIDON_RANK", "0"}, {"POSEIDON_SIZE", "6"}};
  auto merged = [](std::initializer_list<std::map<std::string, std::string>> parts) {
    std::map<std::string, std::string> all = {{"POSEIDON_ROOT", "127.0.0.1:1234"}};
    for (const auto& part : parts) all.insert(part.begin(), part.end());
    return all;
  };
  LaunchInfo all = detectOk(merged({slurm, ompi, plain}));
  EXPECT_EQ(all.source, "poseidon");
  EXPECT_EQ(all.size, 6);
  LaunchInfo mpi_in_slurm = detectOk(merged({slurm, ompi}));
  EXPECT_EQ(mpi_in_slurm.source, "openmpi");
  EXPECT_EQ(mpi_in_slurm.rank, 3);
  LaunchInfo just_slurm = detectOk(merged({slurm}));
  EXPECT_EQ(just_slurm.source, "slurm");
  EXPECT_EQ(just_slurm.rank, 1);
}

TEST(LaunchEnv, SingleProcessDefaultsTheRoot) {
  LaunchInfo info = detectOk({{"POSEIDON_RANK", "0"}, {"POSEIDON_SIZE", "1"}});
  EXPECT_EQ(info.root_host, "127.0.0.1");
  EXPECT_EQ(info.root_port, 29500);
  EXPECT_EQ(info.local_rank, 0);
}

TEST(LaunchEnv, StoreDirMakesTheRootOptional) {
  LaunchInfo info = detectOk({{"POSEIDON_RANK", "1"}, {"POSEIDON_SIZE", "2"}, {"POSEIDON_STORE_DIR", "/shared/job7"}});
  ASSERT_TRUE(info.file_store_dir);
  EXPECT_EQ(*info.file_store_dir, "/shared/job7");
  EXPECT_NE(detectError({{"POSEIDON_RANK", "1"}, {"POSEIDON_SIZE", "2"}, {"POSEIDON_STORE_DIR", ""}})
                .find("POSEIDON_STORE_DIR is set but empty"),
            std::string::npos);
}

TEST(LaunchEnv, ErrorsNameTheVariableTheValueAndTheExpectation) {
  EXPECT_EQ(detectError({{"POSEIDON_RANK", "abc"}, {"POSEIDON_SIZE", "4"}}),
            "POSEIDON_RANK=abc is not an integer in [0, POSEIDON_SIZE) (POSEIDON_SIZE=4)");
  EXPECT_EQ(detectError({{"POSEIDON_RANK", "4"}, {"POSEIDON_SIZE", "4"}}),
            "POSEIDON_RANK=4 is not an integer in [0, POSEIDON_SIZE) (POSEIDON_SIZE=4)");
  EXPECT_EQ(detectError({{"OMPI_COMM_WORLD_RANK", "-1"}, {"OMPI_COMM_WORLD_SIZE", "4"}}),
            "OMPI_COMM_WORLD_RANK=-1 is not an integer in [0, OMPI_COMM_WORLD_SIZE) (OMPI_COMM_WORLD_SIZE=4)");
  EXPECT_EQ(detectError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}}),
            "SLURM_NTASKS=0 is not an integer in [1, 2147483647]");
  EXPECT_EQ(detectError({{"POSEIDON_RANK", "0"}, {"POSEIDON_SIZE", "99999999999"}}),
            "POSEIDON_SIZE=99999999999 is not an integer in [1, 2147483647]");
  EXPECT_EQ(detectError({{"POSEIDON_RANK", " 1"}, {"POSEIDON_SIZE", "2"}}),
            "POSEIDON_RANK=' 1' is not an integer in [0, POSEIDON_SIZE) (POSEIDON_SIZE=2)");
  EXPECT_EQ(
      detectError({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "x"}, {"POSEIDON_ROOT", "h:1"}}),
      "SLURM_LOCALID=x is not an integer in [0, SLURM_NTASKS) (SLURM_NTASKS=2)");
  EXPECT_EQ(detectError({{"POSEIDON_RANK", "1"}}),
            "POSEIDON_RANK=1 is set but POSEIDON_SIZE is not; expected both (poseidon launch)");
  EXPECT_EQ(detectError({{"OMPI_COMM_WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}),
            "OMPI_COMM_WORLD_SIZE=2 is set but OMPI_COMM_WORLD_RANK is not; expected both (openmpi launch)");
}

TEST(LaunchEnv, NothingFoundNamesEveryLauncher) {
  Result<LaunchInfo> info = detectLaunch(fakeEnv({{"POSEIDON_ROOT", "h:1"}}));
  ASSERT_FALSE(info);
  EXPECT_EQ(info.status().code(), StatusCode::kUnavailable);
  for (const char* name : {"POSEIDON_RANK", "POSEIDON_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "SLURM_PROCID", "SLURM_NTASKS"}) {
    EXPECT_NE(info.status().message().find(name), std::string::npos) << name << ": " << info.status().message();
  }
}

TEST(LaunchEnv, RootAddressErrors) {
  const std::map<std::string, std::string> two = {{"POSEIDON_RANK", "1"}, {"POSEIDON_SIZE", "2"}};
  auto withRoot = [&](const std::string& root) {
    auto vars = two;
    vars["POSEIDON_ROOT"] = root;
    return detectError(vars);
  };
  const std::string form = "is not host:port (IPv4, hostname or [IPv6]:port)";
  EXPECT_EQ(detectError(two),
            "POSEIDON_ROOT is not set; expected host:port (IPv4, hostname or [IPv6]:port) of rank 0's store "
            "since POSEIDON_SIZE=2 (or set POSEIDON_STORE_DIR to rendezvous through a shared directory)");
  EXPECT_EQ(withRoot("node01"), "POSEIDON_ROOT=node01 " + form + ": no ':port'");
  EXPECT_EQ(withRoot("node01:70000"),
            "POSEIDON_ROOT=node01:70000 " + form + ": port '70000' is not an integer in [1, 65535]");
  EXPECT_EQ(withRoot("node01:0"), "POSEIDON_ROOT=node01:0 " + form + ": port '0' is not an integer in [1, 65535]");
  EXPECT_EQ(withRoot(":5000"), "POSEIDON_ROOT=:5000 " + form + ": the host is empty");
  EXPECT_EQ(withRoot("fe80::1:5000"),
            "POSEIDON_ROOT=fe80::1:5000 " + form + ": an IPv6 address needs brackets, as in [fe80::1]:29500");
  EXPECT_EQ(withRoot("[fe80::1:5000"), "POSEIDON_ROOT=[fe80::1:5000 " + form + ": '[' without a closing ']'");
  EXPECT_EQ(withRoot("[fe80::1]5000"), "POSEIDON_ROOT=[fe80::1]5000 " + form + ": no ':port' after ']'");
  EXPECT_EQ(withRoot("[nothost]:5000"), "POSEIDON_ROOT=[nothost]:5000 " + form + ": 'nothost' is not an IPv6 address");
  EXPECT_EQ(withRoot("bad host:5000"),
            "POSEIDON_ROOT='bad host:5000' " + form + ": 'bad host' is not an IPv4 address or hostname");
}

TEST(LaunchEnv, RealEnvironmentOverload) {
  ::setenv("POSEIDON_RANK", "0", 1);
  ::setenv("POSEIDON_SIZE", "1", 1);
  Result<LaunchInfo> info = detectLaunch();
  ::unsetenv("POSEIDON_RANK");
  ::unsetenv("POSEIDON_SIZE");
  ASSERT_TRUE(info) << info.status().toString();
  EXPECT_EQ(info->size, 1);
}

// ---------------------------------------------------------------------------------------------
// openStore: four ranks as threads, rank 0 serving.

void runRanks(const std::function<LaunchInfo(int)>& infoFor, int size) {
  std::vector<std::thread> ranks;
  for (int r = 0; r < size; ++r) {
    ranks.emplace_back([&, r] {
      // Rank 0 starts last, to prove the others wait for it.
      if (r == 0) std::this_thread::sleep_for(200ms);
      Result<std::unique_ptr<Store>> store = openStore(infoFor(r), soon(), "");
      ASSERT_TRUE(store) << "rank " << r << ": " << store.status().toString();
      ASSERT_TRUE(setString(**store, fmt::format("addr/{}", r), fmt::format("host{}", r)).isOk());
      for (int peer = 0; peer < size; ++peer) {
        EXPECT_EQ(getString(**store, fmt::format("addr/{}", peer), soon()).value(), fmt::format("host{}", peer));
      }
      // Rank 0 owns the server: nobody may leave (and destroy it) before all are done.
      EXPECT_TRUE(barrier(**store, "finished", size, soon()).isOk());
    });
  }
  for (auto& rank : ranks) rank.join();
}

TEST(OpenStore, RankZeroServesTheOthersOverTcp) {
  const uint16_t port = unusedPort();
  ASSERT_NE(port, 0);
  runRanks(
      [&](int r) {
        LaunchInfo info;
        info.rank = r;
        info.size = 4;
        info.root_host = "127.0.0.1";
        info.root_port = port;
        info.source = "poseidon";
        return info;
      },
      4);
}

TEST(OpenStore, SharedDirectory) {
  TempDir dir;
  runRanks(
      [&](int r) {
        LaunchInfo info;
        info.rank = r;
        info.size = 4;
        info.source = "slurm";
        info.file_store_dir = dir.path() + "/store";
        return info;
      },
      4);
}

TEST(OpenStore, SingleProcessNeedsNoFixedPort) {
  // Two single-process jobs on one host with the default root must not collide.
  LaunchInfo info;
  info.source = "poseidon";
  Result<std::unique_ptr<Store>> first = openStore(info, soon(), "");
  Result<std::unique_ptr<Store>> second = openStore(info, soon(), "");
  ASSERT_TRUE(first) << first.status().toString();
  ASSERT_TRUE(second) << second.status().toString();
  ASSERT_TRUE(setString(**first, "k", "1").isOk());
  ASSERT_TRUE(setString(**second, "k", "2").isOk());
  EXPECT_EQ(getString(**first, "k", soon()).value(), "1");
  EXPECT_TRUE(barrier(**second, "alone", 1, soon()).isOk());
}

TEST(OpenStore, NoRootGivesConnectionErrorAtTheDeadline) {
  LaunchInfo info;
  info.rank = 1;
  info.size = 2;
  info.root_port = unusedPort();
  info.source = "openmpi";
  Result<std::unique_ptr<Store>> store = openStore(info, Deadline::after(200ms), "");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), StatusCode::kConnectionError);
  EXPECT_NE(store.status().message().find("rank 1 of 2"), std::string::npos) << store.status().message();
}

}  // namespace
}  // namespace poseidon::transport::bootstrap
