#include "transport/tcp/pair.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <algorithm>

#include "transport/tcp/context.h"
#include "transport/wire/crc32c.h"

namespace poseidon::transport::tcp {
namespace {
// Limits on what a peer can make us hold, so a misbehaving peer cannot exhaust memory.
constexpr size_t kMaxBufferedCredits = 1u << 20;
constexpr uint64_t kMaxWritesInFlight = 1u << 20;
constexpr size_t kMaxUnclaimedImms = 1u << 20;

uint64_t totalLength(std::span<const Slice> slices) {
  uint64_t total = 0;
  for (const auto& s : slices) total += s.length;
  return total;
}
}  // namespace

TcpPair::TcpPair(TcpContext& context, int peer_rank, const DeviceOptions& options, ProgressEngine& engine)
    : context_(context), peer_rank_(peer_rank), options_(options), engine_(engine) {
  streams_.resize(static_cast<size_t>(options.streams));
}

TcpPair::~TcpPair() {
  // Stop the engine from calling into our streams before anything is torn down.
  for (auto& stream : streams_) {
    if (stream && active_) engine_.remove(stream->fd());
  }
  fail(makeStatus(StatusCode::kConnectionError, "context '{}' was closed", context_.name()));
}

std::string TcpPair::peerName() const {
  if (peer_address_.empty()) return fmt::format("rank {}", peer_rank_);
  return fmt::format("rank {} ({})", peer_rank_, peer_address_);
}

std::string TcpPair::describe(const char* op, uint32_t tag) const {
  return fmt::format("{} tag {} {} {}", op, tag, std::string(op) == "recv" ? "from" : "to", peerName());
}

void TcpPair::attachStream(int index, Fd fd, const std::string& peer_address) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_address_.empty()) peer_address_ = peer_address;
  wire::DecodeLimits limits;
  limits.max_payload = options_.max_frame_payload;
  streams_[static_cast<size_t>(index)] = std::make_unique<Stream>(*this, index, std::move(fd), peer_address, limits);
}

bool TcpPair::hasAllStreams() const { return missingStreams().empty(); }

std::vector<int> TcpPair::missingStreams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> missing;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!streams_[i]) missing.push_back(static_cast<int>(i));
  }
  return missing;
}

Status TcpPair::activate() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& stream : streams_) {
    POSEIDON_RETURN_IF_ERROR(setNonBlocking(stream->fd(), true));
    POSEIDON_RETURN_IF_ERROR(engine_.add(stream->fd(), stream.get(), EPOLLIN));
  }
  active_ = true;
  return Status::ok();
}

Status TcpPair::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void TcpPair::flushAllLocked(Completions& done) {
  for (auto& stream : streams_) stream->flushLocked(done);
}

void TcpPair::enqueueControlLocked(const wire::FrameHeader& header) {
  OutFrame frame;
  wire::encodeHeader(header, frame.header.data());
  frame.size = wire::kFrameHeaderSize;
  streams_[0]->enqueueControlLocked(std::move(frame));
}

void TcpPair::enqueuePiecesLocked(const wire::FrameHeader& prototype, uint64_t base_offset,
                                  const std::vector<Slice>& slices, const std::shared_ptr<SendOp>& op) {
  const uint64_t total = totalLength(slices);
  const uint64_t stripe = options_.stripe_bytes;
  const uint64_t pieces = total == 0 ? 1 : (total + stripe - 1) / stripe;
  op->frames_left = pieces;
  size_t slice_index = 0;
  uint64_t slice_offset = 0;
  for (uint64_t p = 0; p < pieces; ++p) {
    const uint64_t piece_offset = p * stripe;
    const uint64_t piece_length = std::min(stripe, total - piece_offset);
    OutFrame frame;
    frame.op = op;
    uint64_t need = piece_length;
    uint32_t crc = 0;
    while (need > 0) {
      const Slice& s = slices[slice_index];
      const uint64_t take = std::min(need, s.length - slice_offset);
      if (take > 0) {
        uint8_t* base = s.region->data() + s.offset + slice_offset;
        frame.payload.push_back({base, take});
        if (options_.payload_crc) crc = wire::crc32c(base, take, crc);
      }
      need -= take;
      slice_offset += take;
      if (slice_offset == s.length) {
        ++slice_index;
        slice_offset = 0;
      }
    }
    wire::FrameHeader header = prototype;
    header.length = static_cast<uint32_t>(piece_length);
    header.offset = base_offset + piece_offset;
    if (options_.payload_crc) {
      header.flags |= wire::kFlagPayloadCrc;
      header.payload_crc = crc;
    }
    wire::encodeHeader(header, frame.header.data());
    frame.size = wire::kFrameHeaderSize + piece_length;
    streams_[next_stream_]->enqueueLocked(std::move(frame));
    next_stream_ = (next_stream_ + 1) % streams_.size();
  }
}

