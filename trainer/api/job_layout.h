// JobLayout: which rank of a training job plays which part. Workers come first (ranks
// 0..P1-1, worker 0 serves the rendezvous store), then the P2 parameter-server shards, then the
// Adam-style scheme's servers when HybComm may pick that scheme at all.
#pragma once

#include <string>

#include "common/status.h"
#include "trainer/hybcomm/hybcomm.h"

namespace poseidon::trainer {

enum class JobRole { kWorker, kPsServer, kAdamServer };

struct JobLayout {
  int workers = 1;       // P1
  int ps_servers = 1;    // P2
  int adam_servers = 0;  // 0 unless HybComm's options may pick Adam

  int size() const { return workers + ps_servers + adam_servers; }
  JobRole roleOf(int rank) const;
  // "worker 1 (rank 1 of 7)", "PS server 0 (rank 4 of 7)", "Adam server 0 (rank 6 of 7)"
  std::string describe(int rank) const;
  // "workers on ranks 0-3, PS servers on 4-5, no Adam server"
  std::string describe() const;
  // Fails naming the value: fewer than one worker or PS server, a negative Adam count.
  Status validate() const;
};

// Whether HybComm, so configured, may ever pick the Adam-style scheme for some layer.
bool mayUseAdam(const HybCommOptions& options);

}  // namespace poseidon::trainer
