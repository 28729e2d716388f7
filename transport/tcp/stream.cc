#include "transport/tcp/stream.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/common/send_budget.h"
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

Stream::Stream(TcpPair& pair, int index, Fd fd, std::string peer_address, const wire::DecodeLimits& limits)
    : pair_(pair),
      index_(index),
      fd_(std::move(fd)),
      peer_address_(std::move(peer_address)),
      limits_(limits),
      inbox_(kInboxBytes) {}

void Stream::shutdownSocket() {
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

void Stream::enqueueControlLocked(OutFrame frame) {
  size_t position = 0;
  if (!out_.empty() && out_.front().sent > 0) position = 1;  // a frame in progress finishes first
  while (position < out_.size() && out_[position].op == nullptr) ++position;
  out_.insert(position, std::move(frame));
}

void Stream::flushLocked(Completions& done) {
  if (broken_) return;
  while (!out_.empty()) {
    iovec iov[kMaxIov];
    int count = 0;
    for (auto& frame : out_) {
      if (count >= kMaxIov - 1) break;
      size_t skip = frame.sent;
      if (skip < wire::kFrameHeaderSize) {
        iov[count++] = {frame.header.data() + skip, wire::kFrameHeaderSize - skip};
        skip = 0;
      } else {
        skip -= wire::kFrameHeaderSize;
      }
      for (const auto& part : frame.payload) {
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
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
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
        out_.pop_front();
      }
    }
    // Zero-payload frames at the front may now be complete without further bytes.
    while (!out_.empty() && out_.front().size == out_.front().sent) {
      OutFrame& frame = out_.front();
      if (frame.op && --frame.op->frames_left == 0) pair_.opWrittenLocked(*frame.op, done);
      out_.pop_front();
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
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) onReadable();
}

void Stream::failStream(Status status) { pair_.fail(std::move(status)); }

bool Stream::fillInbox(size_t want, size_t& budget, bool& drained) {
  if (inbox_begin_ > 0) {
    std::memmove(inbox_.data(), inbox_.data() + inbox_begin_, inbox_end_ - inbox_begin_);
    inbox_end_ -= inbox_begin_;
    inbox_begin_ = 0;
  }
  const size_t room = std::min(want, inbox_.size() - inbox_end_);
  const ssize_t n = ::recv(fd_.get(), inbox_.data() + inbox_end_, room, MSG_DONTWAIT);
  if (n > 0) {
    inbox_end_ += static_cast<size_t>(n);
    budget -= std::min(budget, static_cast<size_t>(n));
    drained = static_cast<size_t>(n) < room;
    return true;
  }
  if (n == 0) {
    failStream(
        makeStatus(StatusCode::kConnectionError, "{} closed the connection (stream {})", pair_.peerName(), index_));
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
  bool drained = false;
  while (budget > 0 && !pair_.failed()) {
    if (read_state_ == ReadState::kHeader) {
      const size_t have = inbox_end_ - inbox_begin_;
      if (have < wire::kFrameHeaderSize) {
        // After a large payload the next frame is likely large too: read just its header so
        // the payload lands directly in place.
        const size_t want = last_payload_large_ ? wire::kFrameHeaderSize - have : inbox_.size();
        if (drained || !fillInbox(want, budget, drained)) return;
        continue;
      }
      auto header = wire::decodeHeader(inbox_.data() + inbox_begin_, limits_, pair_.peerNameRef());
      if (!header) {
        failStream(header.status());
        return;
      }
      inbox_begin_ += wire::kFrameHeaderSize;
      header_ = *header;
      auto dest = pair_.onFrameHeader(header_);
      if (!dest) {
        failStream(dest.status());
        return;
      }
      payload_dest_ = *dest;
      payload_done_ = 0;
      read_state_ = ReadState::kPayload;
    }
    // Payload: first what the inbox already holds, then straight from the socket.
    const uint64_t left = header_.length - payload_done_;
    const size_t from_inbox = std::min<uint64_t>(left, inbox_end_ - inbox_begin_);
    if (from_inbox > 0) {
      std::memcpy(payload_dest_ + payload_done_, inbox_.data() + inbox_begin_, from_inbox);
      inbox_begin_ += from_inbox;
      payload_done_ += from_inbox;
    }
    if (payload_done_ < header_.length) {
      if (drained) return;
      const size_t want = std::min<uint64_t>(header_.length - payload_done_, budget);
      const ssize_t n = ::recv(fd_.get(), payload_dest_ + payload_done_, want, MSG_DONTWAIT);
      if (n > 0) {
        payload_done_ += static_cast<uint64_t>(n);
        budget -= std::min(budget, static_cast<size_t>(n));
        drained = static_cast<size_t>(n) < want;
      } else if (n == 0) {
        failStream(makeStatus(StatusCode::kConnectionError,
                              "{} closed the connection in the middle of a {} frame (stream {})", pair_.peerName(),
                              wire::frameTypeName(header_.type), index_));
        return;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return;
      } else {
        failStream(makeStatus(StatusCode::kConnectionError, "receive from {} failed (stream {}): {}", pair_.peerName(),
                              index_, std::strerror(errno)));
        return;
      }
      if (payload_done_ < header_.length) continue;
    }
    if (header_.flags & wire::kFlagPayloadCrc) {
      const uint32_t crc = wire::crc32c(payload_dest_, header_.length);
      if (crc != header_.payload_crc) {
        failStream(makeStatus(StatusCode::kProtocolError,
                              "payload CRC 0x{:08x} of a {}-byte {} frame from {} does not match computed 0x{:08x}",
                              header_.payload_crc, header_.length, wire::frameTypeName(header_.type), pair_.peerName(),
                              crc));
        return;
      }
    }
    last_payload_large_ = header_.length >= kLargePayload;
    read_state_ = ReadState::kHeader;
    Status st = pair_.onFrameComplete(header_, index_);
    if (!st.isOk()) {
      failStream(st);
      return;
    }
  }
}

}  // namespace poseidon::transport::tcp
