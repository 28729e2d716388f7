// Rendezvous: the bookkeeping of two-sided messages, the same in every backend whatever carries
// the payload.
//
// Each message on a (pair, tag) has a sequence number, counted separately by the sender (sendv)
// and by the receiver (recv), so the n-th send on a tag meets the n-th receive. A receive posts
// room and tells the sender about it (TCP: a credit; verbs: a clear-to-send with address and
// rkey); the sender transmits message (tag, seq) only with that room in hand, so the payload
// lands straight in posted memory and nothing unexpected is ever buffered. Either side may come
// first: a send waits for its room, or a room that arrived early waits for its send.
//
// What it leaves to the backend is how rooms and payload travel. `Room` is what a sender needs
// to transmit (TCP: the room's size; verbs: address, rkey and size); `Posted` is the receiver's
// record of a posted receive (its `request` and whatever the backend needs to land the data);
// `Op` is the sender's operation (its `request` and `bytes`).
//
// The peer is trusted with nothing: its rooms must arrive in order on each tag, and it can make
// us hold only a bounded number of rooms no send has claimed yet. Not thread-safe: the owning
// Pair calls it under its lock.
#pragma once

#include <boost/container/small_vector.hpp>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

#include "transport/common/block_pool.h"
#include "transport/common/completion.h"
#include "transport/common/ring_queue.h"
#include "transport/common/slices.h"
#include "transport/pair.h"

namespace poseidon::transport {

// A send waiting for the receiver's room: the operation and the slices still to transmit.
// Scatter lists of up to kInlineSlices slices and the operation's record come from no heap.
template <typename Op>
struct PendingSend {
  static constexpr size_t kInlineSlices = 4;
  std::shared_ptr<Op> op;
  boost::container::small_vector<Slice, kInlineSlices> slices;

  // The message `request` sends as `slices`, with a new operation of its total length.
  static PendingSend of(const RequestPtr& request, std::span<const Slice> slices) {
    auto op = std::allocate_shared<Op>(PoolAllocator<Op>());
    op->request = request;
    op->bytes = totalLength(slices);
    return {std::move(op), {slices.begin(), slices.end()}};
  }
};

// How a backend's protocol names a grant of room, for the messages that report a peer breaking
// the rules: TCP {"credit", "credits"}, verbs {"clear-to-send", "receives"}.
struct RoomNames {
  const char* grant;   // one grant: "sent credit 3 on tag 7, expected 2"
  const char* unused;  // what piles up unclaimed: "granted more than 1048576 unused credits"
};

// The sender's status for a message larger than the room `receiver` posted: never truncated.
inline Status sendExceedsRoom(const Request& send, uint64_t bytes, uint64_t room, const std::string& receiver) {
  return makeStatus(StatusCode::kInvalidArgument, "{}: message of {} bytes exceeds the {} bytes {} posted", send.what(),
                    bytes, room, receiver);
}

// The receiver's status when `sender` reported that its message did not fit the posted room.
inline Status receiveExceedsRoom(const Request& recv, const std::string& sender, uint64_t bytes, uint64_t room) {
  return makeStatus(StatusCode::kInvalidArgument, "{}: {} sent a message of {} bytes, larger than the {} bytes posted",
                    recv.what(), sender, bytes, room);
}

template <typename T>
concept HoldsRequest = requires(const T& t) {
  { t.request } -> std::convertible_to<RequestPtr>;
};

template <typename Room, HoldsRequest Posted, HoldsRequest Op>
class Rendezvous {
 public:
  using Send = PendingSend<Op>;
  static constexpr size_t kDefaultMaxUnusedRooms = size_t{1} << 20;

  // `peer` names the other side in protocol errors.
  Rendezvous(const Pair& peer, RoomNames names, size_t max_unused_rooms = kDefaultMaxUnusedRooms)
      : peer_(peer), names_(names), max_unused_rooms_(max_unused_rooms) {}

  // ---- Sender side.

  // Numbers the next message on `tag`. If its room already arrived, `start(seq, send, room)`
  // transmits it now; otherwise the send waits for onRoom().
  template <typename Start>
  void send(uint32_t tag, Send send, Start&& start) {
    TagState& t = usedTag(tag);
    const uint64_t seq = t.send_seq++;
    if (t.unused.empty()) {
      t.waiting.push_back(std::move(send));
      return;
    }
    // Rooms and sends both come in order, so the oldest unused room is this message's.
    const Room granted = std::move(t.unused.front());
    t.unused.pop_front();
    --unused_rooms_;
    start(seq, std::move(send), granted);
  }

