// Checkpoint files: one per server and clock, written so that a crash at any moment leaves the
// previous complete checkpoint intact.
//
// A server writes "<dir>/server-<s>.clock-<T>.ckpt" through a temporary file in the same
// directory: write, fsync, rename, fsync the directory. The file holds a fixed little-endian
// header (magic, format version, the identity below), the per-chunk counters, the parameters and
// the optimizer state, and a CRC32C of everything before it. Loading checks every field against
// the running job and refuses, saying which field differs and both values, or where the file is
// short or its checksum wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::ps {

// What must match between the job that wrote a checkpoint and the job that loads it.
struct CheckpointIdentity {
  uint32_t server = 0;
  uint32_t servers = 1;
  uint32_t workers = 1;
  uint64_t chunk_bytes = 0;
  uint64_t model_fingerprint = 0;  // modelFingerprint() of the tensor list
  uint32_t chunks = 0;             // chunks this server holds
  uint64_t elements = 0;           // float32 parameters this server holds
  uint32_t state_words = 0;        // optimizer state words per parameter (0, 1 or 2)
  std::string optimizer;           // kernels::OptimizerConfig::canonical()
  std::string consistency;         // "bsp", "ssp:3", "async"
};

// The contents. On write the spans are read; on load they are filled (sizes must match the
// identity: params and each state word have `elements` floats; state words beyond state_words
// are empty spans).
struct CheckpointData {
  uint64_t clock = 0;                 // every chunk of the server is at this version
  std::vector<uint64_t> chunk_steps;  // per chunk: optimizer steps applied so far
  // Per chunk, per worker (chunk-major): the pushes whose updates the parameters hold (after a
  // resume, the replays still to come among them: ps/server.cc).
  std::vector<uint64_t> applied;
  std::span<float> params;
  std::span<float> state0;
  std::span<float> state1;
};

// A server's checkpoint_keep at most: a worker tracks that many undecided clocks per server
// (checkpoint_commits.h).
inline constexpr int kMaxCheckpointKeep = 1000;

std::string checkpointPath(const std::string& dir, uint32_t server, uint64_t clock);

// Writes atomically (temporary file, fsync, rename, directory fsync). Removes nothing: which older
// files may go depends on the other servers' (pruneCheckpoints).
Status writeCheckpoint(const std::string& dir, const CheckpointIdentity& identity, const CheckpointData& data);

// What writes a server's checkpoint files: writeCheckpoint, or a caller's own (a test's slow disk).
using WriteCheckpointFunction =
    std::function<Status(const std::string& dir, const CheckpointIdentity& identity, const CheckpointData& data)>;

// Removes `server`'s files that no resume needs: those of clocks up to `committed` (the newest
// clock every server has written) but the newest `keep` of them, and those after it up to
// `passed_by_all` (every server has passed that clock, so no later clock up to it will be on
// every disk). Newer ones stay: any may yet be on every disk.
Status pruneCheckpoints(const std::string& dir, uint32_t server, uint64_t committed, uint64_t passed_by_all, int keep);

// Removes `server`'s files of clocks after `clock`; returns how many went (a file that cannot be
// removed stays and is not counted).
size_t removeCheckpointsAfter(const std::string& dir, uint32_t server, uint64_t clock);

// Loads <dir>/server-<s>.clock-<clock>.ckpt into `data` (spans preallocated by the caller),
// refusing a file whose identity, sizes or checksum do not match, with a message naming the
// file, the field, the file's value and the expected one. On failure data.clock and the counters
// are unchanged and the spans are untouched, except after a checksum mismatch or read error in
// the payload (the file's size is checked before any float is read into them).
Status loadCheckpoint(const std::string& dir, const CheckpointIdentity& identity, uint64_t clock, CheckpointData& data);

// Clocks of this server's complete checkpoint files in `dir`, ascending (temporary files and
// other servers' files are ignored; a missing directory is an empty list).
std::vector<uint64_t> listCheckpoints(const std::string& dir, uint32_t server);

}  // namespace poseidon::ps
