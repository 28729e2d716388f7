// The start-up agreement: ranks that built the same thing pass; one rank with another model,
// another item or a longer list makes every rank fail, each naming the ranks and the first
// differing item; a rank that never publishes is named by the deadline.
#include "scheme/start_agreement.h"

#include <gtest/gtest.h>

#include <thread>

#include "model/zoo.h"
#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::scheme {
namespace {

using namespace std::chrono_literals;

model::Fingerprint fingerprintOf(uint64_t fc3_floats) {
  model::Fingerprint f;
  f.add("ps.workers", "3");
  f.add("fc3.weight", fmt::format("{} floats", fc3_floats));
  f.add("fc3.bias", "10 floats");
  return f;
}

AgreementGroup groupOf(int ranks) {
  AgreementGroup group{"job 'test'", {}, [](int r) { return fmt::format("worker {} (rank {})", r, r); }};
  for (int r = 0; r < ranks; ++r) group.ranks.push_back(r);
  return group;
}

// Every rank of `prints` runs the agreement on its own thread; their statuses by rank.
std::vector<Status> agree(const std::vector<model::Fingerprint>& prints, std::chrono::milliseconds timeout = 10s,
                          std::vector<int> silent = {}) {
  testing::TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  EXPECT_TRUE(store.isOk());
  const AgreementGroup group = groupOf(static_cast<int>(prints.size()));
  std::vector<Status> statuses(prints.size());
  std::vector<std::thread> threads;
  const Deadline deadline = Deadline::after(timeout);
  for (int r = 0; r < static_cast<int>(prints.size()); ++r) {
    if (std::find(silent.begin(), silent.end(), r) != silent.end()) continue;
    threads.emplace_back([&, r] {
      statuses[static_cast<size_t>(r)] = agreeOnStart(**store, group, r, prints[static_cast<size_t>(r)], deadline);
    });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

TEST(StartAgreement, RanksThatBuiltTheSameModelPass) {
  const model::Fingerprint vgg = model::modelFingerprint(model::vgg19());
  for (const Status& s : agree({vgg, vgg, vgg, vgg})) EXPECT_TRUE(s.isOk()) << s.toString();
}

TEST(StartAgreement, OneRankWithAnotherTensorSizeFailsEveryRankNamingTheItem) {
  const auto statuses = agree({fingerprintOf(160), fingerprintOf(170), fingerprintOf(160)});
  for (size_t r = 0; r < statuses.size(); ++r) {
    ASSERT_EQ(statuses[r].code(), StatusCode::kInvalidArgument) << r << ": " << statuses[r].toString();
    EXPECT_NE(statuses[r].message().find("fc3.weight"), std::string::npos) << statuses[r].toString();
  }
  // Rank 0 meets rank 1 first; rank 1 meets rank 0; rank 2 passes rank 0 and meets rank 1.
  EXPECT_NE(statuses[0].message().find("worker 1 (rank 1) and worker 0 (rank 0) were not started alike: rank 1 has "
                                       "fc3.weight = 170 floats, rank 0 has 160 floats"),
            std::string::npos)
      << statuses[0].toString();
  EXPECT_NE(statuses[1].message().find("rank 0 has fc3.weight = 160 floats, rank 1 has 170 floats"), std::string::npos)
      << statuses[1].toString();
  EXPECT_NE(statuses[2].message().find("rank 1 has fc3.weight = 170 floats, rank 2 has 160 floats"), std::string::npos)
      << statuses[2].toString();
}

TEST(StartAgreement, AnotherModelOrALongerListIsNamed) {
  const model::Fingerprint vgg = model::modelFingerprint(model::vgg19());
  const model::Fingerprint vgg22k = model::modelFingerprint(model::vgg19_22k());
  auto statuses = agree({vgg, vgg22k});
  ASSERT_EQ(statuses[0].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(statuses[0].message().find("fc8"), std::string::npos) << statuses[0].toString();

  model::Fingerprint longer = fingerprintOf(160);
  longer.add("ps.consistency", "ssp:3");
  statuses = agree({fingerprintOf(160), longer});
  ASSERT_EQ(statuses[0].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(statuses[0].message().find("ps.consistency"), std::string::npos) << statuses[0].toString();
}

TEST(StartAgreement, ARankThatNeverPublishesIsNamedByTheDeadline) {
  const auto statuses = agree({fingerprintOf(1), fingerprintOf(1), fingerprintOf(1)}, 500ms, {2});
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(statuses[r].code(), StatusCode::kTimeout) << statuses[r].toString();
    EXPECT_NE(statuses[r].message().find("the set-up of worker 2 (rank 2)"), std::string::npos)
        << statuses[r].toString();
  }
}

TEST(StartAgreement, ARankOutsideTheGroupIsRefused) {
  testing::TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  ASSERT_TRUE(store.isOk());
  const Status s = agreeOnStart(**store, groupOf(2), 5, fingerprintOf(1), Deadline::after(1s));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("worker 5 (rank 5) is not one of the group's 2 ranks"), std::string::npos) << s.toString();
}

}  // namespace
}  // namespace poseidon::scheme
