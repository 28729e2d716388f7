// Where a merge plan's T(M) = a + bM comes from: fitted to a probe's timings, or derived from a
// measured link through the cost model (trainer/hybcomm/cost_model.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"
#include "scheme/scheme.h"
#include "trainer/hybcomm/cluster_shape.h"
#include "trainer/hybcomm/cost_model.h"
#include "trainer/wfbp/message_cost.h"

namespace poseidon::trainer {

// One timed message of a probe.
struct ProbeSample {
  uint64_t bytes = 0;
  double seconds = 0;
};

struct CostFit {
  MessageCost cost;
  double rms_residual_s = 0;  // of the samples about the line returned
  size_t samples = 0;
  // Empty when the fitted line is returned as is; otherwise what was clamped and why.
  std::string note;
};

// The Theil-Sen line through the samples (median slope, median intercept: robust to the time a
// loaded machine adds to some of them; over every pair, so at most 2048 samples). Fails for no
// samples, more than 2048, a negative or non-finite time, or fewer than 2 distinct sizes (naming
// the one size). A negative slope (time falling with size: noise larger than the probe's size
// range shows) is clamped to b = 0, a = the median time; a negative intercept (latency below the
// noise) to a = 0, with b the median of time / size.
Result<CostFit> fitMessageCost(std::span<const ProbeSample> samples);

// T(M) of one sync of a plain tensor of M bytes under `scheme` (PS or ring: the schemes that move
// a tensor; SFB and Adam move a layer's factors and fail), on a node whose every link is `link`:
// the cost model's busiest-node traffic priced by estimateSeconds, which is messages x latency +
// bytes / rate. Both terms are linear in M for PS and ring, so T(M) = a + bM holds, with
//   PS    a = (P1+P2-2) latencies, b = (P1+P2-2)/P2 / rate   (psNodeTraffic, one direction)
//   ring  a = 2(P1-1) latencies,   b = 2(P1-1)/P1 / rate     (ringNodeTraffic, one direction)
// on a full-duplex link; on a half-duplex one, both directions share it: twice each.
// Where this is exact and where not (the cost model's own assumptions, inherited):
// - exact in the model: the full-duplex max of sends and receives is one line because both
//   schemes are symmetric (a node sends as much, in as many messages, as it receives);
// - PS spreads a tensor over all P2 servers; a merged tensor of fewer than P2 chunks (2 MiB each)
//   reaches only some, so the real latency term is smaller than a for small M;
// - a payload cut into chunks pays the latency once (the chunks behind it are pipelined); per-chunk
//   overheads of a real transport add to b, and the reduction and optimizer passes are not in b
//   at all: fitMessageCost on a probe of real syncs captures both.
Result<MessageCost> tensorMessageCost(scheme::Scheme scheme, const ClusterShape& cluster, const LinkModel& link,
                                      Duplex duplex = Duplex::kFull);

// T(M) of one sync as [MG-WFBP]'s model has it, for the merge planner: messages one at a time,
// each from its start until its update is back. Unlike tensorMessageCost, latencies of messages
// that travel at once (to every server; the pull behind the push) are paid once:
//   PS    a = 2 latencies (the push out, the pull back: the servers answer once every worker's push
//         is in), b = 2 max(1, P1/P2) / rate (the push phase loads a worker's uplink with M and a
//         server's downlink with M P1/P2, the pull phase the reverse; servers colocated or not)
//   ring  as tensorMessageCost: 2(P1-1) steps one after another, 2(P1-1)/P1 of the tensor.
// Both are full-duplex figures; kHalf doubles b (the two directions share the link).
// The ring runs its layers one at a time, as the model assumes. The PS does not: the syncs of many
// layers are in flight together (measured: ResNet-50's 107 on 8 workers), so for the PS this
// prices a run of small layers above what it costs, and what merging saves there is mostly each
// sync's fixed cost on the hosts (tools/trace/README.md has the figures).
Result<MessageCost> syncMessageCost(scheme::Scheme scheme, const ClusterShape& cluster, const LinkModel& link,
                                    Duplex duplex = Duplex::kFull);

}  // namespace poseidon::trainer
