// Stream: one TCP connection of a pair. A pair stripes its frames over one or more streams.
//
// The stream owns the socket, its queue of outgoing frames (header + payload iovecs pointing
// into registered memory, written with one writev for many frames) and the incoming-frame state
// machine, which reads headers through a small inbox and payloads straight into their
// destination (a posted receive or a registered region), never through a staging buffer.
//
// With sealed frames (DeviceOptions::encrypt_frames) a frame's payload is encrypted into a buffer
// of its own just before its first byte is written (wire::FrameCipher numbers frames in the order
// they go), and incoming ciphertext lands in a buffer of the stream's, is opened there once its
// tag has arrived, and only then is copied to its destination and acted on. (Not in the
// destination: another stream's frame may write the same bytes of a region meanwhile, as
// overlapping writes may, and unauthenticated plaintext must never reach it.)
#pragma once

#include <sys/uio.h>

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/common/completion.h"
#include "transport/common/region_registry.h"
#include "transport/common/ring_queue.h"
#include "transport/common/socket.h"
#include "transport/request.h"
#include "transport/tcp/progress_engine.h"
#include "transport/wire/frame.h"
#include "transport/wire/frame_cipher.h"

namespace poseidon::transport::tcp {

class TcpPair;

// One send or write, shared by the frames it was cut into.
struct SendOp {
  RequestPtr request;
  size_t frames_left = 0;
  uint64_t bytes = 0;
};

struct OutFrame {
  wire::EncodedHeader header{};
  boost::container::small_vector<iovec, 2> payload;  // a frame spans one or two slices, mostly
  size_t size = 0;                                   // header + payload bytes
  size_t sent = 0;
  std::shared_ptr<SendOp> op;  // null for control frames
  // Sealed frames: the ciphertext and tag that go instead of `payload` (the sender's memory)
  // once sealed. A sealed frame has its place in the stream's order.
  std::unique_ptr<uint8_t[]> sealed;
  size_t sealed_bytes = 0;  // its allocation, which may exceed what this frame uses
};

// A stream's frame ciphers; both null when frames are not sealed.
struct StreamCiphers {
  std::unique_ptr<wire::FrameCipher> seal;
  std::unique_ptr<wire::FrameCipher> open;
};

// Where a frame's payload goes. A one-sided write's region may be destroyed while the payload
// arrives, so for writes `region` is set and the bytes are touched only inside region->use().
struct PayloadDestination {
  uint8_t* bytes = nullptr;
  std::shared_ptr<RegionEntry> region;
};

class Stream final : public EventHandler {
 public:
  Stream(TcpPair& pair, int index, Fd fd, std::string peer_address, const wire::DecodeLimits& limits,
         StreamCiphers ciphers);

  int fd() const { return fd_.get(); }
  int index() const { return index_; }

  // Pair lock held: queue a frame; flush() writes what the socket takes now.
  void enqueueLocked(OutFrame frame) { out_.push_back(std::move(frame)); }
  // Pair lock held: queue a control frame (no payload) ahead of every data frame not yet
  // started, behind earlier control frames: a credit must not wait for megabytes of queued
  // data, or the peer's sends (and everything waiting on them) stall for as long.
  void enqueueControlLocked(OutFrame frame);
  // Pair lock held. Writes queued frames until the socket is full (then waits for EPOLLOUT).
  // A socket error shuts the socket down; the engine thread then fails the pair.
  void flushLocked(Completions& done);
  // Pair lock held: the ops of queued frames, for failing them.
  RingQueue<OutFrame> takeQueueLocked() { return std::exchange(out_, RingQueue<OutFrame>()); }

  void shutdownSocket();
  void onEvents(uint32_t events) override;

 private:
  enum class ReadState { kHeader, kPayload, kTag };
  // What a read step achieved: its part of the frame is here (kDone), some bytes came and the
  // step goes on (kAgain), or reading stops for now: the socket is empty or the stream failed.
  enum class ReadStep { kDone, kAgain, kStop };
  void onReadable();
  ReadStep readHeader(size_t& budget, bool& drained);   // decodes it; finds the payload's place
  ReadStep readPayload(size_t& budget, bool& drained);  // into its destination
  ReadStep readTag(size_t& budget, bool& drained);      // sealed frames: into the inbox
  // Checks the payload's CRC or opens its seal; false if the stream failed.
  bool checkPayload();
  // Runs fn, which touches the payload's final place; for a write, inside its region's use().
  // False, with the stream failed, when the region was deregistered while the write arrived.
  template <typename Fn>
  bool atFinalPlace(Fn&& fn);
  // Pair lock held: encrypts a not yet started frame's payload into its own buffer.
  Status sealLocked(OutFrame& frame);
  // Pair lock held: drops the fully written front frame, keeping its sealed buffer for reuse.
  void retireFrontLocked();
  // Reads into the inbox; false when nothing more can be read now (or the stream failed).
  // `drained`: the read was short, so the socket has nothing more for now.
  bool fillInbox(size_t want, size_t& budget, bool& drained);
  void failStream(Status status);
  // The peer closed this stream after a whole frame: what its other streams still hold is read
  // before the pair fails (TcpPair::onStreamEnded).
  void endBetweenFrames();

  TcpPair& pair_;
  int index_;
  Fd fd_;
  std::string peer_address_;
  wire::DecodeLimits limits_;
  bool want_write_ = false;  // EPOLLOUT armed
  bool broken_ = false;
  RingQueue<OutFrame> out_;
  StreamCiphers ciphers_;
  std::vector<std::unique_ptr<uint8_t[]>> spare_sealed_;  // sealed buffers of spare_bytes_ each
  size_t spare_bytes_ = 0;

  // Under the dispatch gate only.
  bool ended_ = false;  // the peer closed it between frames; out of the engine
  ReadState read_state_ = ReadState::kHeader;
  std::vector<uint8_t> inbox_;
  size_t inbox_begin_ = 0;
  size_t inbox_end_ = 0;
  bool last_payload_large_ = false;
  wire::FrameHeader header_;
  wire::EncodedHeader header_bytes_{};           // as received: a sealed frame's associated data
  uint8_t* payload_dest_ = nullptr;              // where the payload is read to
  std::shared_ptr<RegionEntry> payload_region_;  // a write's region: payload_final_ is in it
  uint8_t* payload_final_ = nullptr;             // sealed frames: where it goes once opened
  std::vector<uint8_t> sealed_inbox_;            // sealed frames: the ciphertext, as large as the largest
  uint64_t payload_done_ = 0;
  // CRC32C of the payload read so far, when the frame carries one: each piece is summed as it
  // lands, while the receive's copy has left it in cache, not in a second pass over the whole.
  uint32_t payload_crc_ = 0;
};

}  // namespace poseidon::transport::tcp
