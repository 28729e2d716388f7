// Which clock a restarted job resumes from: the newest every server has a checkpoint of; a fresh
// start when no server has any; and an error naming what each server has when some have
// checkpoints but no clock is common to all, instead of a fresh start that would drop them. A
// server started fresh beside an earlier run's checkpoints fails the job, naming its directory.
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

// The clock agreeResumeClock() gives a job whose servers published what they hold.
Result<uint64_t> agreeOnHeld(const std::vector<ps::HeldCheckpoints>& held) {
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  if (!store) return store.status();
  const ps::PsJob job{1, static_cast<int>(held.size()), "ps"};
  for (size_t server = 0; server < held.size(); ++server) {
    POSEIDON_RETURN_IF_ERROR(ps::publishCheckpointClocks(**store, job, static_cast<int>(server), held[server]));
  }
  return ps::agreeResumeClock(**store, job, Deadline::after(std::chrono::seconds(10)));
}

// ... of servers all resuming, with `clocks` (one list each).
Result<uint64_t> agreeOn(const std::vector<std::vector<uint64_t>>& clocks) {
  std::vector<ps::HeldCheckpoints> held;
  for (size_t server = 0; server < clocks.size(); ++server) {
    held.push_back({true, clocks[server], "/ckpt/" + std::to_string(server)});
  }
  return agreeOnHeld(held);
}

// The clock agreeResumeClock() gives for a store value published by hand.
Result<uint64_t> agreeOnValue(const std::string& value) {
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  if (!store) return store.status();
  const ps::PsJob job{1, 1, "ps"};
  POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(**store, "ps/checkpoints/0", value));
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

// A server resuming beside one started fresh with nothing: no clock in common, and the message
// says which one did not resume.
TEST(ResumeClock, AServerNotResumingIsNamedAsSuch) {
  auto clock = agreeOnHeld({{true, {4, 5}, "/a"}, {false, {}, "/b"}});
  ASSERT_FALSE(clock) << "resumed from clock " << *clock;
  EXPECT_NE(clock.status().message().find("server 0 has clocks 4-5, server 1 has none (not resuming)"),
            std::string::npos)
      << clock.status().message();
}

TEST(ResumeClock, FreshStartsWithEmptyDirectoriesStartAtZero) {
  auto clock = agreeOnHeld({{false, {}, "/a"}, {false, {}, ""}});
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 0u);
}

// Without the refusal this job would train from clock 0 and write clock 10 beside the old 10-12;
// a later resume would then take 12, the old run's state, on every server.
TEST(ResumeClock, AFreshStartBesideAnEarlierRunsCheckpointsFailsNamingTheDirectory) {
  auto clock = agreeOnHeld({{false, {}, "/a"}, {false, {10, 11, 12}, "/scratch/ckpt;1"}});
  ASSERT_FALSE(clock) << "started at clock " << *clock;
  EXPECT_EQ(clock.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = clock.status().message();
  EXPECT_NE(message.find("started without resuming, but server 1's directory '/scratch/ckpt;1' holds its checkpoints "
                         "of clocks 10-12, of an earlier run; resume to go on from them, or remove them"),
            std::string::npos)
      << message;
  // Every such server is named, whatever the others do.
  clock = agreeOnHeld({{false, {7}, "/a"}, {true, {7}, "/b"}});
  ASSERT_FALSE(clock) << "started at clock " << *clock;
  EXPECT_NE(clock.status().message().find("server 0's directory '/a' holds its checkpoint of clock 7"),
            std::string::npos)
      << clock.status().message();
}

TEST(ResumeClock, AValueThatIsNotAListOfClocksIsNamed) {
  auto clock = agreeOnValue("resume;12,x;/d");
  ASSERT_FALSE(clock);
  EXPECT_EQ(clock.status().code(), StatusCode::kProtocolError);
  EXPECT_NE(clock.status().message().find("'resume;12,x;/d': '12,x' is not a list of clocks"), std::string::npos)
      << clock.status().message();
}

TEST(ResumeClock, AnEmptyClockInTheListIsNamed) {
  for (const std::string value : {"resume;12,;/d", "resume;,12;/d", "resume;12,,13;/d"}) {
    auto clock = agreeOnValue(value);
    ASSERT_FALSE(clock) << value;
    EXPECT_EQ(clock.status().code(), StatusCode::kProtocolError) << value;
    EXPECT_NE(clock.status().message().find("is not a list of clocks"), std::string::npos) << clock.status().message();
  }
}

TEST(ResumeClock, AValueOfAnotherShapeIsNamed) {
  auto clock = agreeOnValue("12,13");
  ASSERT_FALSE(clock);
  EXPECT_EQ(clock.status().code(), StatusCode::kProtocolError);
  EXPECT_NE(clock.status().message().find("holds '12,13', expected 'resume;<clocks>;<dir>'"), std::string::npos)
      << clock.status().message();
  clock = agreeOnValue("later;12;/d");
  ASSERT_FALSE(clock);
  EXPECT_NE(clock.status().message().find("'later' is neither resume nor fresh"), std::string::npos)
      << clock.status().message();
  // Another rank wrote it: a long value is shown in part, with its size.
  clock = agreeOnValue(std::string(100000, 'x'));
  ASSERT_FALSE(clock);
  EXPECT_LT(clock.status().message().size(), 500u) << clock.status().message().size();
  EXPECT_NE(clock.status().message().find("...' (100000 bytes)"), std::string::npos) << clock.status().message();
}

}  // namespace
}  // namespace poseidon::testing
