// poseidon-train: trains the reference CNN on Fashion-MNIST data-parallel through the library's
// embedding API (trainer/api/session.h). One process per rank, the rank from the launch
// environment (POSEIDON_RANK / POSEIDON_SIZE / POSEIDON_ROOT, mpirun, srun): workers first (see
// worker_loop.h), then the parameter-server ranks and any Adam-style servers, which serve().
// tools/demo starts a whole job on one machine.
//
// Exit codes: 0 done, 1 the job failed (the reason on stderr, naming the rank), 2 a bad command
// line or launch environment.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>

#include "tools/ps/job_options.h"
#include "tools/train/backward_profiler.h"
#include "tools/train/train_options.h"
#include "tools/train/worker_loop.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/reference/blas.h"
#include "trainer/reference/fashion_cnn.h"

namespace poseidon::tools {
namespace {

constexpr const char* kProgram = "poseidon-train";

struct WorkerData {
  trainer::data::ImageSet train;
  std::optional<trainer::data::ImageSet> test;  // worker 0's
};

Result<WorkerData> loadData(const TrainCommandLine& c, int rank) {
  WorkerData data;
  auto train = trainer::data::loadFashionMnist(trainer::data::Split::kTrain, c.data_dir);
  if (!train) return train.status();
  data.train = std::move(*train);
  if (rank != 0) return data;
  auto test = trainer::data::loadFashionMnist(trainer::data::Split::kTest, c.data_dir);
  if (!test) return test.status();
  data.test = std::move(*test);
  return data;
}

Status prepareOut(const TrainCommandLine& c) {
  std::error_code error;
  std::filesystem::create_directories(c.out_dir, error);
  if (error) return makeStatus(StatusCode::kIoError, "--out '{}': cannot create it: {}", c.out_dir, error.message());
  return Status::ok();
}

// The per-layer backward times of a planned merge: 5 local passes (the first a warm-up) of the
// network this worker will train, on its first batches.
Result<std::vector<double>> profileWorkerBackward(const TrainCommandLine& c, int rank,
                                                  const trainer::data::ImageSet& train) {
  auto network = trainer::reference::buildFashionCnn(c.batch, c.seed);
  if (!network) return network.status();
  auto reader =
      BatchReader::create(train, {c.seed, static_cast<uint32_t>(c.workers), static_cast<uint32_t>(rank), c.batch});
  if (!reader) return reader.status();
  return profileBackwardPasses(*network, *reader, 5);
}

Status runRank(const TrainCommandLine& c, const transport::bootstrap::LaunchInfo& launch) {
  const bool worker = c.layout().roleOf(launch.rank) == trainer::JobRole::kWorker;
  std::optional<WorkerData> data;
  if (worker) {
    POSEIDON_RETURN_IF_ERROR(prepareOut(c));
    auto loaded = loadData(c, launch.rank);
    if (!loaded) return loaded.status();
    data.emplace(std::move(*loaded));
  }
  auto address = listenAddress(c, launch);
  if (!address) return address.status();
  std::vector<std::string> layers;
  const model::Model cnn = trainer::reference::fashionCnnModel(c.batch);
  for (const model::Layer& layer : cnn.layers()) layers.push_back(layer.name());
  auto timeline = TrainTimeline::create(launch.rank, layers, c.timeline_steps);
  if (!timeline) return timeline.status();
  SchemeBytes bytes;
  trainer::SessionOptions options = sessionOptions(c, *address);
  if (worker && c.merge_options.mode == trainer::MergeOptions::Mode::kPlanned) {
    auto backward = profileWorkerBackward(c, launch.rank, data->train);
    if (!backward) return backward.status();
    options.merge.backward_seconds = std::move(*backward);
  }
  options.on_sync = [&bytes, t = timeline->get()](const trainer::SyncRecord& record) {
    bytes.add(record);
    t->onSync(record);
  };
  auto session = trainer::Session::join(options, launch);
  if (!session) return session.status();
  if (!worker) return (*session)->serve().withContext((*session)->describe());
  const WorkerRun run{&c, session->get(), timeline->get(), &bytes, &data->train, data->test ? &*data->test : nullptr};
  return runWorker(run).withContext((*session)->describe());
}

int run(const TrainCommandLine& c) {
  auto launch = transport::bootstrap::detectLaunch();
  if (!launch) {
    fmt::print(stderr, "{}: the launch environment: {}\n", kProgram, launch.status().message());
    return 2;
  }
  if (const std::string error = checkLaunchFitsLayout(c, *launch); !error.empty()) {
    fmt::print(stderr, "{}: {}\n", kProgram, error);
    return 2;
  }
  if (c.secret.empty()) {
    fmt::print(stderr,
               "{}: warning: no secret (--secret or POSEIDON_SECRET): any process that reaches the data "
               "port may join\n",
               kProgram);
  }
  trainer::reference::setBlasThreads(c.blas_threads);
  if (Status status = runRank(c, *launch); !status) {
    // On a terminal the progress line may still be showing: the failure goes on a line of its own.
    fmt::print(stderr, "{}{}: rank {}: {}\n", isatty(STDERR_FILENO) ? "\n" : "", kProgram, launch->rank,
               status.toString());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace poseidon::tools

int main(int argc, char** argv) {
  using namespace poseidon::tools;
  // The library logs warnings and worse to stderr, as the progress line does.
  spdlog::set_default_logger(spdlog::stderr_color_mt(kProgram));
  spdlog::set_level(spdlog::level::warn);
  TrainCommandLine c;
  if (auto code = parseCommandLine(
          kProgram,
          "poseidon-train: trains a CNN on Fashion-MNIST data-parallel through Poseidon (HybComm: PS, SFB, ring).\n"
          "One process per rank; the rank comes from POSEIDON_RANK / POSEIDON_SIZE / POSEIDON_ROOT (or mpirun,\n"
          "srun). Ranks 0..P1-1 are workers, then the PS servers, then any Adam servers. tools/demo runs a job.\n"
          "Exit: 0 ok, 1 failure, 2 bad usage.",
          argc, argv, [&](CLI::App& app) { addTrainOptions(app, c); },
          [&] { return checkTrainOptions(c, std::getenv("POSEIDON_SECRET")); })) {
    return *code;
  }
  try {
    return run(c);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
}
