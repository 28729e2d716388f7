// A server that breaks the PS protocol toward a worker (a checkpoint outcome no server sends):
// the worker fails naming that server and the value, instead of crashing or misreading it.
#include <gtest/gtest.h>

#include <thread>

#include "ps/checkpoint/checkpoint_notice.h"
#include "ps/checkpoint/resume.h"
#include "ps/client.h"
#include "ps/imm_code.h"
#include "ps/region_exchange.h"
#include "ps/start_check.h"
#include "tests/ps/synthetic_training.h"
#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::testing {
namespace {

TEST(ClientProtocol, AnUnknownCheckpointOutcomeFailsTheWorkerNamingIt) {
  auto mesh = makeMesh(2, transport::DeviceOptions{}, "ps");
  ASSERT_TRUE(mesh) << mesh.status().toString();
  auto store = transport::bootstrap::FileStore::open(mesh->dir->path() + "/ps-store");
  ASSERT_TRUE(store);
  const auto model = syntheticModel();
  auto layout = ps::ChunkLayout::build(model.tensors(), 1, 4096);
  ASSERT_TRUE(layout) << layout.status().toString();
  const ps::PsJob job{1, 1, "ps"};
  const Deadline deadline = Deadline::after(std::chrono::seconds(30));

  Status worker_status;
  std::thread worker_thread([&] {
    worker_status = [&]() -> Status {
      auto client = ps::Client::start((*mesh)[0], **store, model, *layout, job, ps::Consistency::bsp(), deadline);
      if (!client) return client.status();
      POSEIDON_RETURN_IF_ERROR((*client)->initialize(deadline));
      return (*client)->wait((*client)->pull(0), deadline);
    }();
  });
  // The rogue server starts up like any server, then tells of a checkpoint outcome 7.
  std::vector<float> params(1 << 16), slots(1 << 16);  // room for the model: the worker writes here
  auto params_region = (*mesh)[1].registerMemory(params.data(), params.size() * sizeof(float));
  auto slots_region = (*mesh)[1].registerMemory(slots.data(), slots.size() * sizeof(float));
  ASSERT_TRUE(params_region && slots_region);
  const Status rogue = [&]() -> Status {
    const kernels::OptimizerConfig optimizer;
    const ps::ServerSetUp set_up{&optimizer, true};
    POSEIDON_RETURN_IF_ERROR(
        ps::agreeOnPsJob(**store, job, 1, model, *layout, ps::Consistency::bsp(), &set_up, deadline));
    POSEIDON_RETURN_IF_ERROR(ps::publishCheckpointClocks(**store, job, 0, ps::HeldCheckpoints{}));
    POSEIDON_RETURN_IF_ERROR(ps::publishServerRegions(**store, job, 0, **params_region, **slots_region));
    if (auto resume = ps::agreeResumeClock(**store, job, deadline); !resume) return resume.status();
    auto workers = ps::fetchWorkerRegions(**store, job, deadline);
    if (!workers) return workers.status();
    const uint32_t outcome =
        ps::encodeCheckpointNotice(static_cast<uint8_t>(ps::ToWorker::kCheckpointOutcome), 7, ps::kOutcomeCodeBits, 3);
    return (*mesh)[1].pair(0).write(**params_region, 0, (*workers)[0], 0, 0, outcome)->wait(deadline);
  }();
  worker_thread.join();
  ASSERT_TRUE(rogue.isOk()) << rogue.toString();
  EXPECT_EQ(worker_status.code(), StatusCode::kProtocolError) << worker_status.toString();
  EXPECT_NE(worker_status.message().find("server 0 (rank 1): told checkpoint outcome 7 (expected 0 to 5)"),
            std::string::npos)
      << worker_status.toString();
}

}  // namespace
}  // namespace poseidon::testing
