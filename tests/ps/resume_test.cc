// Which clock a restarted job resumes from: the newest every server has a checkpoint of; a fresh
// start when no server has any; and an error naming what each server has when some have
// checkpoints but no clock is common to all, instead of a fresh start that would drop them.
#include "ps/checkpoint/resume.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::testing {
namespace {

// The clock agreeResumeClock() gives a job whose servers published `clocks` (one list each).
Result<uint64_t> agreeOn(const std::vector<std::vector<uint64_t>>& clocks) {
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  if (!store) return store.status();
  const ps::PsJob job{1, static_cast<int>(clocks.size()), "ps"};
  for (size_t server = 0; server < clocks.size(); ++server) {
    POSEIDON_RETURN_IF_ERROR(ps::publishCheckpointClocks(**store, job, static_cast<int>(server), clocks[server]));
  }
  return ps::agreeResumeClock(**store, job, Deadline::after(std::chrono::seconds(10)));
}

TEST(ResumeClock, IsTheNewestClockEveryServerHas) {
  auto clock = agreeOn({{3, 5, 7}, {9, 7, 5}, {5, 7}});
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 7u);
}

TEST(ResumeClock, IsZeroWhenNoServerHasACheckpoint) {
  auto clock = agreeOn({{}, {}});
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 0u);
}

// Files no clock of which both servers have (removed by hand, or pruned by each server alone as
// before the servers agreed on a committed clock).
TEST(ResumeClock, CheckpointsWithNoClockInCommonFailNamingWhatEachServerHas) {
  auto clock = agreeOn({{18, 19, 20}, {15, 16, 17}});
  ASSERT_FALSE(clock) << "resumed from clock " << *clock;
  EXPECT_EQ(clock.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = clock.status().message();
  EXPECT_NE(message.find("no checkpoint clock is common to every server"), std::string::npos) << message;
  EXPECT_NE(message.find("server 0 has clocks 18-20, server 1 has clocks 15-17"), std::string::npos) << message;
}

TEST(ResumeClock, OneServerWithoutCheckpointsIsNamed) {
  auto clock = agreeOn({{4, 8, 9, 10}, {}});
  ASSERT_FALSE(clock) << "resumed from clock " << *clock;
  EXPECT_EQ(clock.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(clock.status().message().find("server 0 has clocks 4,8-10, server 1 has none"), std::string::npos)
      << clock.status().message();
}

TEST(ResumeClock, AValueThatIsNotAListOfClocksIsNamed) {
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  ASSERT_TRUE(store) << store.status().toString();
  const ps::PsJob job{1, 1, "ps"};
  ASSERT_TRUE(transport::bootstrap::setString(**store, "ps/checkpoints/0", "12,x").isOk());
  auto clock = ps::agreeResumeClock(**store, job, Deadline::after(std::chrono::seconds(10)));
  ASSERT_FALSE(clock);
  EXPECT_EQ(clock.status().code(), StatusCode::kProtocolError);
  EXPECT_NE(clock.status().message().find("'12,x', not a list of clocks"), std::string::npos)
      << clock.status().message();
}

}  // namespace
}  // namespace poseidon::testing
