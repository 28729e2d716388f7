#include "tools/perf/bandwidth.h"

#include <algorithm>
#include <limits>

#include "tools/perf/buffers.h"
#include "tools/perf/parameters.h"

namespace poseidon::perf {
namespace {

using transport::RequestPtr;

constexpr uint64_t kAckGranularityBytes = uint64_t{4} << 20;
// Iteration mode keeps the post time of this many messages (16 MiB) for the peak.
constexpr uint64_t kMaxRecorded = uint64_t{1} << 21;

void encodeCount(uint8_t* out, uint64_t count) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(count >> (8 * i));
}

uint64_t decodeCount(const uint8_t* in) {
  uint64_t count = 0;
  for (int i = 0; i < 8; ++i) count |= uint64_t{in[i]} << (8 * i);
  return count;
}

}  // namespace

uint64_t ackEvery(const RunParameters& params, uint64_t size) {
  return std::clamp<uint64_t>(kAckGranularityBytes / std::max<uint64_t>(size, 1), 1,
                              static_cast<uint64_t>(params.cq_mod));
}

// ---------------------------------------------------------------------------------------------
// Client

struct BandwidthClient::Pass {
  uint64_t size = 0;
  uint64_t every = 1;
  bool timed = false;
  int64_t open = 0;  // the -D measurement window
  int64_t close = 0;
  uint64_t posted = 0;
  uint64_t acks_posted = 0;
  uint64_t acks_done = 0;
  Ack last;      // the latest ack
  Ack first_in;  // -D: the first and last acks inside the window
  Ack last_in;
  bool any_in = false;
};

BandwidthClient::BandwidthClient(Session& session, Verb& verb)
    : session_(session), verb_(verb), ops_(static_cast<size_t>(session.params.tx_depth)), acks_(kAckSlots) {
  const RunParameters& p = session.params;
  if (!p.durationMode()) {
    post_times_.reserve(std::min(p.iterations, kMaxRecorded));
    ack_log_.reserve(std::min(p.iterations + 1, kMaxRecorded));
  }
}

void BandwidthClient::postAcks(Pass& pass, uint64_t allowed) {
  while (pass.acks_posted < allowed && pass.acks_posted - pass.acks_done < kAckSlots) {
    const uint64_t slot = pass.acks_posted % kAckSlots;
    acks_[slot] = session_.pair().recv(kAckTag, session_.acks->region(), slot * kAckBytes, kAckBytes);
    ++pass.acks_posted;
  }
}

// Takes the next ack if it arrived (waiting for it when `wait`); false when it has not yet.
Result<bool> BandwidthClient::reapAck(Pass& pass, bool wait) {
  const uint64_t slot = pass.acks_done % kAckSlots;
  RequestPtr& ack = acks_[slot];
  if (wait) {
    POSEIDON_RETURN_IF_ERROR(ack->wait(session_.deadline()));
  } else if (!ack->test()) {
    return false;
  }
  // When the ack arrived, not when this loop looked: the client may have slept on a batch of
  // its own sends meanwhile, and stamping late would shrink the -D window and inflate the rate.
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(ack->completedAt().time_since_epoch()).count();
  POSEIDON_RETURN_IF_ERROR(ack->status());
  const uint64_t count = decodeCount(session_.acks->data() + slot * kAckBytes);
  ack.reset();
  if (count < pass.last.count || count > pass.posted) {
    return makeStatus(StatusCode::kProtocolError, "the server confirmed {} messages after {}, with {} sent", count,
                      pass.last.count, pass.posted);
  }
  ++pass.acks_done;
  pass.last = {count, now};
  if (!pass.timed) {
    if (ack_log_.size() < ack_log_.capacity()) ack_log_.push_back(pass.last);
  } else if (now >= pass.open && now <= pass.close) {
    if (!pass.any_in) pass.first_in = pass.last;
    pass.last_in = pass.last;
    pass.any_in = true;
  }
  return true;
}

