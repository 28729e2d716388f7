#include "tools/ring-bench/allreduce_options.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>

namespace poseidon::tools {

namespace {

// A 1 GiB message is more than this machine's ranks should hold four times over.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxPieceBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxStagingSlots = 1024;

}  // namespace

uint64_t AllreduceBenchCommandLine::itersFor(uint64_t bytes) const {
  return std::clamp<uint64_t>(byte_budget / std::max<uint64_t>(bytes, 1), min_iters, max_iters);
}

void addAllreduceBenchOptions(CLI::App& app, AllreduceBenchCommandLine& c) {
  app.add_option("--min-bytes", c.min_bytes, "Smallest message, bytes, a multiple of 4 (default 4096)")
      ->type_name("BYTES");
  app.add_option("--max-bytes", c.max_bytes, "Largest message, bytes (default 67108864 = 64 MiB)")->type_name("BYTES");
  app.add_option("--factor", c.factor, "Each size is the last times this (default 4)")->type_name("N");
  app.add_option("--byte-budget", c.byte_budget,
                 "Timed calls per size = this / size, within [--min-iters, --max-iters] (default 1 GiB)")
      ->type_name("BYTES");
  app.add_option("--min-iters", c.min_iters, "Fewest timed calls per size (default 3)")->type_name("N");
  app.add_option("--max-iters", c.max_iters, "Most timed calls per size (default 50)")->type_name("N");
  app.add_option("--warmup", c.warmup, "Untimed calls per size before the timed ones (default 1)")->type_name("N");
  app.add_option("--piece-bytes", c.piece_bytes, "The ring's unit of pipelining, bytes (default 1 MiB)")
      ->type_name("BYTES");
  app.add_option("--staging-slots", c.staging_slots, "The ring's receive staging, in pieces (default 8)")
      ->type_name("N");
  app.add_option("--backend", c.backend, "Transport: tcp (default) or verbs")->type_name("NAME");
  app.add_option("--payload-crc", c.payload_crc,
                 "CRC32C over every payload (tcp; default on): off measures what the check costs, and matches "
                 "Gloo, which leaves payloads to TCP's own checksum; each rank's choice holds for what it sends")
      ->type_name("on|off");
  app.add_option("--address", c.address,
                 "Address this rank listens on (default: this host's address on the route to rank 0)")
      ->type_name("HOST");
  app.add_option("--secret", c.secret, "The job's shared secret (default $POSEIDON_SECRET)")->type_name("SECRET");
  app.add_option("--timeout", c.timeout_s, "Seconds the set-up, or any one call, may take (default 120)")
      ->type_name("SECONDS");
  app.add_option("--rank", c.rank, "This rank (with --size and --root: instead of the launch environment)")
      ->type_name("N");
  app.add_option("--size", c.size, "Ranks in the job")->type_name("N");
  app.add_option("--root", c.root, "host:port of rank 0's store")->type_name("HOST:PORT");
}

std::string checkAllreduceBenchOptions(AllreduceBenchCommandLine& c, const char* environment_secret) {
  if (c.min_bytes < 4 || c.min_bytes % 4 != 0 || c.min_bytes > kMaxMessageBytes) {
    return fmt::format("--min-bytes {}: expected a multiple of 4 from 4 to {}", c.min_bytes, kMaxMessageBytes);
  }
  if (c.max_bytes < c.min_bytes || c.max_bytes > kMaxMessageBytes) {
    return fmt::format("--max-bytes {}: expected from --min-bytes ({}) to {}", c.max_bytes, c.min_bytes,
                       kMaxMessageBytes);
  }
  if (c.factor < 2) return fmt::format("--factor {}: expected an integer >= 2", c.factor);
  if (c.min_iters < 1 || c.max_iters < c.min_iters) {
    return fmt::format("--min-iters {} / --max-iters {}: expected 1 <= min <= max", c.min_iters, c.max_iters);
  }
  if (c.byte_budget < 1) return fmt::format("--byte-budget {}: expected >= 1", c.byte_budget);
  if (c.piece_bytes < 4 || c.piece_bytes % 4 != 0 || c.piece_bytes > kMaxPieceBytes) {
    return fmt::format("--piece-bytes {}: expected a multiple of 4 from 4 to {}", c.piece_bytes, kMaxPieceBytes);
  }
  if (c.staging_slots < 1 || c.staging_slots > kMaxStagingSlots) {
    return fmt::format("--staging-slots {}: expected 1 to {}", c.staging_slots, kMaxStagingSlots);
  }
  if (c.backend != "tcp" && c.backend != "verbs")
    return fmt::format("--backend '{}': expected tcp or verbs", c.backend);
  if (c.payload_crc != "on" && c.payload_crc != "off")
    return fmt::format("--payload-crc '{}': expected on or off", c.payload_crc);
  if (c.timeout_s < 1) return fmt::format("--timeout {}: expected >= 1 second", c.timeout_s);
  if ((c.rank >= 0) != (c.size >= 0)) return "--rank and --size: expected both or neither";
  if (c.size >= 0 && (c.size < 2 || c.rank >= c.size)) {
    return fmt::format("--rank {} --size {}: expected size >= 2 and rank below it", c.rank, c.size);
  }
  if (c.secret.empty() && environment_secret != nullptr) c.secret = environment_secret;
  c.sizes.clear();
  // Each size a multiple of 4: the series is of floats.
  for (uint64_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor) {
    c.sizes.push_back(bytes / 4 * 4);
    if (bytes > c.max_bytes / c.factor) break;  // the next would pass max (or overflow)
  }
  return {};
}

transport::DeviceOptions deviceOptionsFor(const AllreduceBenchCommandLine& c, const std::string& address) {
  transport::DeviceOptions options;
  options.backend = c.backend;
  options.address = address;
  options.secret = c.secret;
  options.payload_crc = c.payload_crc == "on";
  return options;
}

}  // namespace poseidon::tools
