// Consistency: when a worker may read parameters, and when the servers apply updates.
//
// - BSP: a server sums all workers' pushes of clock t for a chunk (in rank order) and applies
//   them once; a pull at clock c waits for version c (every push of clocks < c applied).
// - SSP(s): a server applies each push as it arrives; a worker at clock c reads parameters that
//   include every update of clocks <= c - s - 1 from all workers (version >= c - s), and blocks
//   otherwise, naming the worker it waits for. SSP(0) reads like BSP but applies per push.
// - Async (Downpour): pushes applied as they arrive, pulls never wait; a worker pushes its
//   accumulated gradient every n_push clocks and fetches every n_fetch clocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace poseidon::ps {

struct Consistency {
  enum class Mode : uint8_t { kBsp = 0, kSsp = 1, kAsync = 2 };
  Mode mode = Mode::kBsp;
  uint32_t staleness = 0;  // SSP
  uint32_t n_push = 1;     // async
  uint32_t n_fetch = 1;    // async

  static Consistency bsp() { return {}; }
  static Consistency ssp(uint32_t staleness) { return {Mode::kSsp, staleness, 1, 1}; }
  static Consistency async(uint32_t n_push = 1, uint32_t n_fetch = 1) { return {Mode::kAsync, 0, n_push, n_fetch}; }

  // The version a pull at clock c needs (0 for async: it takes what is there).
  uint64_t minVersion(uint64_t clock) const;
  // "bsp", "ssp:3", "async:push=1,fetch=1": logs and the checkpoint compatibility check.
  std::string canonical() const;
  Status validate() const;
};

// Parses "bsp", "ssp:<s>", "async", "async:push=<n>,fetch=<n>"; errors name the bad part.
Result<Consistency> parseConsistency(std::string_view text);

}  // namespace poseidon::ps