Result<BwRow> BandwidthClient::run(uint64_t size) {
  const RunParameters& p = session_.params;
  Pass pass;
  pass.size = size;
  pass.every = ackEvery(p, size);
  pass.timed = p.durationMode();
  post_times_.clear();
  ack_log_.clear();
  const uint64_t tx = ops_.size();
  uint64_t limit = pass.timed ? std::numeric_limits<uint64_t>::max() : p.iterations;
  uint64_t completed = 0;
  const int64_t start = nowNanos();
  pass.open = start + p.margin_s * kNanosPerSecond;
  pass.close = start + (p.duration_s - p.margin_s) * kNanosPerSecond;
  const int64_t stop = start + p.duration_s * kNanosPerSecond;
  int64_t first_post = 0;

  while (true) {
    if (pass.timed && limit == std::numeric_limits<uint64_t>::max() && nowNanos() >= stop) limit = pass.posted;
    while (pass.posted < limit && pass.posted - completed < tx) {
      const int64_t now = nowNanos();
      if (pass.posted == 0) first_post = now;
      if (post_times_.size() < post_times_.capacity()) post_times_.push_back(now);
      const uint64_t offset = slotOffset(pass.posted, size);
      ops_[pass.posted % tx] = verb_.post(offset, offset, size, immFor(pass.posted));
      ++pass.posted;
    }
    // The server acks every `every` messages and once at the end: room for those it owes.
    postAcks(pass, pass.posted / pass.every + 1);
    while (completed < pass.posted && ops_[completed % tx]->test()) {
      POSEIDON_RETURN_IF_ERROR(ops_[completed % tx]->status());
      ops_[completed % tx].reset();
      ++completed;
    }
    while (pass.acks_done < pass.acks_posted) {
      Result<bool> taken = reapAck(pass, false);
      if (!taken) return taken.status();
      if (!*taken) break;
    }
    if (pass.posted == limit && completed == pass.posted) break;
    if (pass.posted - completed == tx || pass.posted == limit) {
      // Sleep until a batch has gone rather than wake (~70 us across cores) for each message.
      const uint64_t batch = std::min<uint64_t>(std::max<uint64_t>(tx / 8, 1), pass.posted - completed);
      POSEIDON_RETURN_IF_ERROR(ops_[(completed + batch - 1) % tx]->wait(session_.deadline()));
    }
  }

  if (pass.timed) {
    // One end marker for each expectation the server posted past the last message.
    std::vector<RequestPtr> markers;
    markers.reserve(static_cast<size_t>(p.rx_depth));
    for (int i = 0; i < p.rx_depth; ++i) markers.push_back(verb_.post(0, 0, 0, kMarkerImm));
    POSEIDON_RETURN_IF_ERROR(transport::waitAll(markers, session_.deadline()));
  }
  const uint64_t total_acks = pass.posted / pass.every + 1;
  while (pass.acks_done < total_acks) {
    postAcks(pass, total_acks);
    const Result<bool> taken = reapAck(pass, true);
    if (!taken) return taken.status();
  }
  if (pass.last.count != pass.posted) {
    return makeStatus(StatusCode::kProtocolError, "the server confirmed {} of {} messages of {} bytes", pass.last.count,
                      pass.posted, size);
  }

  if (!pass.timed) {
    const double seconds = static_cast<double>(pass.last.time - first_post) / kNanosPerSecond;
    const double peak = peakOpsPerSecond(post_times_, 0, ack_log_);
    return makeBwRow(size, pass.posted, seconds, peak, p.report_gbits);
  }
  if (!pass.any_in || pass.last_in.count <= pass.first_in.count) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "fewer than two delivery acks arrived between {} s and {} s ({} messages of {} bytes "
                      "in all): give a longer -D/--duration or a smaller -s/--size",
                      p.margin_s, p.duration_s - p.margin_s, pass.posted, size);
  }
  const double seconds = static_cast<double>(pass.last_in.time - pass.first_in.time) / kNanosPerSecond;
  return makeBwRow(size, pass.last_in.count - pass.first_in.count, seconds, 0, p.report_gbits);
}

