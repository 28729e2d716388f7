// The BSP workers' agreement on which of their checkpoints to restore
// (trainer/api/worker_checkpoint_agreement.h), over a FileStore: the newest iteration every
// worker has, an error naming what this worker has when none is common or its directory cannot
// be read, and a peer's list that is not one named with its key.
#include "trainer/api/worker_checkpoint_agreement.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/mesh.h"
#include "trainer/api/worker_checkpoint.h"
#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/store.h"

namespace poseidon::testing {
namespace {

using transport::bootstrap::FileStore;
using transport::bootstrap::StoreView;

Deadline soon() { return Deadline::after(std::chrono::seconds(10)); }

class WorkerCheckpointAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = FileStore::open(dir_.path() + "/store");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(*opened);
  }
  // Only the names are read: an empty file per checkpoint.
  void holds(int rank, std::vector<uint64_t> iterations) {
    std::filesystem::create_directories(checkpoints());
    for (uint64_t i : iterations) std::ofstream(trainer::workerCheckpointPath(checkpoints(), rank, i));
  }
  std::string checkpoints() const { return dir_.path() + "/ckpt"; }
  // Both workers agree at once, each from `dirs[rank]`.
  std::vector<Result<uint64_t>> agree(const std::vector<std::string>& dirs) {
    std::vector<Result<uint64_t>> results(dirs.size(), makeStatus(StatusCode::kInternal, "not run"));
    std::vector<std::thread> threads;
    for (size_t w = 0; w < dirs.size(); ++w) {
      threads.emplace_back([&, w] {
        StoreView resume(*store_, "job/resume");
        results[w] = trainer::agreeOnWorkerCheckpoint(resume, dirs[w], static_cast<int>(w),
                                                      static_cast<int>(dirs.size()), soon());
      });
    }
    for (std::thread& thread : threads) thread.join();
    return results;
  }

  TempDir dir_;
  std::unique_ptr<FileStore> store_;
};

TEST_F(WorkerCheckpointAgreementTest, IsTheNewestIterationEveryWorkerHas) {
  holds(0, {3, 6, 9, 12});
  holds(1, {3, 6, 9});  // crashed before its file of 12
  for (auto& result : agree({checkpoints(), checkpoints()})) {
    ASSERT_TRUE(result) << result.status().toString();
    EXPECT_EQ(*result, 9u);
  }
}

TEST_F(WorkerCheckpointAgreementTest, NoCommonIterationFailsNamingWhatThisWorkerHas) {
  holds(0, {3, 6});
  holds(1, {9});
  const auto results = agree({checkpoints(), checkpoints()});
  ASSERT_FALSE(results[0]);
  EXPECT_EQ(results[0].status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(results[0].status().message().find("no checkpoint in " + checkpoints() +
                                               " that every worker has (this worker has iterations [3,6])"),
            std::string::npos)
      << results[0].status().toString();
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].status().message().find("[9]"), std::string::npos) << results[1].status().toString();
}

// As root a permission would not stop the read: a file where the directory should be does.
TEST_F(WorkerCheckpointAgreementTest, AWorkerThatCannotReadItsDirectorySaysWhyAndTheOthersFailAtOnce) {
  holds(0, {3});
  const std::string a_file = dir_.path() + "/a-file";
  std::ofstream(a_file) << "x";
  const auto started = std::chrono::steady_clock::now();
  const auto results = agree({checkpoints(), a_file});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5)) << "a worker waited for the other";
  ASSERT_FALSE(results[0]);
  EXPECT_NE(results[0].status().message().find("this worker has iterations [3])"), std::string::npos)
      << results[0].status().toString();
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].status().message().find(fmt::format(
                "this worker has iterations []: IoError: cannot read the checkpoint directory '{}'", a_file)),
            std::string::npos)
      << results[1].status().toString();
}

TEST_F(WorkerCheckpointAgreementTest, APeersListThatIsNotOneIsNamedWithItsKey) {
  holds(0, {3});
  StoreView resume(*store_, "job/resume");
  ASSERT_TRUE(transport::bootstrap::setString(resume, "1", "3,x").isOk());
  auto result = trainer::agreeOnWorkerCheckpoint(resume, checkpoints(), 0, 2, soon());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.status().code(), StatusCode::kProtocolError);
  EXPECT_NE(result.status().message().find("store key job/resume/1 holds '3,x'"), std::string::npos)
      << result.status().toString();
}

}  // namespace
}  // namespace poseidon::testing
