#include "tests/ps/ps_cluster.h"

#include <thread>

#include "tests/ps/synthetic_training.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::testing {

ClusterRun runCluster(const ClusterSpec& spec) {
  const int size = spec.workers + spec.servers;
  ClusterRun run;
  run.worker_status.assign(static_cast<size_t>(spec.workers), Status::ok());
  run.server_status.assign(static_cast<size_t>(spec.servers), Status::ok());
  run.worker_params.resize(static_cast<size_t>(spec.workers));
  run.server_params.resize(static_cast<size_t>(spec.servers));
  auto mesh = makeMesh(size, spec.device, "ps");
  if (!mesh) {
    for (auto& status : run.worker_status) status = mesh.status();
    return run;
  }
  TempDir own_dir;
  auto store =
      transport::bootstrap::FileStore::open((spec.store_dir.empty() ? own_dir.path() : spec.store_dir) + "/ps-store");
  if (!store) {
    for (auto& status : run.worker_status) status = store.status();
    return run;
  }
  const auto model = syntheticModel();
  auto layout = ps::ChunkLayout::build(model.tensors(), spec.servers, spec.chunk_bytes);
  const ps::PsJob job{spec.workers, spec.servers, "ps"};
  const Deadline deadline = Deadline::after(spec.deadline);
  std::vector<std::thread> threads;
  for (int s = 0; s < spec.servers; ++s) {
    threads.emplace_back([&, s] {
      auto server = ps::Server::start((*mesh)[job.serverRank(s)], **store, model, *layout, job, spec.server, deadline);
      if (!server) {
        run.server_status[static_cast<size_t>(s)] = server.status();
        return;
      }
      run.server_status[static_cast<size_t>(s)] = (*server)->waitUntilDone(deadline);
      auto params = (*server)->parameters();
      run.server_params[static_cast<size_t>(s)].assign(params.begin(), params.end());
    });
  }
  for (int w = 0; w < spec.workers; ++w) {
    threads.emplace_back([&, w] {
      ps::ClientOptions options = spec.client;
      options.consistency = spec.server.consistency;
      auto client = ps::Client::start((*mesh)[w], **store, model, *layout, job, options, deadline);
      if (!client) {
        run.worker_status[static_cast<size_t>(w)] = client.status();
        return;
      }
      run.worker_status[static_cast<size_t>(w)] = spec.train(**client, w);
      auto params = (*client)->allParameters();
      run.worker_params[static_cast<size_t>(w)].assign(params.begin(), params.end());
    });
  }
  for (std::thread& thread : threads) thread.join();
  return run;
}

}  // namespace poseidon::testing
