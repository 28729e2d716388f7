// The cost model: floats and messages one node moves to synchronise one layer for one iteration,
// for each scheme, and the time that takes on a link of given latency and bandwidth.
//
// Counts follow [Poseidon analysis] section 4.2: what ONE node sends plus what it receives, per layer per
// iteration, in floats (4 bytes each in float32). A matrix is split evenly over the P2 servers as
// the paper assumes (Poseidon's 2 MB chunks approximate that for large layers), so counts may be
// fractional; they are exact integers whenever the split is. Messages count one per (sender,
// receiver) pair per layer: a payload cut into chunks on one connection pays the link's latency
// once, the chunks behind it are pipelined.
//
// [Poseidon 2015] section 4.3.1 counts differently (cluster totals, see Poseidon2015Totals below); both
// counts are kept, named for the paper that uses them, so a figure can be checked against either.
#pragma once

#include <cstdint>
#include <string>

#include "model/layer.h"
#include "scheme/scheme.h"
#include "trainer/hybcomm/cluster_shape.h"

namespace poseidon::trainer {

// One node's traffic for one layer in one iteration. Sends and receives are kept apart because a
// full-duplex link moves them at the same time, and Adam's server is lopsided (SFs in, matrices out).
struct NodeTraffic {
  double sent_floats = 0;
  double received_floats = 0;
  int64_t sent_messages = 0;
  int64_t received_messages = 0;

  // Sent + received: the count of [Poseidon analysis] section 4.2 and [Poseidon ATC'17] Table 1.
  double floats() const { return sent_floats + received_floats; }
  int64_t messages() const { return sent_messages + received_messages; }
};

// Every function fails, naming the value, for an invalid layer (model::Layer::validate) or cluster
// (validateCluster). X below is the layer's denseFloats(): M*N for an FC layer (the papers price
// the weight only: SFB recovers the bias gradient from U's row sums at no extra traffic, PS
// carries the M bias floats next to M*N, under 0.1% for every layer in the zoo), every parameter
// otherwise.
//
// PS with the servers colocated on the workers, for a node that hosts one worker and one of the
// P2 server shards; X = M*N for an FC layer, its parameter count otherwise:
//   floats   2X(P1+P2-2)/P2   as worker: X(P2-1)/P2 pushed to the other servers and as much pulled
//                             back; as server: X/P2 from each of the other P1-1 workers and the
//                             updated X/P2 sent back to each of them.
//   messages 2(P1+P2-2)       one push per remote server plus one reply per remote worker, each way.
// It is the busiest node of the job whatever P1 and P2: a worker-only node (there are some when
// P1 > P2, so P1 >= 2) moves 2X, a server-only node (when P2 > P1, so P2 >= 2) 2X*P1/P2; neither more.
Result<NodeTraffic> psNodeTraffic(const model::Layer& layer, const ClusterShape& cluster);
// PS, for a node with a worker and no server (there is one only when P1 > P2; fails otherwise):
//   floats   2X               X/P2 pushed to each server and as much pulled back.
//   messages 2 P2             one push to and one reply from each server.
// Not the busiest node on equal links, but the one a slow link hurts least under PS: the
// benchmark's model prices a lowered worker link with it.
Result<NodeTraffic> psWorkerOnlyNodeTraffic(const model::Layer& layer, const ClusterShape& cluster);

// SFB, for every worker of an FC layer (fails for any other layer):
//   floats   2K(P1-1)(M+N)    its K(M+N) factors (U and V) to each of the P1-1 peers, and theirs back.
//   messages 2(P1-1)          one message (U and V together) to and from each peer.
Result<NodeTraffic> sfbNodeTraffic(const model::Layer& layer, const ClusterShape& cluster);

// Adam-style ([Project Adam]): workers push their factors to the one server that holds the
// FC layer, which rebuilds the gradient, updates, and sends the full matrix to every worker. The
// server runs on a node of its own (colocated, it would skip its own worker's two messages).
//   worker:  floats K(M+N) + MN       messages 2 (one push, one pull)
//   server:  floats P1(K(M+N) + MN)   messages 2*P1  -- the hot node of [Poseidon ATC'17] Figure 10
Result<NodeTraffic> adamWorkerTraffic(const model::Layer& layer, const ClusterShape& cluster);
Result<NodeTraffic> adamServerTraffic(const model::Layer& layer, const ClusterShape& cluster);

// Ring all-reduce over the P1 workers (no servers), for every node; X as for PS:
//   floats   4X(P1-1)/P1      reduce-scatter and all-gather each send X(P1-1)/P1 and receive as much.
//   messages 4(P1-1)          2(P1-1) steps, each one send to the next node and one receive from the previous.
Result<NodeTraffic> ringNodeTraffic(const model::Layer& layer, const ClusterShape& cluster);

// The busiest node under `scheme` (for Adam, its server): what bounds the iteration's time.
Result<NodeTraffic> busiestNodeTraffic(scheme::Scheme scheme, const model::Layer& layer, const ClusterShape& cluster);

// [Poseidon 2015] section 4.3.1's counts for an FC layer on P = P1 workers and one master node. These are
// NOT per node; each is written as the paper prints it, with what it actually counts:
struct Poseidon2015Totals {
  // (P-1)^2 K(M+N). Not per node (that is 2(P-1)K(M+N), sfbNodeTraffic) nor the cluster's sent
  // total (P(P-1)K(M+N)); it equals the per-node count times (P-1)/2, i.e. the factors that P-1
  // of the P workers send. 18.87M for AlexNet fc6-fc7 on 4 nodes, K = 256.
  double sfb = 0;
  // 2PMN: every gradient into one master and every matrix back out, i.e. that master's sent +
  // received (and the whole network's traffic). 134.2M in the same example.
  double ps = 0;
  // PK(M+N) + PMN: the Adam server's sent + received (adamServerTraffic). 75.5M in the example.
  double adam = 0;
};
Result<Poseidon2015Totals> poseidon2015Totals(const model::Layer& layer, const ClusterShape& cluster);

// A link as measured (e.g. by the transport benchmark): time = messages x latency + bytes / rate.
struct LinkModel {
  double latency_s = 0;    // per message, one way
  double bytes_per_s = 0;  // sustained payload rate of one direction
};

// kFull: sends and receives proceed at once (Ethernet, InfiniBand), the slower direction counts.
// kHalf: they share the link, so the paper's sent + received count is what the link carries.
enum class Duplex { kFull, kHalf };

// Seconds the node needs on `link` for `traffic` at `bytes_per_float` (4 for float32). Fails when
// the latency is negative or not finite, or the rate or bytes_per_float is not positive.
Result<double> estimateSeconds(const NodeTraffic& traffic, const LinkModel& link, Duplex duplex = Duplex::kFull,
                               double bytes_per_float = 4);

// "12.58M", "1.73K", "950": a count for a log line or a decision's reason.
std::string formatCount(double count);

}  // namespace poseidon::trainer
