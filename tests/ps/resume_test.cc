// Which clock a restarted job resumes from: the newest every server has a checkpoint of (and every
// worker with state of its own a file of); a fresh start when no server has any; and an error naming what each server
// has when some have checkpoints but no clock is common to all, instead of a fresh start that would drop them. A server
// started fresh beside an earlier run's checkpoints fails the job, naming its directory.
#include "ps/checkpoint/resume.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::testing {
namespace {

using WorkerClocks = std::optional<std::vector<uint64_t>>;  // nullopt: any clock

// The clock agreeResumeClock() gives a job whose servers and workers published what they hold
// (by default one worker that takes any clock).
Result<uint64_t> agreeOnHeld(const std::vector<ps::HeldCheckpoints>& held,
                             const std::vector<WorkerClocks>& workers = {std::nullopt}) {
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  if (!store) return store.status();
  const ps::PsJob job{static_cast<int>(workers.size()), static_cast<int>(held.size()), "ps"};
  for (size_t server = 0; server < held.size(); ++server) {
    POSEIDON_RETURN_IF_ERROR(ps::publishCheckpointClocks(**store, job, static_cast<int>(server), held[server]));
  }
  for (size_t worker = 0; worker < workers.size(); ++worker) {
    POSEIDON_RETURN_IF_ERROR(ps::publishWorkerResumeClocks(**store, job, static_cast<int>(worker), workers[worker]));
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

// The clock agreeResumeClock() gives for store values published by hand: a server's, a worker's.
Result<uint64_t> agreeOnValue(const std::string& value, const std::string& worker_value = "any") {
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  if (!store) return store.status();
  const ps::PsJob job{1, 1, "ps"};
  POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(**store, "ps/checkpoints/0", value));
  POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(**store, "ps/checkpoints/worker-0", worker_value));
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

// A worker with state of its own (a Session's trainer position) resumes only where it has it: a
// crash after the servers wrote clock 9 but before worker 1 wrote its file of 9 resumes from 6.
TEST(ResumeClock, IsTheNewestClockEveryServerAndEveryWorkerWithStateHas) {
  const std::vector<ps::HeldCheckpoints> servers = {{true, {3, 6, 9}, "/a"}, {true, {6, 9}, "/b"}};
  auto clock = agreeOnHeld(servers, {std::vector<uint64_t>{3, 6, 9}, std::vector<uint64_t>{6, 3}, std::nullopt});
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 6u);
  // Workers that take any clock leave the servers' newest.
  clock = agreeOnHeld(servers, {std::nullopt, std::nullopt});
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 9u);
  // No server has any: a fresh start, whatever the workers hold (the Session then says so).
  clock = agreeOnHeld({{true, {}, "/a"}}, {std::vector<uint64_t>{4}});
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 0u);
}

TEST(ResumeClock, AWorkerWithoutAnyOfTheServersClocksIsNamed) {
  auto clock = agreeOnHeld({{true, {6, 9}, "/a"}},
                           {std::vector<uint64_t>{6, 9}, std::vector<uint64_t>{3}, std::vector<uint64_t>{}});
  ASSERT_FALSE(clock) << "resumed from clock " << *clock;
  EXPECT_EQ(clock.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = clock.status().message();
  EXPECT_NE(message.find("no checkpoint clock every server has is one every worker can resume from"), std::string::npos)
      << message;
  EXPECT_NE(message.find("server 0 has clocks 6,9; worker 0 from clocks 6,9, worker 1 from clock 3, worker 2 from "
                         "none"),
            std::string::npos)
      << message;
}

TEST(ResumeClock, AWorkersValueOfAnotherShapeIsNamed) {
  for (const std::string value : {"", "all", "only;4,x", "only;4,", "4,5"}) {
    auto clock = agreeOnValue("resume;4;/d", value);
    ASSERT_FALSE(clock) << value;
    EXPECT_EQ(clock.status().code(), StatusCode::kProtocolError) << value;
    EXPECT_NE(clock.status().message().find("ps/checkpoints/worker-0"), std::string::npos) << clock.status().message();
  }
  auto clock = agreeOnValue("resume;4,5;/d", "only;5");
  ASSERT_TRUE(clock) << clock.status().toString();
  EXPECT_EQ(*clock, 5u);
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

// The BSP workers' checkpoint lists (trainer/api/session.cc) go through the same parser: sorted,
// empty for none, and a bad item named with the key.
TEST(ClockList, ParsesSortedAndNamesABadItemWithItsKey) {
  auto clocks = ps::parseClockList("job/resume/1", "9,3,6");
  ASSERT_TRUE(clocks) << clocks.status().toString();
  EXPECT_EQ(*clocks, (std::vector<uint64_t>{3, 6, 9}));
  clocks = ps::parseClockList("job/resume/1", "");
  ASSERT_TRUE(clocks) << clocks.status().toString();
  EXPECT_TRUE(clocks->empty());
  for (const std::string value : {"3,x", "3,,6", "-1", "3 ,6", "99999999999999999999999"}) {
    clocks = ps::parseClockList("job/resume/1", value);
    ASSERT_FALSE(clocks) << value;
    EXPECT_EQ(clocks.status().code(), StatusCode::kProtocolError) << value;
    EXPECT_NE(clocks.status().message().find("store key job/resume/1 holds '" + value + "'"), std::string::npos)
        << clocks.status().message();
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