RequestPtr TcpPair::sendv(uint32_t tag, std::span<const Slice> slices) {
  auto request = std::make_shared<Request>(describe("send", tag));
  for (const auto& s : slices) {
    if (s.region == nullptr || !s.region->contains(s.offset, s.length)) {
      request->complete(makeStatus(StatusCode::kInvalidArgument,
                                   "{}: slice [{}, +{}) is outside its region of {} bytes", request->what(), s.offset,
                                   s.length, s.region ? s.region->size() : 0));
      return request;
    }
  }
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed()) {
      done.push_back({request, failure_.withContext(request->what())});
    } else {
      const uint64_t seq = send_seq_[tag]++;
      auto op = std::make_shared<SendOp>();
      op->request = request;
      op->bytes = totalLength(slices);
      PendingSend send{op, std::vector<Slice>(slices.begin(), slices.end())};
      auto credit = credits_.find({tag, seq});
      if (credit != credits_.end()) {
        const uint64_t room = credit->second;
        credits_.erase(credit);
        startSendLocked(tag, seq, std::move(send), room, done);
        flushAllLocked(done);
      } else {
        pending_sends_.emplace(MessageKey{tag, seq}, std::move(send));
      }
    }
  }
  completeAll(done);
  return request;
}

void TcpPair::startSendLocked(uint32_t tag, uint64_t seq, PendingSend send, uint64_t room, Completions& done) {
  wire::FrameHeader header;
  header.tag = tag;
  header.seq = seq;
  header.total = send.op->bytes;
  if (send.op->bytes > room) {
    // Never truncate: fail both sides of this message and keep the connection.
    header.type = wire::FrameType::kSendError;
    enqueueControlLocked(header);
    done.push_back({send.op->request,
                    makeStatus(StatusCode::kInvalidArgument, "{}: message of {} bytes exceeds the {} bytes {} posted",
                               send.op->request->what(), send.op->bytes, room, peerName())});
    return;
  }
  header.type = wire::FrameType::kData;
  enqueuePiecesLocked(header, 0, send.slices, send.op);
}

RequestPtr TcpPair::recv(uint32_t tag, MemoryRegion& region, uint64_t offset, uint64_t length) {
  auto request = std::make_shared<Request>(describe("recv", tag));
  if (!region.contains(offset, length)) {
    request->complete(makeStatus(StatusCode::kInvalidArgument, "{}: range [{}, +{}) is outside its region of {} bytes",
                                 request->what(), offset, length, region.size()));
    return request;
  }
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed()) {
      done.push_back({request, failure_.withContext(request->what())});
    } else {
      const uint64_t seq = recv_seq_[tag]++;
      PostedRecv posted;
      posted.request = request;
      posted.region = &region;
      posted.offset = offset;
      posted.room = length;
      posted_.emplace(MessageKey{tag, seq}, std::move(posted));
      wire::FrameHeader credit;
      credit.type = wire::FrameType::kCredit;
      credit.tag = tag;
      credit.seq = seq;
      credit.total = length;
      enqueueControlLocked(credit);
      streams_[0]->flushLocked(done);
    }
  }
  completeAll(done);
  return request;
}

