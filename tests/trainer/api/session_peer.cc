// session_peer: one rank of a small training job through trainer::Session, for the multiprocess
// restart tests. Workers train the tiny CNN on their Fashion-MNIST shards, checkpoint every few
// steps (the data position in the checkpoint's extra bytes) and write their final parameters; a
// rank can kill itself with SIGKILL to play a crash: a worker right after a given step, a server
// once a given file exists.
#include <fmt/format.h>
#include <signal.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/trainer/api/session_job.h"
#include "tests/trainer/api/tiny_cnn.h"
#include "tools/train/batch_reader.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/reference/network_session.h"

namespace {

using namespace poseidon;

struct PeerOptions {
  int rank = 0;
  int workers = 2;
  int servers = 1;
  std::string store_dir;
  uint64_t steps = 30;
  std::string checkpoint_dir;
  uint64_t checkpoint_every = 0;
  bool resume = false;
  int64_t die_at_step = -1;   // workers: SIGKILL right after ending this step
  std::string die_when_file;  // servers: SIGKILL once this file exists
  std::string params_out;
  int timeout_ms = 20000;
};

Status trainNetwork(trainer::Session& session, const PeerOptions& o, trainer::reference::Network* network) {
  const trainer::data::ImageSet set = *trainer::data::loadFashionMnist(trainer::data::Split::kTrain);
  POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
  POSEIDON_RETURN_IF_ERROR(session.start());
  auto reader =
      tools::BatchReader::create(set, {7, static_cast<uint32_t>(o.workers), static_cast<uint32_t>(o.rank), 8});
  if (!reader) return reader.status();
  trainer::data::Position position;
  if (o.resume) {
    auto extra = session.restoreCheckpoint(o.checkpoint_dir);
    if (!extra) return extra.status();
    auto restored = reader->sharder().restore(*extra);
    if (!restored) return restored.status();
    position = *restored;
  }
  network->setHooks(trainer::reference::sessionHooks(session));
  for (uint64_t s = session.iteration(); s < o.steps; ++s) {
    POSEIDON_RETURN_IF_ERROR(testing::trainStep(*network, session, *reader, position));
    if (o.checkpoint_every > 0 && (s + 1) % o.checkpoint_every == 0) {
      POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(o.checkpoint_dir, reader->sharder().save(position)));
    }
    if (static_cast<int64_t>(s) == o.die_at_step) ::raise(SIGKILL);
  }
  std::ofstream out(o.params_out, std::ios::binary);
  for (size_t l = 0; l < network->parametricCount(); ++l) {
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
    std::span<const float> p = network->params(l);
    out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size_bytes()));
  }
  if (!out) return makeStatus(StatusCode::kIoError, "writing {}", o.params_out);
  out.close();
  return session.finish();
}

Status runWorker(trainer::Session& session, const PeerOptions& o) {
  auto network = testing::tinyCnn(8, 100);
  if (!network) return network.status();
  // A sync may write into the registered buffers after a failure until finish() stops it: finish
  // before the network goes (TSan caught the SFB driver writing into a freed layer otherwise).
  const Status status = trainNetwork(session, o, &*network);
  if (!status.isOk()) (void)session.finish();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  PeerOptions o;
  CLI::App app("one rank of a small training job through trainer::Session");
  app.add_option("--rank", o.rank)->required();
  app.add_option("--workers", o.workers);
  app.add_option("--servers", o.servers);
  app.add_option("--store-dir", o.store_dir)->required();
  app.add_option("--steps", o.steps);
  app.add_option("--checkpoint-dir", o.checkpoint_dir);
  app.add_option("--checkpoint-every", o.checkpoint_every);
  app.add_flag("--resume", o.resume);
  app.add_option("--die-at-step", o.die_at_step);
  app.add_option("--die-when-file", o.die_when_file);
  app.add_option("--params-out", o.params_out);
  app.add_option("--timeout-ms", o.timeout_ms);
  CLI11_PARSE(app, argc, argv);

  trainer::SessionOptions options;
  options.job = "restart";
  options.layout = {o.workers, o.servers, 0};
  options.batch = 8;
  options.optimizer = *kernels::parseOptimizer("sgd:lr=0.05,momentum=0.9");
  options.chunk_bytes = 64 << 10;
  // Start-up waits for every process to load the data set (seconds on a loaded machine); the
  // syncs are what the tests time.
  options.startup_timeout = std::chrono::milliseconds(std::max(o.timeout_ms, 60000));
  options.sync_timeout = std::chrono::milliseconds(o.timeout_ms);
  options.serve_timeout = std::chrono::milliseconds(o.timeout_ms * 3);
  transport::bootstrap::LaunchInfo launch;
  launch.rank = o.rank;
  launch.size = o.workers + o.servers;
  launch.source = "session_peer";
  launch.file_store_dir = o.store_dir;
  auto session = trainer::Session::join(options, launch);
  Status status = session.status();
  if (session) {
    if ((*session)->isWorker()) {
      status = runWorker(**session, o);
    } else {
      if (!o.die_when_file.empty()) {
        std::thread([file = o.die_when_file] {
          while (!std::filesystem::exists(file)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          ::raise(SIGKILL);
        }).detach();
      }
      status = (*session)->serve();
    }
  }
  if (status.isOk()) return 0;
  fmt::print(stderr, "session_peer rank {}: {}\n", o.rank, status.toString());
  return 1;
}
