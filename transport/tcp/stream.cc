#include "transport/tcp/stream.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "transport/common/send_budget.h"
#include "transport/common/tsan_causality.h"
#include "transport/tcp/pair.h"
#include "transport/wire/crc32c.h"

namespace poseidon::transport::tcp {
namespace {
constexpr size_t kInboxBytes = 64 * 1024;
constexpr size_t kLargePayload = 16 * 1024;
constexpr int kMaxIov = 256;
// Bytes one readable event may consume before other sockets get their turn.
constexpr size_t kReadBudget = 8u << 20;
// A stream out of send budget sleeps until this much (or all it has queued) is available again.
constexpr uint64_t kBudgetWakeBytes = 16u << 10;
// Sealed frames: one flush encrypts frames only until its batch holds this much, so a long queue
// is not copied all at once (memory) and the first bytes go out early.
constexpr uint64_t kSealAheadBytes = 2u << 20;
// Sealed-frame buffers a stream keeps for reuse: enough for a batch of stripes in flight.
constexpr size_t kSpareSealed = 8;

// Cuts iov[0, count) to its first `limit` bytes; returns the new count.
int truncateIov(iovec* iov, int count, uint64_t limit) {
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len >= limit) {
      iov[i].iov_len = limit;
      return limit == 0 ? i : i + 1;
    }
    limit -= iov[i].iov_len;
  }
  return count;
}
}  // namespace

Stream::Stream(TcpPair& pair, int index, Fd fd, std::string peer_address, const wire::DecodeLimits& limits,
               StreamCiphers ciphers)
    : pair_(pair),
      index_(index),
      fd_(std::move(fd)),
      peer_address_(std::move(peer_address)),
      limits_(limits),
      ciphers_(std::move(ciphers)),
      inbox_(kInboxBytes) {}

