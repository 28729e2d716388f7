// PsJob: who is who in a parameter-server job. Workers are ranks 0..P1-1 of the transport
// context and servers ranks P1..P1+P2-1, so one full-mesh context serves the PS and the
// workers' peer-to-peer traffic (SFB) alike.
#pragma once

#include <string>

#include "common/status.h"
#include "transport/context.h"

namespace poseidon::ps {

struct PsJob {
  int workers = 1;
  int servers = 1;
  std::string name = "ps";  // prefix of this job's keys in the bootstrap store

  int workerRank(int worker) const { return worker; }
  int serverRank(int server) const { return workers + server; }
  bool isServerRank(int rank) const { return rank >= workers && rank < workers + servers; }

  // The context must have exactly workers + servers ranks; the counts must fit the protocol.
  Status validate(const transport::Context& context) const;
};

}  // namespace poseidon::ps
