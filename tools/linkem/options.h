#pragma once
// The command line of poseidon-linkem: parsing (CLI11) and checking every value.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tools/linkem/link_queue.h"
#include "tools/linkem/netns_tun.h"

namespace poseidon::linkem {

struct Options {
  std::string ns_a;
  std::string ns_b;
  Ipv4Prefix addr_a{0x0a4d0001, 24};  // 10.77.0.1/24
  Ipv4Prefix addr_b{0x0a4d0002, 24};  // 10.77.0.2/24
  std::string dev_name = "plinkem";
  double delay_ms = 0.0;
  double jitter_ms = 0.0;
  double loss = 0.0;
  double rate_mbit = 0.0;
  std::uint64_t seed = 1;
  int mtu = 1500;
  std::size_t queue_limit = 10000;
  double duration_s = 0.0;
  std::string ready_file;
};

// Either the options to run with, or the code to exit with at once: 0 after --help, 2 after a
// bad command line (the message, naming the option, the value and what was expected, has then
// been printed to stderr).
struct ParsedOptions {
  std::optional<Options> options;
  int exit_code = 0;
};

ParsedOptions parse_options(int argc, const char* const* argv);

// "10.77.0.1/24" -> {0x0a4d0001, 24}; nothing for anything else.
std::optional<Ipv4Prefix> parse_prefix(std::string_view text);
std::string format_prefix(Ipv4Prefix prefix);

// The queue configuration of one direction (a_to_b: from namespace A to B).
LinkConfig link_config(const Options& options, bool a_to_b);

}  // namespace poseidon::linkem