void Stream::shutdownSocket() {
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

void Stream::enqueueControlLocked(OutFrame frame) {
  // A frame in progress finishes first, and sealed frames keep the order their nonces fixed.
  size_t position = 0;
  while (position < out_.size() && (out_[position].sent > 0 || out_[position].sealed)) ++position;
  while (position < out_.size() && out_[position].op == nullptr) ++position;
  out_.insert(position, std::move(frame));
}

void Stream::retireFrontLocked() {
  OutFrame& frame = out_.front();
  // Only buffers of the current size go back (a larger frame since made the old ones too small).
  if (frame.sealed && frame.sealed_bytes == spare_bytes_ && spare_sealed_.size() < kSpareSealed) {
    spare_sealed_.push_back(std::move(frame.sealed));
  }
  out_.pop_front();
}

Status Stream::sealLocked(OutFrame& frame) {
  const size_t length = frame.size - wire::kFrameHeaderSize - wire::kFrameTagSize;
  // Sealed copies come from the stream's spares (every one as large as the largest frame yet),
  // not a fresh allocation per frame: the send path stays free of allocation once warm.
  const size_t need = length + wire::kFrameTagSize;
  if (need > spare_bytes_) {
    spare_sealed_.clear();
    spare_bytes_ = need;
  }
  if (spare_sealed_.empty()) {
    frame.sealed = std::make_unique_for_overwrite<uint8_t[]>(spare_bytes_);
  } else {
    frame.sealed = std::move(spare_sealed_.back());
    spare_sealed_.pop_back();
  }
  frame.sealed_bytes = spare_bytes_;
  POSEIDON_RETURN_IF_ERROR(ciphers_.seal->seal(frame.header.data(),
                                               std::span<const iovec>(frame.payload.data(), frame.payload.size()),
                                               frame.sealed.get(), frame.sealed.get() + length));
  return Status::ok();
}

void Stream::flushLocked(Completions& done) {
  if (broken_) return;
  while (!out_.empty()) {
    iovec iov[kMaxIov];
    int count = 0;
    uint64_t batch_bytes = 0;
    for (auto& frame : out_) {
      if (count >= kMaxIov - 1) break;
      if (ciphers_.seal && !frame.sealed) {
        if (batch_bytes >= kSealAheadBytes) break;
        Status sealed = sealLocked(frame);
        if (!sealed.isOk()) {
          spdlog::error("transport: stream {} to {}: {}", index_, pair_.peerName(), sealed.toString());
          broken_ = true;  // as a socket error: the next dispatch fails the pair
          shutdownSocket();
          return;
        }
      }
      batch_bytes += frame.size - frame.sent;
      size_t skip = frame.sent;
      if (skip < wire::kFrameHeaderSize) {
        iov[count++] = {frame.header.data() + skip, wire::kFrameHeaderSize - skip};
        skip = 0;
      } else {
        skip -= wire::kFrameHeaderSize;
      }
      // A sealed frame's bytes are its sealed copy, not the sender's memory.
      const iovec sealed_piece{frame.sealed.get(), frame.size - wire::kFrameHeaderSize};
      const auto pieces = frame.sealed ? std::span<const iovec>(&sealed_piece, 1)
                                       : std::span<const iovec>(frame.payload.data(), frame.payload.size());
      for (const auto& part : pieces) {
        if (skip >= part.iov_len) {
          skip -= part.iov_len;
          continue;
        }
        if (count >= kMaxIov) break;
        iov[count++] = {static_cast<uint8_t*>(part.iov_base) + skip, part.iov_len - skip};
        skip = 0;
      }
    }
    uint64_t granted = 0;
    if (SendBudget* budget = pair_.sendBudget()) {
      uint64_t total = 0;
      for (int i = 0; i < count; ++i) total += iov[i].iov_len;
      granted = budget->take(total, kBudgetWakeBytes);
      if (granted == 0) {
        // Not EPOLLOUT: the socket has room, the budget has not. The engine calls back.
        pair_.engine().wakeAfter(this, budget->timeUntil(std::min(total, kBudgetWakeBytes)));
        break;
      }
      count = truncateIov(iov, count, granted);
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    bytesOffered(msg);
    const ssize_t n = sendmsgOffered(fd_.get(), msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (granted > static_cast<uint64_t>(std::max<ssize_t>(n, 0))) {
      pair_.sendBudget()->giveBack(granted - static_cast<uint64_t>(std::max<ssize_t>(n, 0)));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!want_write_) {
          want_write_ = true;
          (void)pair_.engine().modify(fd_.get(), this, EPOLLIN | EPOLLOUT);
        }
        return;
      }
      // The next dispatch sees the error on its read and fails the pair; failing it here,
      // on a caller's thread, could complete receives whose memory the engine is writing.
      broken_ = true;
      shutdownSocket();
      return;
    }
    size_t written = static_cast<size_t>(n);
    while (written > 0) {
      OutFrame& frame = out_.front();
      const size_t take = std::min(written, frame.size - frame.sent);
      frame.sent += take;
      written -= take;
      if (frame.sent == frame.size) {
        if (frame.op && --frame.op->frames_left == 0) pair_.opWrittenLocked(*frame.op, done);
        retireFrontLocked();
      }
    }
    // Zero-payload frames at the front may now be complete without further bytes.
    while (!out_.empty() && out_.front().size == out_.front().sent) {
      OutFrame& frame = out_.front();
      if (frame.op && --frame.op->frames_left == 0) pair_.opWrittenLocked(*frame.op, done);
      retireFrontLocked();
    }
  }
  if (want_write_) {
    want_write_ = false;
    (void)pair_.engine().modify(fd_.get(), this, EPOLLIN);
  }
}

void Stream::onEvents(uint32_t events) {
  if (events & EPOLLOUT) {
    Completions done;
    {
      std::lock_guard<std::mutex> lock(pair_.mutex());
      flushLocked(done);
    }
    completeAll(done);
  }
  // An ended stream may still be in the batch of events that was fetched before it left.
  if (!ended_ && (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))) onReadable();
}

void Stream::failStream(Status status) { pair_.fail(std::move(status)); }

void Stream::endBetweenFrames() {
  // The peer closes all its streams at once, each behind its last frame, but this side may read
  // this end before another stream's last frames: those are still to be read, so the pair fails
  // only once every stream has ended. This one leaves the engine, whose level-triggered epoll
  // would report its end again and again.
  ended_ = true;
  pair_.engine().remove(fd_.get());
  pair_.onStreamEnded(index_);
}

template <typename Fn>
bool Stream::atFinalPlace(Fn&& fn) {
  if (payload_region_ == nullptr) {
    fn();
    return true;
  }
  const bool registered = payload_region_->use([&](const MemoryRegion&) { fn(); });
  if (registered) return true;
  failStream(makeStatus(StatusCode::kConnectionError,
                        "region key {} was deregistered while {}'s write {} into it arrived (stream {}): the write "
                        "cannot land, so the pair fails, as a queue pair does when a write finds no memory region",
                        header_.tag, pair_.peerName(), header_.seq, index_));
  return false;
}

