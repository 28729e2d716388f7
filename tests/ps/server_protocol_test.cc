// A worker that breaks the PS protocol (an unknown immediate, a chunk the server does not hold,
// a push before the model exists, a second push before the first was acknowledged) is cut off
// with a message naming it and what it did; under BSP the honest workers then fail naming it
// instead of waiting forever. Nothing crashes.
#include <gtest/gtest.h>

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

struct Scenario {
  const char* name;
  std::vector<uint32_t> immediates;  // what the rogue worker 1 sends, in order
  const char* expected;              // in the server's failure
  bool after_init = false;           // first pull chunk 1 and wait until it arrives
};

uint32_t imm(ps::ToServer type, uint32_t chunk, uint64_t value = 0) {
  return ps::encodeImm(static_cast<uint8_t>(type), chunk, value);
}

class ServerProtocolTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(ServerProtocolTest, RogueWorkerIsCutOffAndNamed) {
  const Scenario& scenario = GetParam();
  auto mesh = makeMesh(3, transport::DeviceOptions{}, "ps");
  ASSERT_TRUE(mesh) << mesh.status().toString();
  auto store = transport::bootstrap::FileStore::open(mesh->dir->path() + "/ps-store");
  ASSERT_TRUE(store);
  const auto model = syntheticModel();
  auto layout = ps::ChunkLayout::build(model.tensors(), 1, 4096);
  const ps::PsJob job{2, 1, "ps"};
  const Deadline deadline = Deadline::after(std::chrono::seconds(30));

  Status server_status, worker_status;
  std::thread server_thread([&] {
    ps::ServerOptions options;
    auto server = ps::Server::start((*mesh)[2], **store, model, *layout, job, options, deadline);
    server_status = server ? (*server)->waitUntilDone(deadline) : server.status();
  });
  std::thread worker_thread([&] {
    auto client = ps::Client::start((*mesh)[0], **store, model, *layout, job, ps::Consistency::bsp(), deadline);
    worker_status = client ? trainWorker(**client, {0, 20, 1, true}, deadline) : client.status();
  });
  // The rogue worker speaks the protocol's wire but not its rules.
  std::vector<float> buffer(1 << 16);  // room for the whole model: the server writes pulled chunks here
  // Registered for the whole test: the server may still write into it after the rogue is done.
  auto region = (*mesh)[1].registerMemory(buffer.data(), buffer.size() * sizeof(float));
  ASSERT_TRUE(region) << region.status().toString();
  const Status rogue = [&]() -> Status {
    // It passes the start-up check like any worker built alike.
    POSEIDON_RETURN_IF_ERROR(
        ps::agreeOnPsJob(**store, job, 1, model, *layout, ps::Consistency::bsp(), nullptr, deadline));
    POSEIDON_RETURN_IF_ERROR(ps::publishWorkerResumeClocks(**store, job, 1, std::nullopt));
    POSEIDON_RETURN_IF_ERROR(ps::publishWorkerRegion(**store, job, 1, **region));
    auto servers = ps::fetchServerRegions(**store, job, deadline);
    if (!servers) return servers.status();
    if (auto resume = ps::agreeResumeClock(**store, job, deadline); !resume) return resume.status();
    transport::Pair& pair = (*mesh)[1].pair(2);
    if (scenario.after_init) {
      auto pull = pair.write(**region, 0, (*servers)[0].slots, 0, 0, imm(ps::ToServer::kPull, 1));
      for (;;) {
        auto note = pair.recvImm();
        POSEIDON_RETURN_IF_ERROR(note->wait(deadline));
        if (ps::decodeImm(note->imm()).type == static_cast<uint8_t>(ps::ToWorker::kParams)) break;
      }
      // `region` must outlive its write, whatever the write's outcome (the server's answer does
      // not complete the write's request).
      (void)pull->wait(deadline);
    }
    for (uint32_t value : scenario.immediates) {
      POSEIDON_RETURN_IF_ERROR(pair.write(**region, 0, (*servers)[0].slots, 0, 4, value)->wait(deadline));
    }
    return Status::ok();
  }();
  worker_thread.join();
  server_thread.join();
  ASSERT_TRUE(rogue.isOk()) << rogue.toString();
  EXPECT_NE(server_status.message().find("worker 1 (rank 1) is gone"), std::string::npos) << server_status.toString();
  EXPECT_NE(server_status.message().find(scenario.expected), std::string::npos) << server_status.toString();
  EXPECT_FALSE(worker_status.isOk());
  EXPECT_NE(worker_status.message().find("worker 1 (rank 1) is gone"), std::string::npos) << worker_status.toString();
}

INSTANTIATE_TEST_SUITE_P(
    Rogue, ServerProtocolTest,
    // Every 3-bit type is in use; the one only a checkpointing job sends, to a server without one:
    ::testing::Values(
        Scenario{"settled_without_checkpoints",
                 {imm(ps::ToServer::kCheckpointSettled, 0, 5)},
                 "told what every server did with checkpoint clock 5 (mod 2^28), but server 0 takes no checkpoints"},
        Scenario{"chunk_out_of_range", {imm(ps::ToServer::kPush, 9000)}, "named chunk 9000"},
        Scenario{"init_by_worker_1", {imm(ps::ToServer::kInit, 0)}, "worker 1 initialised chunk 0"},
        Scenario{"push_before_ack",
                 // Worker 0 may complete clock 0 of the chunk in between, making the
                 // second push legal; a third can never be.
                 {imm(ps::ToServer::kPush, 1), imm(ps::ToServer::kPush, 1), imm(ps::ToServer::kPush, 1)},
                 "before the previous one was acknowledged",
                 true},
        // A goodbye blaming a server this job does not have.
        Scenario{"bye_blaming_no_server",
                 {imm(ps::ToServer::kBye, 0, 6)},
                 "it said it leaves because of server 5, expected another of servers 0..0"},
        // A version it never pushed for: it would wait forever.
        Scenario{"pull_beyond_its_pushes",
                 {imm(ps::ToServer::kPull, 2, 5)},
                 "at a version (low bits 5) beyond its 0 pushes"}),
    [](const ::testing::TestParamInfo<Scenario>& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace poseidon::testing
