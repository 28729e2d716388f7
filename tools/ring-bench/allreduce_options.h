// poseidon-allreduce-bench's command line: the message sizes (a geometric series from --min-bytes
// to --max-bytes), how many timed calls each size gets, the ring's own options, and the job's
// transport and launch (as poseidon-server's: ranks from the launch environment, overridden by
// --rank/--size/--root). Every rank of a job is given the same options, except --payload-crc,
// which holds for what each rank sends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ring/ring_allreduce.h"
#include "tools/cli/cli_fwd.h"
#include "transport/device.h"

namespace poseidon::tools {

struct AllreduceBenchCommandLine {
  uint64_t min_bytes = uint64_t{4} << 10;
  uint64_t max_bytes = uint64_t{64} << 20;
  uint64_t factor = 4;  // sizes: min, min * factor, ... up to max
  // Timed calls per size: byte_budget / size, clamped to [min_iters, max_iters], so every rank
  // computes the same count without asking the others, and large sizes on slow links stay short.
  uint64_t byte_budget = uint64_t{1} << 30;
  uint64_t min_iters = 3;
  uint64_t max_iters = 50;
  uint64_t warmup = 1;  // untimed calls per size, first
  uint64_t piece_bytes = ring::RingOptions{}.piece_bytes;
  uint64_t staging_slots = ring::RingOptions{}.staging_slots;
  std::string backend = "tcp";
  std::string payload_crc = "on";  // tcp: CRC32C over every payload ("on", the default, or "off")
  std::string address;             // empty: this host's address on the route to rank 0's store
  std::string secret;              // --secret, else POSEIDON_SECRET
  int timeout_s = 120;             // any one call, and the set-up
  int rank = -1;                   // >= 0: overrides the launch environment (with --size)
  int size = -1;
  std::string root;  // host:port of rank 0's store; empty: POSEIDON_ROOT

  // The sizes in bytes, each a multiple of 4 (floats); filled by checkAllreduceBenchOptions().
  std::vector<uint64_t> sizes;

  // Timed calls for a message of `bytes`.
  uint64_t itersFor(uint64_t bytes) const;
};

void addAllreduceBenchOptions(CLI::App& app, AllreduceBenchCommandLine& c);

// After CLI11's parsing: every value CLI11 cannot check, and the sizes. "" when all is well, else
// an error naming the option, the value and what was expected. `environment_secret` is
// POSEIDON_SECRET (may be null).
std::string checkAllreduceBenchOptions(AllreduceBenchCommandLine& c, const char* environment_secret);

// The transport device this rank opens: --backend, --payload-crc and the secret, listening on
// `address`.
transport::DeviceOptions deviceOptionsFor(const AllreduceBenchCommandLine& c, const std::string& address);

}  // namespace poseidon::tools