// ---------------------------------------------------------------------------------------------
// Server

BandwidthServer::BandwidthServer(Session& session, Verb& verb)
    : session_(session), verb_(verb), expects_(static_cast<size_t>(session.params.rx_depth)), acks_(kAckSlots) {}

// Sends the acks that are due, in order: ack i of this size confirms (i + 1) * every messages.
// An ack waits for its slot's previous ack to have gone, which needs the client to have posted
// the receive for it; unless `wait`, a busy slot defers the rest, so the server never blocks on
// a client that is itself blocked on the server's credits (send_bw).
Status BandwidthServer::sendAcks(uint64_t due, uint64_t every, bool wait) {
  while (acks_this_size_ < due) {
    const uint64_t slot = acks_sent_ % kAckSlots;
    RequestPtr& previous = acks_[slot];
    if (previous) {
      if (!previous->test() && !wait) return Status::ok();
      POSEIDON_RETURN_IF_ERROR(previous->wait(session_.deadline()));
      previous.reset();
    }
    const uint64_t count = acks_this_size_ + 1 == due && final_count_ ? *final_count_ : (acks_this_size_ + 1) * every;
    encodeCount(session_.acks->data() + slot * kAckBytes, count);
    previous = session_.pair().send(kAckTag, session_.acks->region(), slot * kAckBytes, kAckBytes);
    ++acks_sent_;
    ++acks_this_size_;
  }
  return Status::ok();
}

Status BandwidthServer::run(uint64_t size) {
  const RunParameters& p = session_.params;
  const bool timed = p.durationMode();
  const uint64_t every = ackEvery(p, size);
  const uint64_t ring = expects_.size();
  const uint64_t limit = timed ? std::numeric_limits<uint64_t>::max() : p.iterations;
  uint64_t posted = 0;
  uint64_t done = 0;
  uint64_t real = 0;
  bool ended = false;
  acks_this_size_ = 0;
  final_count_.reset();
  auto post = [&] {
    const uint64_t offset = slotOffset(posted, size);
    expects_[posted % ring] = verb_.expect(offset, size);
    ++posted;
  };
  while (posted < std::min(ring, limit)) post();

  while (done < posted) {
    RequestPtr& next = expects_[done % ring];
    if (!next->test()) {
      // Sleep until a batch has landed rather than wake once per message.
      const uint64_t batch_end = std::min(done + every, posted) - 1;
      POSEIDON_RETURN_IF_ERROR(expects_[batch_end % ring]->wait(session_.deadline()));
      POSEIDON_RETURN_IF_ERROR(next->wait(session_.deadline()));
    }
    POSEIDON_RETURN_IF_ERROR(next->status());
    const bool marker = verb_.isMarker(*next);
    next.reset();
    ++done;
    if (marker) {
      if (!timed) {
        return makeStatus(StatusCode::kProtocolError, "the client ended the run after {} of {} messages", real,
                          p.iterations);
      }
      ended = true;
      continue;
    }
    if (ended) {
      return makeStatus(StatusCode::kProtocolError, "the client sent a message after its end marker");
    }
    ++real;
    POSEIDON_RETURN_IF_ERROR(sendAcks(real / every, every, /*wait=*/false));
    // One more expectation for each message, up to the run's length when it is known.
    if (posted < limit) post();
  }
  // The periodic acks still owed, then the final one with the total.
  POSEIDON_RETURN_IF_ERROR(sendAcks(real / every, every, /*wait=*/true));
  final_count_ = real;
  POSEIDON_RETURN_IF_ERROR(sendAcks(real / every + 1, every, /*wait=*/true));
  for (RequestPtr& ack : acks_) {
    if (!ack) continue;
    POSEIDON_RETURN_IF_ERROR(ack->wait(session_.deadline()));
    ack.reset();
  }
  return Status::ok();
}

}  // namespace poseidon::perf
