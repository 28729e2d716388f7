// The end of a job is not a failure. A server closes its connections the moment it has every
// worker's kBye, while a worker may still be sending its kBye to the other servers: that close
// must not make the worker report the server lost (a kBye naming it), which would fail the other
// servers of a job that completed (Faults.ALinkDownAndUpAgainIsRiddenThroughBitIdentical, 1 CI
// run: worker 0's main thread was slow between its two kByes).
//
// Under async a worker that leaves naming a lost server may have lost one link, not a dead
// server: when another worker finishes after it, every server was there, and the job completed.
// But when every worker left unfinished, it did not.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <optional>
#include <thread>

#include "ps/checkpoint/resume.h"
#include "ps/imm_code.h"
#include "ps/region_exchange.h"
#include "ps/server.h"
#include "ps/start_check.h"
#include "tests/ps/synthetic_training.h"
#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::testing {
namespace {

using namespace std::chrono_literals;

// Forwards everything to `inner`, but holds a plain kBye (value 0) back until `release` returns:
// the worker's thread is descheduled between its kByes for as long as the test needs.
class SlowByePair final : public transport::Pair {
 public:
  SlowByePair(transport::Pair& inner, bool slow, std::function<void()> release)
      : inner_(inner), slow_(slow), release_(std::move(release)) {}
  int peerRank() const override { return inner_.peerRank(); }
  std::string peerName() const override { return inner_.peerName(); }
  Status status() const override { return inner_.status(); }
  transport::PairTraffic traffic() const override { return inner_.traffic(); }
  transport::RequestPtr sendv(uint32_t tag, std::span<const transport::Slice> slices) override {
    return inner_.sendv(tag, slices);
  }
  transport::RequestPtr recv(uint32_t tag, transport::MemoryRegion& region, uint64_t offset, uint64_t length) override {
    return inner_.recv(tag, region, offset, length);
  }
  transport::RequestPtr write(const transport::MemoryRegion& local, uint64_t local_offset,
                              const transport::RemoteDescriptor& remote, uint64_t remote_offset, uint64_t length,
                              uint32_t imm) override {
    const ps::Imm decoded = ps::decodeImm(imm);
    if (slow_ && decoded.type == static_cast<uint8_t>(ps::ToServer::kBye) && decoded.value == 0) {
      release_();
    }
    return inner_.write(local, local_offset, remote, remote_offset, length, imm);
  }
  transport::RequestPtr recvImm() override { return inner_.recvImm(); }

 private:
  transport::Pair& inner_;
  const bool slow_;
  const std::function<void()> release_;
};

class SlowByeContext final : public transport::Context {
 public:
  SlowByeContext(transport::Context& inner, int slow_peer, const std::function<void()>& release)
      : Context(inner.rank(), inner.size(), inner.name()), inner_(inner) {
    for (int peer = 0; peer < inner.size(); ++peer) {
      pairs_.push_back(
          peer == inner.rank() ? nullptr : std::make_unique<SlowByePair>(inner.pair(peer), peer == slow_peer, release));
    }
  }
  Result<std::unique_ptr<transport::MemoryRegion>> registerMemory(void* data, size_t length) override {
    return inner_.registerMemory(data, length);
  }
  Status connect(transport::bootstrap::Store&, Deadline) override { return Status::ok(); }
  transport::Pair& pair(int peer) override { return *pairs_[static_cast<size_t>(peer)]; }

 private:
  transport::Context& inner_;
  std::vector<std::unique_ptr<SlowByePair>> pairs_;
};

// A mesh of `ranks` (devices connected), a FileStore beside it, the synthetic model in 4 KiB
// chunks over 2 servers.
class PsLeaving : public ::testing::Test {
 protected:
  void open(int ranks) {
    auto mesh = makeMesh(ranks, transport::DeviceOptions{}, "ps");
    ASSERT_TRUE(mesh) << mesh.status().toString();
    mesh_ = std::move(*mesh);
    auto store = transport::bootstrap::FileStore::open(mesh_.dir->path() + "/ps-store");
    ASSERT_TRUE(store) << store.status().toString();
    store_ = std::move(*store);
    auto layout = ps::ChunkLayout::build(model_.tensors(), 2, 4096);
    ASSERT_TRUE(layout) << layout.status().toString();
    layout_ = std::move(*layout);
  }

