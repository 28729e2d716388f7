// The checkpoint notices between servers and workers: what became of a checkpoint clock on one
// server (ToWorker::kCheckpointOutcome), and what every server has done with one
// (ToServer::kCheckpointSettled).
//
// They carry wider clocks than the other immediates: the clock's bits 15 and up ride in the chunk
// field above a small code, so a clock widens exactly while the receiver's bound is within 2^26
// (outcomes) or 2^28 (settlements) clocks of it. A checkpoint every 10 000 clocks, or a server
// skipping for tens of thousands of clocks, is still exact.
#pragma once

#include <cstdint>

#include "ps/imm_code.h"

namespace poseidon::ps {

enum class CheckpointOutcome : uint32_t {
  kWritten = 0,      // the file is complete on the server's disk
  kNoDirectory = 1,  // the server was started without a checkpoint directory
  kWriteFailed = 2,  // writing the file failed (its log says why: disk full, permissions...)
  kDiskBehind = 3,   // skipped: the checkpoints before it were still being written (checkpointer.h)
  // Skipped: checkpoint_keep newer checkpoints of this server wait for the other servers
  // (checkpointer.h).
  kAwaitingServers = 4,
  // Skipped: async left a lost worker out and the clock was passed over (checkpointer.h).
  kPassedOver = 5,
};
inline constexpr uint32_t kLastCheckpointOutcome = 5;
inline constexpr uint32_t kOutcomeCodeBits = 3;

enum class CheckpointSettled : uint32_t {
  kCommitted = 0,    // every server has written its file of the clock
  kPassedByAll = 1,  // every server has passed the clock (written, skipped or failed)
};
inline constexpr uint32_t kSettledCodeBits = 1;

// The clock bits a notice carries beside a code of `code_bits`.
constexpr uint32_t noticeClockBits(uint32_t code_bits) { return kImmValueBits + kImmChunkBits - code_bits; }

struct CheckpointNotice {
  uint32_t code = 0;
  uint64_t clock_low = 0;  // the clock's low noticeClockBits(code_bits) bits
};

constexpr uint32_t encodeCheckpointNotice(uint8_t type, uint32_t code, uint32_t code_bits, uint64_t clock) {
  const uint32_t high_mask = (uint32_t{1} << (kImmChunkBits - code_bits)) - 1;
  const uint32_t high = static_cast<uint32_t>(clock >> kImmValueBits) & high_mask;
  return encodeImm(type, (high << code_bits) | (code & ((uint32_t{1} << code_bits) - 1)), clock);
}

constexpr CheckpointNotice decodeCheckpointNotice(const Imm& imm, uint32_t code_bits) {
  return {imm.chunk & ((uint32_t{1} << code_bits) - 1),
          (uint64_t{imm.chunk >> code_bits} << kImmValueBits) | imm.value};
}

}  // namespace poseidon::ps
