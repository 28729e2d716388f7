// An in-process PS job for tests: P1 worker and P2 server contexts on loopback, one thread per
// rank, sharing a file store.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "ps/client.h"
#include "ps/server.h"
#include "tests/support/mesh.h"

namespace poseidon::testing {

struct ClusterRun {
  std::vector<Status> worker_status;
  std::vector<Status> server_status;
  std::vector<std::vector<float>> worker_params;  // each worker's parameters at the end
  std::vector<std::vector<float>> server_params;  // each server's shard at the end
};

struct ClusterSpec {
  int workers = 2;
  int servers = 1;
  uint64_t chunk_bytes = 4096;
  ps::ServerOptions server;
  ps::ClientOptions client;  // every worker's; its consistency is taken from `server`
  transport::DeviceOptions device;
  std::string store_dir;  // empty: a fresh temporary directory
  std::chrono::seconds deadline{60};
  // Runs worker p's training with its client; defaults to trainWorker.
  std::function<Status(ps::Client&, int worker)> train;
};

ClusterRun runCluster(const ClusterSpec& spec);

}  // namespace poseidon::testing
