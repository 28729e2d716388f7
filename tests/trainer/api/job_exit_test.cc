// The job's exit (trainer/api/job_exit.h) over a FileStore: a server arrives for the workers
// async went on without, once however many servers saw them go, never for worker 0; a rank that
// was taken for lost but comes after all fails saying so; an absent rank is named at the deadline.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/support/mesh.h"
#include "trainer/api/job_exit.h"
#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::testing {
namespace {

using transport::bootstrap::FileStore;
using transport::bootstrap::StoreView;

Deadline soon() { return Deadline::after(std::chrono::seconds(10)); }

class JobExitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = FileStore::open(dir_.path() + "/store");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(*opened);
    exit_ = std::make_unique<StoreView>(*store_, "job/exit");
  }

  // Each of `ranks` (a rank and the ranks it arrives for) leaves at once, on a thread of its own.
  std::vector<Status> leaveTogether(int size, const std::vector<std::pair<int, std::vector<int>>>& ranks) {
    std::vector<Status> statuses(ranks.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ranks.size(); ++i) {
      threads.emplace_back([&, i] {
        StoreView exit = *exit_;
        statuses[i] = trainer::leaveJob(exit, ranks[i].first, size, ranks[i].second, soon());
      });
    }
    for (std::thread& thread : threads) thread.join();
    return statuses;
  }

  // Only once every leave returned: add(key, 0) creates a missing key, and an arrived/<rank> key is an arrival.
  int64_t counter(const std::string& key) {
    auto value = exit_->add(key, 0);
    EXPECT_TRUE(value.isOk()) << value.status().toString();
    return value.isOk() ? *value : -1;
  }

  TempDir dir_;
  std::unique_ptr<FileStore> store_;
  std::unique_ptr<StoreView> exit_;
};

// Workers 0 and 1 finish, worker 2 is lost, and both servers (ranks 3 and 4) went on without it.
TEST_F(JobExitTest, AServerArrivesForALostWorkerOnceHoweverManyServersSawItGo) {
  const auto statuses = leaveTogether(5, {{0, {}}, {1, {}}, {3, {2}}, {4, {2}}});
  for (const Status& status : statuses) EXPECT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(counter("arrived/2"), 2);  // both servers tried; the first arrived for it
  for (int rank : {0, 1, 3, 4}) EXPECT_EQ(counter(fmt::format("arrived/{}", rank)), 1) << rank;
  auto gone = transport::bootstrap::getString(*exit_, "gone/2", soon());
  ASSERT_TRUE(gone.isOk()) << gone.status().toString();
  EXPECT_EQ(*gone, "lost");
}

// A worker whose connection broke after its last goodbye, but which lives on and comes to the exit
// after a server arrived in its place: it fails rather than arrive twice.
TEST_F(JobExitTest, ARankAServerArrivedForFailsSayingTheJobWentOnWithoutIt) {
  const auto statuses = leaveTogether(3, {{0, {}}, {2, {1}}});
  for (const Status& status : statuses) EXPECT_TRUE(status.isOk()) << status.toString();
  StoreView exit = *exit_;
  const Status late = trainer::leaveJob(exit, 1, 3, {}, soon());
  EXPECT_EQ(late.code(), StatusCode::kUnavailable) << late.toString();
  EXPECT_NE(late.message().find("a server ended the job without rank 1"), std::string::npos) << late.toString();
  EXPECT_EQ(counter("arrived/1"), 2);
}

// The other order: the worker came itself before the server looked, and the server's arrival for
// it counts nothing.
TEST_F(JobExitTest, AWorkerThatArrivedItselfIsNotArrivedForAgain) {
  std::vector<Status> statuses(3);
  std::thread worker0([&] {
    StoreView mine = *exit_;
    statuses[0] = trainer::leaveJob(mine, 0, 3, {}, soon());
  });
  std::thread worker1([&] {
    StoreView mine = *exit_;
    statuses[1] = trainer::leaveJob(mine, 1, 3, {}, soon());
  });
  // Not counter(): add(key, 0) would create the key, which is an arrival.
  EXPECT_TRUE(transport::bootstrap::getString(*exit_, "arrived/1", soon())) << "worker 1 never arrived";
  StoreView exit = *exit_;
  statuses[2] = trainer::leaveJob(exit, 2, 3, std::vector<int>{1}, soon());
  worker0.join();
  worker1.join();
  for (const Status& status : statuses) EXPECT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(counter("arrived/1"), 2);
  auto gone = transport::bootstrap::getString(*exit_, "gone/1", soon());
  ASSERT_TRUE(gone.isOk()) << gone.status().toString();
  EXPECT_EQ(*gone, "1");  // its own last word
}

// Worker 0 serves the store: a server that saw it go does not end the job in its place.
TEST_F(JobExitTest, WorkerZeroIsNeverArrivedFor) {
  const auto statuses = leaveTogether(3, {{0, {}}, {1, {}}, {2, {0}}});
  for (const Status& status : statuses) EXPECT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(counter("arrived/0"), 1);  // worker 0's own arrival alone
}

// Every lost rank is checked before any is arrived for.
TEST_F(JobExitTest, ALostRankOutsideTheJobOrItselfIsRefusedNamingIt) {
  StoreView exit = *exit_;
  for (int lost : {-1, 3, 7, 2}) {
    const Status status = trainer::leaveJob(exit, 2, 3, std::vector<int>{1, lost}, soon());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
    EXPECT_NE(status.message().find(fmt::format("rank 2 cannot arrive at the exit for rank {} (ranks 0..2)", lost)),
              std::string::npos)
        << status.toString();
  }
  EXPECT_EQ(counter("arrived/1"), 0);
  EXPECT_EQ(counter("arrived/2"), 0);
}

// Nobody arrives for a rank that is simply absent: the wait names it.
TEST_F(JobExitTest, WithoutALostRankAnAbsentRankTimesOutTheExitNamingIt) {
  StoreView exit = *exit_;
  const Status status = trainer::leaveJob(exit, 1, 3, {}, Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.toString();
  EXPECT_NE(status.message().find("rank 1 waits at the exit for rank 0"), std::string::npos) << status.toString();
}

}  // namespace
}  // namespace poseidon::testing
