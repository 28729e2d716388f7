// The parameter server's 32-bit immediates: every notification between a worker and a server is
// the immediate of a one-sided write (the gradient or parameter bytes themselves, or an empty
// write), so each side has a single ordered stream of events per peer to wait on.
//
// Layout: type (3 bits) | chunk (14 bits) | value (15 bits). `chunk` is the chunk's index on its
// server (at most 16384 chunks per server: 32 GiB with 2 MiB chunks); `value` is the low 15 bits
// of a clock or version, which the receiver widens against a bound it knows (see widenAtMost), or
// a worker id. Direction decides the meaning of a type.
#pragma once

#include <cstdint>

namespace poseidon::ps {

inline constexpr uint32_t kImmChunkBits = 14;
inline constexpr uint32_t kImmValueBits = 15;
inline constexpr uint32_t kMaxChunksPerServer = uint32_t{1} << kImmChunkBits;
inline constexpr uint32_t kImmValueMask = (uint32_t{1} << kImmValueBits) - 1;
// A version or clock travels as its low 15 bits; widening is exact while the receiver's bound
// is within this window of the true value (staleness bounds are checked against it).
inline constexpr uint64_t kImmValueWindow = uint64_t{1} << kImmValueBits;
inline constexpr uint32_t kMaxWorkers = kImmValueWindow;

// Worker -> server.
enum class ToServer : uint8_t {
  kPush = 0,        // the gradient of `chunk` is in this worker's slot
  kPull = 1,        // send `chunk` once its version >= value (widened)
  kInit = 2,        // worker 0 wrote the initial parameters of `chunk`
  kCheckpoint = 3,  // checkpoint at clock value (widened)
  // Value 0: this worker is done; its connection may close. Value s + 1: it leaves because its
  // connection to server s failed (the job failed there): the server that gets this names server s
  // rather than this worker (servers know of each other only through the workers).
  kBye = 4,
  // This worker asked for priority (PushSchedule::priority): under BSP send it kAwaited; send
  // its parameters nearest the input first.
  kAnnounce = 5,
  kPing = 6,  // answer kPong with this value: is the server alive (a worker's wait timed out)
  // What every server has done with a checkpoint clock (ps/checkpoint/checkpoint_notice.h: a
  // CheckpointSettled and the clock): which files may go (ps/checkpoint/checkpointer.h). Any
  // worker may say it; each says it once per clock.
  kCheckpointSettled = 7,
};

// Server -> worker.
enum class ToWorker : uint8_t {
  kAck = 0,           // this worker's push of `chunk` was applied; its slot is free
  kParams = 1,        // `chunk`'s parameters at version value (widened) are in place
  kBlocked = 2,       // a pull of `chunk` waits for worker `value`'s push
  kWorkerFailed = 3,  // worker `value` is gone; pulls that need it cannot finish
  // BSP, to a worker that sent kAnnounce: another worker pushed `chunk` for clock value (widened)
  // and this one has not, so the aggregation waits for it.
  kAwaited = 4,
  kPong = 5,  // the answer to kPing, with its value
  // What became of a checkpoint clock (ps/checkpoint/checkpoint_notice.h: a CheckpointOutcome
  // and the clock). Every outcome goes to every worker, which says kCheckpointSettled.
  kCheckpointOutcome = 6,
  // Server `value` is gone, as a worker that lost it reported (kBye naming it): pulls and pushes
  // through it cannot finish. Named so, not as that worker's leaving.
  kServerFailed = 7,
};

struct Imm {
  uint8_t type = 0;
  uint32_t chunk = 0;
  uint32_t value = 0;
};

constexpr uint32_t encodeImm(uint8_t type, uint32_t chunk, uint64_t value) {
  return (uint32_t{type} << (kImmChunkBits + kImmValueBits)) | ((chunk & (kMaxChunksPerServer - 1)) << kImmValueBits) |
         (static_cast<uint32_t>(value) & kImmValueMask);
}

constexpr Imm decodeImm(uint32_t imm) {
  return Imm{static_cast<uint8_t>(imm >> (kImmChunkBits + kImmValueBits)),
             (imm >> kImmValueBits) & (kMaxChunksPerServer - 1), imm & kImmValueMask};
}

// The smallest value >= lower whose low `bits` bits are `low`.
constexpr uint64_t widenAtLeast(uint64_t lower, uint64_t low, uint32_t bits) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint64_t candidate = (lower & ~mask) | (low & mask);
  return candidate >= lower ? candidate : candidate + (uint64_t{1} << bits);
}

// The largest value <= upper whose low `bits` bits are `low`, or nothing below 0.
constexpr bool widenAtMost(uint64_t upper, uint64_t low, uint32_t bits, uint64_t& value) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint64_t candidate = (upper & ~mask) | (low & mask);
  if (candidate <= upper) {
    value = candidate;
    return true;
  }
  if (candidate < (uint64_t{1} << bits)) return false;
  value = candidate - (uint64_t{1} << bits);
  return true;
}

// The largest value <= upper whose low bits are `low` (the sender's value is known not to exceed
// upper and to lie within the window below it).
constexpr uint64_t widenAtMost(uint64_t upper, uint32_t low) {
  const uint64_t candidate = (upper & ~uint64_t{kImmValueMask}) | (low & kImmValueMask);
  if (candidate <= upper) return candidate;
  return candidate - kImmValueWindow;  // wraps below 0 only if the sender broke the bound
}

// The smallest value >= lower whose low bits are `low`.
constexpr uint64_t widenAtLeast(uint64_t lower, uint32_t low) { return widenAtLeast(lower, low, kImmValueBits); }

}  // namespace poseidon::ps