RequestPtr TcpPair::write(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                          uint64_t remote_offset, uint64_t length, uint32_t imm) {
  auto request = std::make_shared<Request>(fmt::format("write of {} bytes to region {} of {}", length, remote.key,
                                                       peerName()));
  if (!local.contains(local_offset, length)) {
    request->complete(makeStatus(StatusCode::kInvalidArgument,
                                 "{}: local range [{}, +{}) is outside the local region of {} bytes", request->what(),
                                 local_offset, length, local.size()));
    return request;
  }
  if (remote.backend != BackendTag::kTcp) {
    request->complete(makeStatus(StatusCode::kInvalidArgument, "{}: remote descriptor is for backend '{}', not 'tcp'",
                                 request->what(), backendName(remote.backend)));
    return request;
  }
  if (remote_offset > remote.length || length > remote.length - remote_offset) {
    request->complete(makeStatus(StatusCode::kInvalidArgument,
                                 "{}: remote range [{}, +{}) is outside the remote region of {} bytes",
                                 request->what(), remote_offset, length, remote.length));
    return request;
  }
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed()) {
      done.push_back({request, failure_.withContext(request->what())});
    } else {
      auto op = std::make_shared<SendOp>();
      op->request = request;
      op->bytes = length;
      wire::FrameHeader header;
      header.type = wire::FrameType::kWrite;
      header.tag = remote.key;
      header.seq = write_seq_++;
      header.total = length;
      header.imm = imm;
      enqueuePiecesLocked(header, remote_offset, {Slice{&local, local_offset, length}}, op);
      flushAllLocked(done);
    }
  }
  completeAll(done);
  return request;
}

RequestPtr TcpPair::recvImm() {
  auto request = std::make_shared<Request>(fmt::format("write notification from {}", peerName()));
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ready_imms_.empty()) {
      done.push_back({request, Status::ok(), 0, ready_imms_.front()});
      ready_imms_.pop_front();
    } else if (failed()) {
      done.push_back({request, failure_.withContext(request->what())});
    } else {
      imm_waiters_.push_back(request);
    }
  }
  completeAll(done);
  return request;
}

Result<uint8_t*> TcpPair::onFrameHeader(const wire::FrameHeader& h) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (h.type) {
    case wire::FrameType::kCredit:
    case wire::FrameType::kSendError:
      return static_cast<uint8_t*>(nullptr);
    case wire::FrameType::kData: {
      auto it = posted_.find({h.tag, h.seq});
      if (it == posted_.end()) {
        return makeStatus(StatusCode::kProtocolError,
                          "{} sent data for message {} on tag {} without a posted receive (credit violated)",
                          peerName(), h.seq, h.tag);
      }
      PostedRecv& posted = it->second;
      if (h.total > posted.room) {
        return makeStatus(StatusCode::kProtocolError,
                          "{} sent a message of {} bytes on tag {} into a posted receive of {} bytes", peerName(),
                          h.total, h.tag, posted.room);
      }
      if (posted.started && h.total != posted.total) {
        return makeStatus(StatusCode::kProtocolError, "{} changed the length of message {} on tag {} from {} to {}",
                          peerName(), h.seq, h.tag, posted.total, h.total);
      }
      posted.started = true;
      posted.total = h.total;
      return posted.region->data() + posted.offset + h.offset;
    }
    case wire::FrameType::kWrite: {
      MemoryRegion* region = context_.findRegion(h.tag);
      if (region == nullptr) {
        return makeStatus(StatusCode::kProtocolError, "{} wrote into region key {}, which is not registered here",
                          peerName(), h.tag);
      }
      if (!region->contains(h.offset, h.length)) {
        return makeStatus(StatusCode::kProtocolError,
                          "{} wrote {} bytes at offset {} of region key {}, outside its {} bytes", peerName(),
                          h.length, h.offset, h.tag, region->size());
      }
      if (h.seq < next_notify_seq_ || h.seq >= next_notify_seq_ + kMaxWritesInFlight) {
        return makeStatus(StatusCode::kProtocolError, "{} sent write number {}, expected one in [{}, {})", peerName(),
                          h.seq, next_notify_seq_, next_notify_seq_ + kMaxWritesInFlight);
      }
      return region->data() + h.offset;
    }
  }
  return makeStatus(StatusCode::kInternal, "unhandled frame type {}", static_cast<int>(h.type));
}

