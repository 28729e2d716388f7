#include "tests/trainer/api/session_job.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "kernels/optimizer_config.h"
#include "tests/support/mesh.h"
#include "trainer/data/fashion_mnist.h"

namespace poseidon::testing {

trainer::SessionOptions psSessionOptions(const std::string& job, int workers, const ps::Consistency& consistency) {
  trainer::SessionOptions options;
  options.job = job;
  options.layout = {workers, 2, 0};
  options.optimizer = kernels::parseOptimizer("sgd:lr=0.25").value();
  options.hybcomm.mode = trainer::HybCommMode::kFixed;
  options.hybcomm.fixed = scheme::Scheme::kPs;
  options.consistency = consistency;
  options.chunk_bytes = 4096;
  options.startup_timeout = std::chrono::seconds(20);
  options.sync_timeout = std::chrono::seconds(20);
  return options;
}

std::string joinError(const trainer::SessionOptions& options) {
  transport::bootstrap::LaunchInfo launch;
  launch.size = options.layout.size();
  launch.source = "test";
  auto session = trainer::Session::join(options, launch);
  return session.isOk() ? "OK" : session.status().toString();
}

std::vector<Status> runSessionJob(const trainer::SessionOptions& options, const WorkerBody& worker,
                                  const std::function<void(int rank, trainer::SessionOptions&)>& per_rank) {
  TempDir dir;
  const int size = options.layout.size();
  std::vector<Status> statuses(static_cast<size_t>(size));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < size; ++rank) {
    ranks.emplace_back([&, rank] {
      transport::bootstrap::LaunchInfo launch;
      launch.rank = rank;
      launch.size = size;
      launch.source = "test";
      launch.file_store_dir = dir.path();
      Status& status = statuses[static_cast<size_t>(rank)];
      trainer::SessionOptions mine = options;
      if (per_rank) per_rank(rank, mine);
      auto session = trainer::Session::join(mine, launch);
      if (!session) {
        status = session.status();
        return;
      }
      status = (*session)->isWorker() ? worker(**session, rank) : (*session)->serve();
    });
  }
  for (std::thread& rank : ranks) rank.join();
  return statuses;
}

Status trainStep(trainer::reference::Network& network, trainer::Session& session, tools::BatchReader& reader,
                 trainer::data::Position& position) {
  POSEIDON_RETURN_IF_ERROR(reader.read(position));
  auto loss = network.forward(reader.images(), reader.labels());
  if (!loss) return loss.status();
  POSEIDON_RETURN_IF_ERROR(network.backward());
  POSEIDON_RETURN_IF_ERROR(session.endIteration());
  position = reader.sharder().next(position);
  return Status::ok();
}

const trainer::data::ImageSet& fashionTrainSet() {
  static const trainer::data::ImageSet* set = [] {
    auto loaded = trainer::data::loadFashionMnist(trainer::data::Split::kTrain);
    if (!loaded) {
      // Every test that reads it then fails on the empty set; this says why.
      fmt::print(stderr, "loading Fashion-MNIST's training set: {}\n", loaded.status().toString());
      return new trainer::data::ImageSet();
    }
    return new trainer::data::ImageSet(std::move(*loaded));
  }();
  return *set;
}

std::string failures(const std::vector<Status>& statuses) {
  std::string text;
  for (size_t r = 0; r < statuses.size(); ++r) {
    if (!statuses[r].isOk()) text += fmt::format("rank {}: {}\n", r, statuses[r].toString());
  }
  return text;
}

}  // namespace poseidon::testing