  // The receiver granted `room` for message (tag, seq). The send waiting for it, if any, goes
  // through `start(seq, send, room)`; otherwise the room waits for its send. A room out of
  // order on its tag, or one too many unused rooms, is the peer's protocol error.
  template <typename Start>
  Status onRoom(uint32_t tag, uint64_t seq, const Room& room, Start&& start) {
    TagState& t = tags_[tag];
    if (seq != t.room_seq) {
      return makeStatus(StatusCode::kProtocolError, "{} sent {} {} on tag {}, expected {}", peer_.peerName(),
                        names_.grant, seq, tag, t.room_seq);
    }
    if (!t.waiting.empty()) {
      ++t.room_seq;
      Send send = std::move(t.waiting.front());
      t.waiting.pop_front();
      start(seq, std::move(send), room);
      return Status::ok();
    }
    if (unused_rooms_ >= max_unused_rooms_) {
      return makeStatus(StatusCode::kProtocolError, "{} granted more than {} unused {}", peer_.peerName(),
                        max_unused_rooms_, names_.unused);
    }
    ++t.room_seq;
    t.unused.push_back(room);
    ++unused_rooms_;
    return Status::ok();
  }

  // ---- Receiver side.

  // Records a posted receive; returns its sequence number on `tag`, to name in the room's grant.
  uint64_t post(uint32_t tag, Posted posted) {
    TagState& t = usedTag(tag);
    const uint64_t seq = t.recv_seq++;
    if (t.posted.empty()) t.posted_base = seq;
    t.posted.push_back(std::move(posted));
    return seq;
  }
  // The posted receive for message (tag, seq), or null if there is none (the peer's error).
  Posted* findPosted(uint32_t tag, uint64_t seq) {
    auto it = tags_.find(tag);
    if (it == tags_.end()) return nullptr;
    TagState& t = it->second;
    if (seq < t.posted_base || seq - t.posted_base >= t.posted.size()) return nullptr;
    auto& slot = t.posted[static_cast<size_t>(seq - t.posted_base)];
    return slot ? &*slot : nullptr;
  }
  // Removes and returns the posted receive for message (tag, seq), once it finished. Receives
  // may finish out of order (pieces over several streams); their slots stay until the older
  // ones finish too.
  std::optional<Posted> takePosted(uint32_t tag, uint64_t seq) {
    Posted* found = findPosted(tag, seq);
    if (found == nullptr) return std::nullopt;
    TagState& t = tags_.find(tag)->second;
    auto& slot = t.posted[static_cast<size_t>(seq - t.posted_base)];
    Posted taken = std::move(*slot);
    slot.reset();
    while (!t.posted.empty() && !t.posted.front()) {
      t.posted.pop_front();
      ++t.posted_base;
    }
    return taken;
  }

  // ---- Failure: every send still waiting for room and every posted receive fails with `cause`.
  void failAll(const Status& cause, Completions& done) {
    for (auto& [tag, t] : tags_) {
      for (auto& send : t.waiting) failRequest(done, send.op->request, cause);
      t.waiting.clear();
      for (auto& slot : t.posted) {
        if (slot) failRequest(done, slot->request, cause);
      }
      t.posted.clear();
    }
  }

 private:
  // One tag's messages. Sequence numbers on a tag only go up, so each queue is a contiguous
  // range: waiting sends are messages [room_seq, send_seq), unused rooms [send_seq, room_seq),
  // posted receives [posted_base, recv_seq). Rings, so steady traffic allocates nothing.
  struct TagState {
    uint64_t send_seq = 0;  // next message number
    uint64_t room_seq = 0;  // next room expected
    uint64_t recv_seq = 0;  // next receive number
    uint64_t posted_base = 0;
    RingQueue<Send> waiting;
    RingQueue<Room> unused;
    RingQueue<std::optional<Posted>> posted;  // finished ones empty until those before finish
  };

  // The state of a tag this side sends or receives on, its rings' first capacity taken now.
  // Whether a room or its send comes first is a race, and the first of either must not allocate
  // later on: steady traffic then allocates nothing whichever way its races go. A tag only the
  // peer names (its rooms, onRoom) keeps empty rings, so a peer can make us hold little.
  TagState& usedTag(uint32_t tag) {
    TagState& t = tags_[tag];
    t.waiting.reserveFirst();
    t.unused.reserveFirst();
    t.posted.reserveFirst();
    return t;
  }

  const Pair& peer_;
  const RoomNames names_;
  const size_t max_unused_rooms_;
  size_t unused_rooms_ = 0;  // over all tags
  std::unordered_map<uint32_t, TagState> tags_;
};

}  // namespace poseidon::transport
