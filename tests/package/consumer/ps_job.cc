// A parameter-server job built against the installed library, every rank a thread of this
// process: 3 workers and 1 server train a small model for 20 clocks under BSP. With --mismatch,
// worker 1 is built with one tensor 10 floats longer; the program must then fail, every rank
// naming the difference, and exit non-zero — not train silently wrong parameters.
//   ps_job STORE_DIR [--mismatch]
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/chunk_layout.h"
#include "ps/client.h"
#include "ps/server.h"
#include "transport/bootstrap/open_store.h"
#include "transport/device.h"

using namespace poseidon;

namespace {

constexpr int kWorkers = 3;
constexpr int kServers = 1;
constexpr int kClocks = 20;

model::Model modelFor(uint64_t extra) {
  return model::Model(
      "consumer", {model::Layer::fullyConnected("fc1", 16, 32, true), model::Layer::fullyConnected("fc2", 10, 16, true),
                   model::Layer::other("scale", 4 + extra)});
}

Status runRank(int rank, const std::string& dir, bool mismatch) {
  const Deadline deadline = Deadline::after(std::chrono::seconds(30));
  transport::DeviceOptions options;
  options.secret = "consumer";
  auto device = transport::createDevice(options);
  if (!device) return device.status();
  transport::bootstrap::LaunchInfo launch;
  launch.rank = rank;
  launch.size = kWorkers + kServers;
  launch.file_store_dir = dir;
  auto store = transport::bootstrap::openStore(launch, deadline, options.secret);
  if (!store) return store.status();
  auto context = (*device)->createContext(rank, kWorkers + kServers, "ps");
  if (!context) return context.status();
  POSEIDON_RETURN_IF_ERROR((*context)->connect(**store, deadline));

  const model::Model model = modelFor(mismatch && rank == 1 ? 10 : 0);
  auto layout = ps::ChunkLayout::build(model.tensors(), kServers);
  if (!layout) return layout.status();
  const ps::PsJob job{kWorkers, kServers, "consumer"};
  if (rank >= kWorkers) {
    ps::ServerOptions server_options;
    server_options.optimizer = *kernels::parseOptimizer("sgd:lr=0.1,momentum=0.9");
    auto server = ps::Server::start(**context, **store, model, *layout, job, server_options, deadline);
    if (!server) return server.status();
    return (*server)->waitUntilDone(deadline);
  }
  auto client = ps::Client::start(**context, **store, model, *layout, job, ps::Consistency::bsp(), deadline);
  if (!client) return client.status();
  if (rank == 0) {
    for (float& w : (*client)->allParameters()) w = 0.5f;
  }
  POSEIDON_RETURN_IF_ERROR((*client)->initialize(deadline));
  // Every worker starts from worker 0's parameters: its first pull brings them.
  std::vector<transport::RequestPtr> first;
  for (size_t l = 0; l < (*client)->layerCount(); ++l) first.push_back((*client)->pull(l));
  for (const auto& request : first) POSEIDON_RETURN_IF_ERROR((*client)->wait(request, deadline));
  const std::vector<size_t> starts = model.layerStarts();  // each layer's first tensor
  for (int clock = 0; clock < kClocks; ++clock) {
    std::vector<transport::RequestPtr> requests;
    for (size_t l = (*client)->layerCount(); l-- > 0;) {  // backprop order
      for (size_t t = 0; t < model.layers()[l].tensors().size(); ++t) {
        for (float& g : (*client)->gradients(starts[l] + t)) g = 0.01f * static_cast<float>(rank + 1);
      }
      requests.push_back((*client)->push(l));
      requests.push_back((*client)->pull(l));
    }
    for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR((*client)->wait(request, deadline));
  }
  return (*client)->finish(deadline);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--mismatch") != 0)) {
    std::fprintf(stderr, "usage: ps_job STORE_DIR [--mismatch]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool mismatch = argc == 3;
  std::vector<Status> statuses(kWorkers + kServers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers + kServers; ++r) {
    ranks.emplace_back([&, r] { statuses[static_cast<size_t>(r)] = runRank(r, dir, mismatch); });
  }
  for (auto& t : ranks) t.join();
  int failed = 0;
  for (int r = 0; r < kWorkers + kServers; ++r) {
    const Status& s = statuses[static_cast<size_t>(r)];
    if (s.isOk()) continue;
    std::fprintf(stderr, "rank %d: %s\n", r, s.toString().c_str());
    ++failed;
  }
  if (failed > 0) return 1;
  std::printf("PS job of %d workers and %d server trained %d clocks\n", kWorkers, kServers, kClocks);
  return 0;
}