Status TcpPair::onFrameComplete(const wire::FrameHeader& h) {
  Completions done;
  Status result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    switch (h.type) {
      case wire::FrameType::kCredit: {
        uint64_t& expected = credit_seq_[h.tag];
        if (h.seq != expected) {
          result = makeStatus(StatusCode::kProtocolError, "{} sent credit {} on tag {}, expected {}", peerName(),
                              h.seq, h.tag, expected);
          break;
        }
        ++expected;
        auto pending = pending_sends_.find({h.tag, h.seq});
        if (pending != pending_sends_.end()) {
          PendingSend send = std::move(pending->second);
          pending_sends_.erase(pending);
          startSendLocked(h.tag, h.seq, std::move(send), h.total, done);
          flushAllLocked(done);
        } else if (credits_.size() >= kMaxBufferedCredits) {
          result = makeStatus(StatusCode::kProtocolError, "{} granted more than {} unused credits", peerName(),
                              kMaxBufferedCredits);
        } else {
          credits_.emplace(MessageKey{h.tag, h.seq}, h.total);
        }
        break;
      }
      case wire::FrameType::kSendError: {
        auto it = posted_.find({h.tag, h.seq});
        if (it == posted_.end()) {
          result = makeStatus(StatusCode::kProtocolError, "{} reported an oversized message {} on tag {} never posted",
                              peerName(), h.seq, h.tag);
          break;
        }
        done.push_back({it->second.request,
                        makeStatus(StatusCode::kInvalidArgument,
                                   "{}: {} sent a message of {} bytes, larger than the {} bytes posted",
                                   it->second.request->what(), peerName(), h.total, it->second.room)});
        posted_.erase(it);
        break;
      }
      case wire::FrameType::kData: {
        auto it = posted_.find({h.tag, h.seq});
        PostedRecv& posted = it->second;  // onFrameHeader checked it exists; only this thread erases
        posted.received += h.length;
        if (posted.received >= posted.total) {
          done.push_back({posted.request, Status::ok(), posted.total});
          posted_.erase(it);
        }
        break;
      }
      case wire::FrameType::kWrite: {
        IncomingWrite& w = incoming_writes_[h.seq];
        w.total = h.total;
        w.imm = h.imm;
        w.received += h.length;
        if (w.received > w.total) {
          result = makeStatus(StatusCode::kProtocolError, "{} sent {} bytes for write {} of {} bytes", peerName(),
                              w.received, h.seq, w.total);
          break;
        }
        deliverWritesLocked(done);
        if (ready_imms_.size() > kMaxUnclaimedImms) {
          result = makeStatus(StatusCode::kProtocolError, "{} made more than {} writes nobody waited for", peerName(),
                              kMaxUnclaimedImms);
        }
        break;
      }
    }
  }
  completeAll(done);
  return result;
}

void TcpPair::deliverWritesLocked(Completions& done) {
  while (true) {
    auto it = incoming_writes_.find(next_notify_seq_);
    if (it == incoming_writes_.end() || it->second.received < it->second.total) return;
    // A zero-byte write arrives as one empty frame, so its entry exists and is complete.
    const uint32_t imm = it->second.imm;
    incoming_writes_.erase(it);
    ++next_notify_seq_;
    if (!imm_waiters_.empty()) {
      done.push_back({imm_waiters_.front(), Status::ok(), 0, imm});
      imm_waiters_.pop_front();
    } else {
      ready_imms_.push_back(imm);
    }
  }
}

void TcpPair::fail(Status cause) {
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed()) return;
    failure_ = cause;
    failed_.store(true, std::memory_order_release);
    for (auto& stream : streams_) {
      if (!stream) continue;
      if (active_ && engine_.inEngineThread()) engine_.remove(stream->fd());
      stream->shutdownSocket();
      for (auto& frame : stream->takeQueueLocked()) {
        if (frame.op && frame.op->frames_left > 0) {
          frame.op->frames_left = 0;
          done.push_back({frame.op->request, cause.withContext(frame.op->request->what())});
        }
      }
    }
    for (auto& [key, send] : pending_sends_) done.push_back({send.op->request, cause.withContext(send.op->request->what())});
    pending_sends_.clear();
    for (auto& [key, posted] : posted_) done.push_back({posted.request, cause.withContext(posted.request->what())});
    posted_.clear();
    for (auto& waiter : imm_waiters_) done.push_back({waiter, cause.withContext(waiter->what())});
    imm_waiters_.clear();
  }
  // A peer that closes with nothing pending is a normal end of a job; one that takes requests
  // down with it, or breaks the protocol, is worth a warning.
  if (!done.empty() || cause.code() == StatusCode::kProtocolError) {
    spdlog::warn("transport: connection to {} failed with {} requests pending: {}", peerName(), done.size(),
                 cause.toString());
  } else {
    spdlog::debug("transport: connection to {} ended: {}", peerName(), cause.toString());
  }
  completeAll(done);
}

}  // namespace poseidon::transport::tcp