bool Stream::fillInbox(size_t want, size_t& budget, bool& drained) {
  if (budget == 0) return false;
  if (inbox_begin_ > 0) {
    std::memmove(inbox_.data(), inbox_.data() + inbox_begin_, inbox_end_ - inbox_begin_);
    inbox_end_ -= inbox_begin_;
    inbox_begin_ = 0;
  }
  const size_t room = std::min(want, inbox_.size() - inbox_end_);
  const ssize_t n = recvOrdered(fd_.get(), inbox_.data() + inbox_end_, room, MSG_DONTWAIT);
  if (n > 0) {
    inbox_end_ += static_cast<size_t>(n);
    budget -= std::min(budget, static_cast<size_t>(n));
    drained = static_cast<size_t>(n) < room;
    return true;
  }
  if (n == 0) {
    if (read_state_ == ReadState::kHeader && inbox_begin_ == inbox_end_) {
      endBetweenFrames();
    } else {
      failStream(makeStatus(StatusCode::kConnectionError,
                            "{} closed the connection in the middle of a frame (stream {})", pair_.peerName(), index_));
    }
    return false;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
  failStream(makeStatus(StatusCode::kConnectionError, "receive from {} failed (stream {}): {}", pair_.peerName(),
                        index_, std::strerror(errno)));
  return false;
}

void Stream::onReadable() {
  size_t budget = kReadBudget;
  // A read shorter than asked emptied the socket: the next one would only return EAGAIN (a
  // system call a small message need not pay); level-triggered epoll reports later bytes.
  // The budget stops socket reads only: what the inbox already holds is always handled, since
  // epoll reports the socket's bytes again but not the inbox's.
  bool drained = false;
  while (!pair_.failed()) {
    ReadStep step = ReadStep::kDone;
    switch (read_state_) {
      case ReadState::kHeader: step = readHeader(budget, drained); break;
      case ReadState::kPayload: step = readPayload(budget, drained); break;
      case ReadState::kTag: step = readTag(budget, drained); break;
    }
    if (step == ReadStep::kStop) return;
    if (step == ReadStep::kAgain) continue;
    if (read_state_ == ReadState::kHeader) {
      read_state_ = ReadState::kPayload;
      continue;
    }
    if (read_state_ == ReadState::kPayload && ciphers_.open) {
      read_state_ = ReadState::kTag;
      continue;
    }
    // The whole frame is here.
    if (!checkPayload()) return;
    last_payload_large_ = header_.length >= kLargePayload;
    read_state_ = ReadState::kHeader;
    Status st = pair_.onFrameComplete(header_, index_, payload_region_.get());
    payload_region_.reset();
    if (!st.isOk()) {
      failStream(st);
      return;
    }
  }
}

Stream::ReadStep Stream::readHeader(size_t& budget, bool& drained) {
  const size_t have = inbox_end_ - inbox_begin_;
  if (have < wire::kFrameHeaderSize) {
    // After a large payload the next frame is likely large too: read just its header so the
    // payload lands directly in place.
    const size_t want = last_payload_large_ ? wire::kFrameHeaderSize - have : inbox_.size();
    return drained || !fillInbox(want, budget, drained) ? ReadStep::kStop : ReadStep::kAgain;
  }
  const uint8_t* bytes = inbox_.data() + inbox_begin_;
  auto header = wire::decodeHeader(bytes, limits_, pair_.peerNameRef());
  if (!header) {
    failStream(header.status());
    return ReadStep::kStop;
  }
  const bool sealed = (header->flags & wire::kFlagSealed) != 0;
  if (sealed != (ciphers_.open != nullptr)) {
    failStream(makeStatus(StatusCode::kProtocolError,
                          "{} {} frame from {} on a connection whose frames are {}: refused",
                          sealed ? "a sealed" : "an unsealed", wire::frameTypeName(header->type), pair_.peerName(),
                          ciphers_.open ? "sealed (encrypt_frames)" : "not sealed"));
    return ReadStep::kStop;
  }
  std::copy(bytes, bytes + wire::kFrameHeaderSize, header_bytes_.begin());
  inbox_begin_ += wire::kFrameHeaderSize;
  header_ = *header;
  auto dest = pair_.onFrameHeader(header_);
  if (!dest) {
    failStream(dest.status());
    return ReadStep::kStop;
  }
  payload_final_ = dest->bytes;
  payload_region_ = std::move(dest->region);
  payload_dest_ = payload_final_;
  if (ciphers_.open) {
    if (sealed_inbox_.size() < header_.length) sealed_inbox_.resize(header_.length);
    payload_dest_ = sealed_inbox_.data();
  }
  payload_done_ = 0;
  payload_crc_ = 0;
  return ReadStep::kDone;
}

Stream::ReadStep Stream::readTag(size_t& budget, bool& drained) {
  const size_t have = inbox_end_ - inbox_begin_;
  if (have >= wire::kFrameTagSize) return ReadStep::kDone;
  // After a large payload, read no further than the next header, so a large payload after it
  // lands directly in place too.
  const size_t want =
      header_.length >= kLargePayload ? wire::kFrameTagSize - have + wire::kFrameHeaderSize : inbox_.size();
  return drained || !fillInbox(want, budget, drained) ? ReadStep::kStop : ReadStep::kAgain;
}

Stream::ReadStep Stream::readPayload(size_t& budget, bool& drained) {
  // First what the inbox already holds, then straight from the socket.
  const uint64_t left = header_.length - payload_done_;
  const size_t from_inbox = std::min<uint64_t>(left, inbox_end_ - inbox_begin_);
  // Sealed frames land in the stream's own buffer; others in their final place.
  const bool in_final_place = payload_dest_ == payload_final_;
  const auto land = [&](auto&& fn) { return in_final_place ? atFinalPlace(fn) : (fn(), true); };
  const bool crc = (header_.flags & wire::kFlagPayloadCrc) != 0;
  if (from_inbox > 0) {
    const bool landed = land([&] {
      uint8_t* at = payload_dest_ + payload_done_;
      std::memcpy(at, inbox_.data() + inbox_begin_, from_inbox);
      // Summed from the stream's own inbox: what arrived, not memory other pairs may write.
      if (crc) payload_crc_ = wire::crc32c(inbox_.data() + inbox_begin_, from_inbox, payload_crc_);
    });
    if (!landed) return ReadStep::kStop;
    inbox_begin_ += from_inbox;
    payload_done_ += from_inbox;
  }
  if (payload_done_ == header_.length) return ReadStep::kDone;
  if (drained || budget == 0) return ReadStep::kStop;
  const size_t want = std::min<uint64_t>(header_.length - payload_done_, budget);
  ssize_t n = -1;
  // The CRC reads the region's memory, so it stays inside land(): a deregistered region is gone.
  if (!land([&] {
        uint8_t* at = payload_dest_ + payload_done_;
        n = recvOrdered(fd_.get(), at, want, MSG_DONTWAIT);
        if (crc && n > 0) payload_crc_ = wire::crc32c(at, static_cast<size_t>(n), payload_crc_);
      }))
    return ReadStep::kStop;
  if (n > 0) {
    payload_done_ += static_cast<uint64_t>(n);
    budget -= std::min(budget, static_cast<size_t>(n));
    drained = static_cast<size_t>(n) < want;
    return payload_done_ == header_.length ? ReadStep::kDone : ReadStep::kAgain;
  }
  if (n == 0) {
    failStream(makeStatus(StatusCode::kConnectionError,
                          "{} closed the connection in the middle of a {} frame (stream {})", pair_.peerName(),
                          wire::frameTypeName(header_.type), index_));
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    failStream(makeStatus(StatusCode::kConnectionError, "receive from {} failed (stream {}): {}", pair_.peerName(),
                          index_, std::strerror(errno)));
  }
  return ReadStep::kStop;
}

bool Stream::checkPayload() {
  if (ciphers_.open) {
    // Opened where it landed, and copied to its destination only once the tag holds: no byte an
    // attacker chose ever reaches the destination, which other pairs may be writing too.
    Status opened = ciphers_.open->open(header_bytes_.data(), payload_dest_, payload_dest_, header_.length,
                                        inbox_.data() + inbox_begin_, pair_.peerName());
    inbox_begin_ += wire::kFrameTagSize;
    if (!opened.isOk()) {
      failStream(opened.withContext(fmt::format("stream {}", index_)));
      return false;
    }
    if (header_.length == 0) return true;
    return atFinalPlace([&] { std::memcpy(payload_final_, payload_dest_, header_.length); });
  }
  if (header_.flags & wire::kFlagPayloadCrc) {
    // payload_crc_ was summed as the payload landed (readPayload): the payload is not read again.
    if (payload_crc_ != header_.payload_crc) {
      failStream(makeStatus(StatusCode::kProtocolError,
                            "payload CRC 0x{:08x} of a {}-byte {} frame from {} does not match computed 0x{:08x}",
                            header_.payload_crc, header_.length, wire::frameTypeName(header_.type), pair_.peerName(),
                            payload_crc_));
      return false;
    }
  }
  return true;
}

}  // namespace poseidon::transport::tcp
