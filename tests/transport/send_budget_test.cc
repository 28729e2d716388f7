// The bandwidth manager's meter: the token bucket's arithmetic on a clock the test drives, and a
// TCP device that keeps its budget. Only lower bounds on time are asserted (a loaded machine is
// slower, never faster), so the test cannot fail from noise.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/mesh.h"
#include "transport/common/send_budget.h"
#include "transport/device.h"

namespace poseidon::transport {
namespace {

using std::chrono::milliseconds;

TEST(SendBudget, StartsFullAccruesAtTheRateAndNeverHoldsMoreThanTheBurst) {
  const Clock::time_point t0 = Clock::now();
  SendBudget budget(1'000'000, 50'000, t0);  // 1 MB/s, 50 kB burst
  EXPECT_EQ(budget.take(80'000, 1, t0), 50'000u);
  EXPECT_EQ(budget.take(1, 1, t0), 0u);
  EXPECT_EQ(budget.timeUntil(10'000, t0), std::chrono::nanoseconds(10'000'000));
  EXPECT_EQ(budget.take(20'000, 1, t0 + milliseconds(10)), 10'000u);
  budget.giveBack(4'000);  // granted, not sent
  EXPECT_EQ(budget.take(100'000, 1, t0 + milliseconds(10)), 4'000u);
  // An idle second refills only up to the burst.
  EXPECT_EQ(budget.take(2'000'000, 1, t0 + milliseconds(1010)), 50'000u);
  // A sender that wants at least 10 kB gets nothing while 5 kB are there, then all there is.
  EXPECT_EQ(budget.take(30'000, 10'000, t0 + milliseconds(1015)), 0u);
  EXPECT_EQ(budget.take(30'000, 10'000, t0 + milliseconds(1022)), 12'000u);
  // Asking for more than the burst waits for the burst, not forever.
  EXPECT_EQ(budget.timeUntil(1'000'000, t0 + milliseconds(1022)), std::chrono::nanoseconds(50'000'000));
}

// Two budgets opened under one name draw from one bucket (as a worker's and its colocated server's
// devices do, across processes: the word lives in shared memory); the last one out removes it.
TEST(SendBudget, BudgetsSharingANameDrawFromOneBucket) {
  const std::string name = "test-" + std::to_string(::getpid());
  const std::string path = "/dev/shm/poseidon-budget-" + name;
  {
    auto first = SendBudget::shared(name, 1'000'000, 50'000);
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    auto second = SendBudget::shared(name, 1'000'000, 50'000);
    ASSERT_TRUE(second.isOk()) << second.status().toString();
    const Clock::time_point now = Clock::now();
    EXPECT_EQ((*first)->take(30'000, 1, now), 30'000u);
    EXPECT_LE((*second)->take(50'000, 1, now), 20'100u);  // what the first left, and 100 us of accrual
    // Another rate under the same name is refused, naming both.
    auto other = SendBudget::shared(name, 2'000'000, 50'000);
    ASSERT_FALSE(other.isOk());
    EXPECT_NE(other.status().message().find("2000000"), std::string::npos) << other.status().toString();
    EXPECT_NE(other.status().message().find("1000000"), std::string::npos) << other.status().toString();
    EXPECT_EQ(::access(path.c_str(), F_OK), 0);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " outlived its last user";
  auto bad = SendBudget::shared("../etc", 1'000'000, 50'000);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'../etc'"), std::string::npos) << bad.status().toString();
  DeviceOptions options;
  options.send_budget_share = name;
  EXPECT_NE(options.validate().message().find("without send_budget_bytes_per_s"), std::string::npos);
}

// /dev/shm is everyone's: a link planted under a share's name, or a file that is no budget, is
// refused naming the path, and neither it nor what a link points at is written.
TEST(SendBudget, AFileUnderTheShareNameThatIsNoBudgetIsRefusedAndLeftAlone) {
  const std::string name = "foreign-" + std::to_string(::getpid());
  const std::string path = "/dev/shm/poseidon-budget-" + name;
  testing::TempDir dir;
  const std::string target = dir.path() + "/victim";
  { std::ofstream(target) << ""; }
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0);
  auto linked = SendBudget::shared(name, 1'000'000, 50'000);
  EXPECT_FALSE(linked.isOk());
  EXPECT_NE(linked.status().message().find(path), std::string::npos) << linked.status().toString();
  struct stat info {};
  ASSERT_EQ(::stat(target.c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 0) << "the link's target was written";
  ::unlink(path.c_str());

  { std::ofstream(path) << std::string(sizeof(uint64_t) * 5, 'x'); }  // a budget's size, not its marker
  auto foreign = SendBudget::shared(name, 1'000'000, 50'000);
  EXPECT_FALSE(foreign.isOk());
  EXPECT_NE(foreign.status().message().find("not a budget of ours"), std::string::npos) << foreign.status().toString();
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), std::string(sizeof(uint64_t) * 5, 'x'));
  ::unlink(path.c_str());
}

TEST(SendBudget, DefaultBurstIsFiveMillisecondsOfTheRateAndAtLeast64KiB) {
  EXPECT_EQ(SendBudget::defaultBurst(1'000'000), 65536u);
  EXPECT_EQ(SendBudget::defaultBurst(1'250'000'000), 6'250'000u);
}

TEST(SendBudget, OnlyTcpKeepsABudgetAndATinyOneIsRefusedNamingIt) {
  DeviceOptions options;
  options.send_budget_bytes_per_s = 512;
  Status st = options.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("send_budget_bytes_per_s 512"), std::string::npos) << st.message();
  options.send_budget_bytes_per_s = 1'000'000;
  EXPECT_TRUE(options.validate().isOk());
  options.backend = "verbs";
  st = options.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("only the tcp backend"), std::string::npos) << st.message();
}

// 3 MiB written at 6 MB/s cannot land in less than (3 MiB - burst) / rate, about 0.51 s; unmetered
// loopback moves it in milliseconds. Both directions meter alike; the bytes arrive intact.
TEST(SendBudget, ATcpDeviceSendsNoFasterThanItsBudget) {
  constexpr uint64_t kRate = 6'000'000;
  constexpr size_t kBytes = size_t{3} << 20;
  DeviceOptions options;
  options.send_budget_bytes_per_s = kRate;
  options.stripe_bytes = 256 << 10;
  auto mesh = testing::makeMesh(2, options, "budget");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  testing::Mesh& m = *mesh;
  testing::Buffer source = testing::makeBuffer(m[0], kBytes, 3);
  testing::Buffer target = testing::makeBuffer(m[1], kBytes, 0);
  auto landed = m[1].pair(0).recvImm();
  const Clock::time_point start = Clock::now();
  auto write = m[0].pair(1).write(*source.region, 0, target.region->remote(), 0, kBytes, 42);
  ASSERT_TRUE(write->wait(Deadline::after(std::chrono::seconds(30))).isOk()) << write->status().toString();
  ASSERT_TRUE(landed->wait(Deadline::after(std::chrono::seconds(30))).isOk()) << landed->status().toString();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double least = static_cast<double>(kBytes - SendBudget::defaultBurst(kRate)) / kRate;
  EXPECT_GE(seconds, least) << "3 MiB at a budget of 6 MB/s";
  EXPECT_EQ(landed->imm(), 42u);
  EXPECT_EQ(testing::firstMismatch(target.bytes.data(), kBytes, 3), -1);
}

}  // namespace
}  // namespace poseidon::transport