  Mesh mesh_;
  std::unique_ptr<transport::bootstrap::FileStore> store_;
  const model::Model model_ = syntheticModel();
  std::optional<ps::ChunkLayout> layout_;
};

TEST_F(PsLeaving, AServerClosingOnceItHasEveryByeIsNotReportedAsLost) {
  // Worker (rank 0), server 0 (rank 1), server 1 (rank 2). The worker's kBye to server 1 waits
  // until server 0 has finished and closed: the order CI met by chance, every run.
  ASSERT_NO_FATAL_FAILURE(open(3));
  const ps::PsJob job{1, 2, "ps"};
  const Deadline deadline = Deadline::after(60s);
  std::atomic<bool> server0_closed{false};
  SlowByeContext worker_context(mesh_[0], job.serverRank(1), [&] {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!server0_closed.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // and the worker's listener has seen the close
  });

  Status server_status[2];
  std::vector<std::thread> servers;
  for (int s = 0; s < 2; ++s) {
    servers.emplace_back([&, s] {
      const int rank = job.serverRank(s);
      auto server = ps::Server::start(mesh_[rank], *store_, model_, *layout_, job, ps::ServerOptions{}, deadline);
      server_status[s] = server ? (*server)->waitUntilDone(deadline) : server.status();
      if (s != 0) return;
      // As a server process exits: its connections close at once.
      if (server) server->reset();
      mesh_.contexts[static_cast<size_t>(rank)].reset();
      server0_closed.store(true);
    });
  }
  Status worker_status;
  {
    auto client = ps::Client::start(worker_context, *store_, model_, *layout_, job, ps::Consistency::bsp(), deadline);
    worker_status = client ? trainWorker(**client, {0, 5, 1, true}, deadline) : client.status();
  }
  for (std::thread& thread : servers) thread.join();
  EXPECT_TRUE(worker_status.isOk()) << worker_status.toString();
  EXPECT_TRUE(server0_closed.load());
  for (int s = 0; s < 2; ++s)
    EXPECT_TRUE(server_status[s].isOk()) << "server " << s << ": " << server_status[s].toString();
}

TEST_F(PsLeaving, AnAsyncServerToldOfALostServerSucceedsWhenAWorkerFinishesAfter) {
  // Workers 0 (a Client) and 1 (by hand), servers 0 and 1 (ranks 2 and 3).
  ASSERT_NO_FATAL_FAILURE(open(4));
  const ps::PsJob job{2, 2, "ps"};
  const Deadline deadline = Deadline::after(60s);
  ps::ServerOptions options;
  options.consistency = ps::Consistency::async();

  std::atomic<ps::Server*> server0{nullptr};
  std::atomic<bool> reported{false};
  Status server_status[2];
  std::vector<std::thread> servers;
  for (int s = 0; s < 2; ++s) {
    servers.emplace_back([&, s] {
      auto server = ps::Server::start(mesh_[job.serverRank(s)], *store_, model_, *layout_, job, options, deadline);
      if (!server) {
        server_status[s] = server.status();
        return;
      }
      if (s == 0) server0.store(server->get());
      server_status[s] = (*server)->waitUntilDone(deadline);
      if (s == 0) server0.store(nullptr);
    });
  }
  Status worker_status;
  std::thread worker([&] {
    auto client = ps::Client::start(mesh_[0], *store_, model_, *layout_, job, ps::Consistency::async(), deadline);
    if (!client) {
      worker_status = client.status();
      return;
    }
    // Only once server 0 went on without worker 1: this worker's goodbye comes after that report.
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!reported.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    worker_status = trainWorker(**client, {0, 5, 1, true}, deadline);
  });
  // Worker 1 starts like any worker, then says goodbye to server 0 naming server 1 as lost (as a
  // worker whose link to it broke does) and a plain goodbye to server 1.
  std::vector<float> buffer(1 << 16);
  auto region = mesh_[1].registerMemory(buffer.data(), buffer.size() * sizeof(float));
  ASSERT_TRUE(region) << region.status().toString();
  const Status leaver = [&]() -> Status {
    POSEIDON_RETURN_IF_ERROR(
        ps::agreeOnPsJob(*store_, job, 1, model_, *layout_, ps::Consistency::async(), nullptr, deadline));
    POSEIDON_RETURN_IF_ERROR(ps::publishWorkerResumeClocks(*store_, job, 1, std::nullopt));
    POSEIDON_RETURN_IF_ERROR(ps::publishWorkerRegion(*store_, job, 1, **region));
    auto regions = ps::fetchServerRegions(*store_, job, deadline);
    if (!regions) return regions.status();
    if (auto resume = ps::agreeResumeClock(*store_, job, deadline); !resume) return resume.status();
    const auto bye = [](uint64_t value) { return ps::encodeImm(static_cast<uint8_t>(ps::ToServer::kBye), 0, value); };
    POSEIDON_RETURN_IF_ERROR(
        mesh_[1].pair(job.serverRank(0)).write(**region, 0, (*regions)[0].slots, 0, 4, bye(2))->wait(deadline));
    POSEIDON_RETURN_IF_ERROR(
        mesh_[1].pair(job.serverRank(1)).write(**region, 0, (*regions)[1].slots, 0, 4, bye(0))->wait(deadline));
    const auto until = std::chrono::steady_clock::now() + 20s;
    for (;;) {
      ps::Server* server = server0.load();
      if (server != nullptr && server->lostWorkers() == std::vector<int>{1}) return Status::ok();
      if (std::chrono::steady_clock::now() > until) {
        return makeStatus(StatusCode::kTimeout, "server 0 never went on without worker 1");
      }
      std::this_thread::sleep_for(1ms);
    }
  }();
  reported.store(true);
  worker.join();
  for (std::thread& thread : servers) thread.join();
  EXPECT_TRUE(leaver.isOk()) << leaver.toString();
  EXPECT_TRUE(worker_status.isOk()) << worker_status.toString();
  for (int s = 0; s < 2; ++s) {
    EXPECT_TRUE(server_status[s].isOk()) << "server " << s << ": " << server_status[s].toString();
  }
}

// Async goes on without lost workers, but a job whose every worker left unfinished did not end:
// the server fails, naming the first to go (before, it returned OK as if the job had finished).
TEST_F(PsLeaving, AnAsyncServerWhoseEveryWorkerLeftUnfinishedFailsNamingTheFirst) {
  // Worker 0, server 0 (rank 1), server 1 (rank 2).
  ASSERT_NO_FATAL_FAILURE(open(3));
  const ps::PsJob job{1, 2, "ps"};
  const Deadline deadline = Deadline::after(60s);
  ps::ServerOptions options;
  options.consistency = ps::Consistency::async();
  Status server_status[2];
  std::vector<std::thread> servers;
  for (int s = 0; s < 2; ++s) {
    servers.emplace_back([&, s] {
      auto server = ps::Server::start(mesh_[job.serverRank(s)], *store_, model_, *layout_, job, options, deadline);
      server_status[s] = server ? (*server)->waitUntilDone(deadline) : server.status();
    });
  }
  Status worker_status;
  {
    auto client = ps::Client::start(mesh_[0], *store_, model_, *layout_, job, ps::Consistency::async(), deadline);
    worker_status = client ? trainWorker(**client, {0, 3, 1, false}, deadline) : client.status();
  }
  mesh_.contexts[0].reset();  // the worker's process ends without a goodbye: its connections close
  for (std::thread& thread : servers) thread.join();
  EXPECT_TRUE(worker_status.isOk()) << worker_status.toString();
  for (int s = 0; s < 2; ++s) {
    EXPECT_NE(server_status[s].message().find("every worker left without finishing; the first"), std::string::npos)
        << "server " << s << ": " << server_status[s].toString();
    EXPECT_NE(server_status[s].message().find("worker 0 (rank 0) is gone"), std::string::npos)
        << "server " << s << ": " << server_status[s].toString();
  }
}

}  // namespace
}  // namespace poseidon::testing
