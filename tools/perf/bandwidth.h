// The bandwidth tests (ib_write_bw, ib_send_bw): the client keeps --tx-depth messages in flight,
// the server keeps --rx-depth expectations posted (receives, or write notifications) and
// confirms delivery with a small ack message every ackEvery() messages and after the last one.
//
// A TCP send or write completes locally once the socket took the bytes, long before they
// land, so the client's clock stops at the server's final ack, not at its own last completion:
// the measured time includes delivery of every byte, as an RDMA completion (remote ACK) would.
// Iteration mode: BW average = n * size / (final ack - first post), BW peak as statistics.h.
// Duration mode (-D), as perftest: run D seconds, measure only between margin and D - margin,
// between the first and the last ack inside that window; BW peak is not measured (perftest
// sets noPeak in duration mode and prints 0.00 with a warning). The server cannot know when a
// -D run ends, so the client ends it with --rx-depth zero-length markers, one for each
// expectation the server has posted past the last message.
//
// Acks are two-sided messages, so the client keeps receives posted for them (buffers.h says
// why that ring is deep) and the server never blocks on sending one: an ack whose slot is still
// busy waits until the server next looks, so a send_bw client blocked on the server's credits
// and a server blocked on the client's ack credits cannot wait for each other.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tools/perf/rendezvous.h"
#include "tools/perf/report.h"
#include "tools/perf/statistics.h"
#include "tools/perf/verb.h"

namespace poseidon::perf {

// Messages per delivery ack: perftest's CQ moderation (-Q), but at least one ack every 4 MiB so
// that large messages are timed as finely as small ones.
uint64_t ackEvery(const RunParameters& params, uint64_t size);

class BandwidthClient {
 public:
  BandwidthClient(Session& session, Verb& verb);
  Result<BwRow> run(uint64_t size);

 private:
  struct Pass;  // the state of one size
  void postAcks(Pass& pass, uint64_t allowed);
  Result<bool> reapAck(Pass& pass, bool wait);

  Session& session_;
  Verb& verb_;
  std::vector<transport::RequestPtr> ops_;   // --tx-depth ring
  std::vector<transport::RequestPtr> acks_;  // kAckSlots ring
  std::vector<int64_t> post_times_;          // iteration mode, the first kMaxRecorded
  std::vector<Ack> ack_log_;
};

class BandwidthServer {
 public:
  BandwidthServer(Session& session, Verb& verb);
  Status run(uint64_t size);

 private:
  Status sendAcks(uint64_t due, uint64_t every, bool wait);

  Session& session_;
  Verb& verb_;
  std::vector<transport::RequestPtr> expects_;  // --rx-depth ring
  std::vector<transport::RequestPtr> acks_;     // kAckSlots ring
  uint64_t acks_sent_ = 0;                      // over the run: picks the slot
  uint64_t acks_this_size_ = 0;
  std::optional<uint64_t> final_count_;  // set once the last ack of a size is due
};

}  // namespace poseidon::perf
