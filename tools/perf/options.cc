#include "tools/perf/options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <filesystem>
#include <limits>

#include "tools/perf/parameters.h"

namespace poseidon::perf {
namespace {

template <typename T>
std::optional<T> parseNumber(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// The text each valued option was given as, so errors quote it exactly; empty = not given.
struct RawValues {
  std::string test;
  std::string size;
  std::string iterations;
  std::string duration;
  std::string margin;
  std::string streams;
  std::string port;
  std::string transport;
  std::string tx_depth;
  std::string rx_depth;
  std::string cq_mod;
  std::string timeout;
  std::string spin;
  std::string gid_index;
  std::vector<std::string> positionals;
};

template <typename T>
std::string checkInteger(std::string_view flag, const std::string& text, T lo, T hi, std::string_view expected,
                         T& out) {
  if (text.empty()) return {};
  const auto value = parseNumber<T>(text);
  if (!value || *value < lo || *value > hi) return fmt::format("{} '{}': expected {}", flag, text, expected);
  out = *value;
  return {};
}

// Sorts the positionals into test name and host: [TEST] [HOST], in either order of presence.
std::string placePositionals(const RawValues& raw, Options& o) {
  std::vector<std::string> rest;
  for (const std::string& word : raw.positionals) {
    if (!o.test_given && parseTestName(word)) {
      o.test = *parseTestName(word);
      o.test_given = true;
    } else {
      rest.push_back(word);
    }
  }
  if (rest.size() > 1) {
    return fmt::format("'{}' and '{}': expected at most one server host, after an optional test name ({})", rest[0],
                       rest[1], kTestNames);
  }
  if (!rest.empty()) {
    if (rest[0].empty() || rest[0].front() == '-')
      return fmt::format("host '{}': expected a host name or address", rest[0]);
    o.host = rest[0];
  }
  return {};
}

std::string checkTest(const RawValues& raw, Options& o) {
  if (raw.test.empty()) return {};
  const auto test = parseTestName(raw.test);
  if (!test) return fmt::format("--test '{}': expected one of {}", raw.test, kTestNames);
  if (o.test_given && *test != o.test) {
    return fmt::format("--test '{}' contradicts the test name '{}' given before", raw.test, testName(o.test));
  }
  o.test = *test;
  o.test_given = true;
  return {};
}

std::string checkSize(const RawValues& raw, Options& o) {
  if (raw.size.empty()) return {};
  const auto size = parseByteSize(raw.size);
  if (!size || *size < 1 || *size > kMaxMessageBytes) {
    return fmt::format("-s/--size '{}': expected a message size from 1 to {} bytes (K, M, G suffixes allowed)",
                       raw.size, kMaxMessageBytes);
  }
  o.size = *size;
  o.size_given = true;
  return {};
}

std::string checkOutputFile(const std::string& path) {
  if (path.empty()) return {};
  const std::filesystem::path file(path);
  const std::filesystem::path dir = file.parent_path().empty() ? "." : file.parent_path();
  std::error_code ec;
  if (!file.has_filename() || !std::filesystem::is_directory(dir, ec)) {
    return fmt::format("--out_json '{}': expected a file path in an existing directory", path);
  }
  return {};
}

std::string checkCombinations(const Options& o) {
  if (o.all_sizes && o.size_given) return "-a/--all runs every size from 2 to 8388608: give it without -s/--size";
  if (o.duration_s > 0 && o.iterations_given) return "-D/--duration and -n/--iters exclude each other: give one";
  if (o.duration_s > 0 && o.all_sizes) return "-D/--duration runs one size: give it without -a/--all";
  if (o.margin_s >= 0 && o.duration_s == 0) return "-f/--margin goes with -D/--duration";
  // A server learns the transport from its client; a client knows it now.
  if (o.gid_index >= 0 && !o.isServer() && o.transport != "verbs") {
    return fmt::format("-x/--gid-index {} selects an RDMA GID: it goes with -t verbs", o.gid_index);
  }
  return {};
}

// All checks in order; the first failure is reported.
std::string check(const RawValues& raw, Options& o) {
  const int max_int = std::numeric_limits<int>::max();
  std::string errors[] = {
      placePositionals(raw, o),
      checkTest(raw, o),
      checkSize(raw, o),
      checkInteger<uint64_t>("-n/--iters", raw.iterations, kMinIterations, kMaxIterations,
                             fmt::format("a number of iterations from {} to {}", kMinIterations, kMaxIterations),
                             o.iterations),
      checkInteger<int>("-D/--duration", raw.duration, 1, kMaxDurationSeconds,
                        fmt::format("a duration in whole seconds from 1 to {}", kMaxDurationSeconds), o.duration_s),
      checkInteger<int>("-f/--margin", raw.margin, 0, max_int, "a margin in whole seconds, 0 or more", o.margin_s),
      checkInteger<int>("-q/--qp", raw.streams, 1, kMaxStreams,
                        fmt::format("a number of parallel streams from 1 to {}", kMaxStreams), o.streams),
      checkInteger<uint16_t>("-p/--port", raw.port, 1, 65535, "a TCP port from 1 to 65535", o.port),
      checkInteger<int>("--tx-depth", raw.tx_depth, 1, kMaxTxDepth,
                        fmt::format("outstanding operations from 1 to {}", kMaxTxDepth), o.tx_depth),
      checkInteger<int>("-r/--rx-depth", raw.rx_depth, 1, kMaxRxDepth,
                        fmt::format("posted receives from 1 to {}", kMaxRxDepth), o.rx_depth),
      checkInteger<int>("-Q/--cq-mod", raw.cq_mod, 1, kMaxCqMod,
                        fmt::format("a completion interval from 1 to {}", kMaxCqMod), o.cq_mod),
      checkInteger<int>("--timeout", raw.timeout, 1, kMaxTimeoutSeconds,
                        fmt::format("seconds from 1 to {}", kMaxTimeoutSeconds), o.timeout_s),
      checkInteger<int>("--spin-us", raw.spin, 0, kMaxSpinMicros,
                        fmt::format("microseconds from 0 to {}", kMaxSpinMicros), o.spin_us),
      checkInteger<int>("-x/--gid-index", raw.gid_index, 0, kMaxGidIndex,
                        fmt::format("a GID table index from 0 to {} (see `ibv_devinfo -v`)", kMaxGidIndex),
                        o.gid_index),
  };
  for (std::string& error : errors) {
    if (!error.empty()) return error;
  }
  if (!raw.transport.empty()) {
    if (raw.transport != "tcp" && raw.transport != "verbs") {
      return fmt::format("-t/--transport '{}': expected tcp or verbs (perftest's -t, the tx depth, is --tx-depth here)",
                         raw.transport);
    }
    o.transport = raw.transport;
    o.transport_given = true;
  }
  o.iterations_given = !raw.iterations.empty();
  o.streams_given = !raw.streams.empty();
  o.tx_depth_given = !raw.tx_depth.empty();
  if (std::string error = checkCombinations(o); !error.empty()) return error;
  if (std::string error = checkOutputFile(o.out_json); !error.empty()) return error;
  if (o.duration_s > 0 && o.margin_s >= 0 && o.duration_s <= 2 * o.margin_s) {
    return fmt::format("-f/--margin '{}': expected less than half of -D/--duration {} (perftest: DURATION > 2*MARGIN)",
                       raw.margin, o.duration_s);
  }
  // Defaults that depend on the test.
  if (!o.size_given) o.size = defaultSize(o.test);
  if (!o.iterations_given) o.iterations = defaultIterations(o.test);
  if (!o.tx_depth_given) o.tx_depth = defaultTxDepth(o.test);
  if (o.duration_s > 0 && o.margin_s < 0) o.margin_s = o.duration_s / 4;
  return {};
}

constexpr const char* kDescription =
    "poseidon-perf: perftest-style transport benchmark (ib_write_bw, ib_send_bw, ib_write_lat, ib_send_lat)\n"
    "over Poseidon's transport.\n"
    "  poseidon-perf [TEST] [options]         start a server and wait for one client\n"
    "  poseidon-perf [TEST] [options] HOST    connect to the server at HOST and run TEST\n"
    "TEST is one of send_bw, write_bw (default), send_lat, write_lat. The server follows the client's\n"
    "test and parameters, so options need only be given to the client (the secret to both).";

}  // namespace

int64_t Options::spinNanos(TestKind run_test) const {
  if (spin_us >= 0) return int64_t{spin_us} * 1000;
  return isBandwidth(run_test) ? -1 : int64_t{kLatencySpinMicros} * 1000;
}

std::optional<uint64_t> parseByteSize(std::string_view text) {
  uint64_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k': multiplier = uint64_t{1} << 10; break;
      case 'M':
      case 'm': multiplier = uint64_t{1} << 20; break;
      case 'G':
      case 'g': multiplier = uint64_t{1} << 30; break;
      default: break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  const auto value = parseNumber<uint64_t>(text);
  if (!value || *value > std::numeric_limits<uint64_t>::max() / multiplier) return std::nullopt;
  return *value * multiplier;
}

ParsedOptions parseOptions(int argc, const char* const* argv, const char* environment_secret) {
  CLI::App app{kDescription, "poseidon-perf"};
  app.get_formatter()->column_width(30);
  Options o;
  RawValues raw;
  app.add_option("test_and_host", raw.positionals, "[TEST] [HOST]: the test to run; the server to connect to")
      ->expected(0, 2);
  struct Spec {
    const char* names;
    std::string* text;
    const char* type;
    const char* help;
  };
  const Spec specs[] = {
      {"--test", &raw.test, "NAME", "Test to run: send_bw, write_bw, send_lat, write_lat (or give it first)"},
      {"-s,--size", &raw.size, "BYTES", "Size of message to exchange (default 65536 for bw, 2 for lat; K/M/G)"},
      {"-n,--iters", &raw.iterations, "N", "Number of exchanges (at least 5, default 5000 write_bw, else 1000)"},
      {"-D,--duration", &raw.duration, "SECONDS", "Run test for a customized period of seconds (not with -n)"},
      {"-f,--margin", &raw.margin, "SECONDS", "With -D: measure within margins (default duration/4)"},
      {"-q,--qp", &raw.streams, "N", "Number of parallel streams (perftest's QPs; tcp connections), default 1"},
      {"-p,--port", &raw.port, "PORT", "Listen on/connect to port PORT for the rendezvous (default 18515)"},
      {"-t,--transport", &raw.transport, "NAME", "Transport backend: tcp (default) or verbs"},
      {"--tx-depth", &raw.tx_depth, "N", "Outstanding operations (default 128 for bw, 1 for lat)"},
      {"-r,--rx-depth", &raw.rx_depth, "N", "Receives the server posts ahead (default 512)"},
      {"-Q,--cq-mod", &raw.cq_mod, "N", "The server confirms delivery every N messages at most (default 100)"},
      {"--out_json,--out_json_file", &o.out_json, "FILE", "Also write the results as JSON to FILE"},
      {"--secret", &o.secret, "SECRET", "The shared secret both sides prove (default: $POSEIDON_SECRET)"},
      {"--bind", &o.bind, "ADDRESS",
       "Address the data connections use (server default: the address the client reached it at; "
       "client default: its address on the route to HOST)"},
      {"--timeout", &raw.timeout, "SECONDS", "Give up when the peer makes no progress for this long (default 60)"},
      {"-x,--gid-index", &raw.gid_index, "INDEX",
       "verbs: this side's queue pairs use GID INDEX of the port (default: the RoCE v2 GID of the address)"},
      {"--spin-us", &raw.spin, "MICROS",
       "How long each wait spins before it sleeps (default 1000 for latency tests, as perftest polls; 20 for bw)"},
  };
  for (const Spec& spec : specs) app.add_option(spec.names, *spec.text, spec.help)->type_name(spec.type);
  app.add_flag("-a,--all", o.all_sizes, "Run sizes from 2 till 2^23");
  app.add_flag("--report_gbits,--report-gbits", o.report_gbits,
               "Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)");
  app.add_flag("--busy-poll", o.busy_poll, "The progress engine spins instead of sleeping (costs a core)");
  app.add_option("--progress", o.progress,
                 "Who drives the transport while a test waits: waiters (default: the waiting thread reads its "
                 "sockets or polls its completion queue itself) or engine (the progress engine's thread hands each "
                 "completion over); the client's choice holds for both sides")
      ->type_name("MODE")
      ->check(CLI::IsMember({"waiters", "engine"}));
  app.add_option("--payload-crc", o.payload_crc,
                 "CRC32C over every payload (tcp; default on): off measures what the check costs; the client's "
                 "choice holds for both sides")
      ->type_name("on|off")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--encrypt", o.encrypt,
                 "Seal every frame with AES-256-GCM (tcp; default off): on measures what encryption costs; the "
                 "client's choice holds for both sides")
      ->type_name("on|off")
      ->check(CLI::IsMember({"on", "off"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::string help = app.help();
    while (!help.empty() && help.back() == '\n') help.pop_back();
    return {std::nullopt, 0, help};
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, 2, fmt::format("poseidon-perf: {}\nRun with --help for the options.", e.what())};
  }
  if (const std::string error = check(raw, o); !error.empty()) {
    return {std::nullopt, 2, fmt::format("poseidon-perf: {}\nRun with --help for the options.", error)};
  }
  if (o.secret.empty() && environment_secret != nullptr) o.secret = environment_secret;
  return {std::move(o), 0, {}};
}

}  // namespace poseidon::perf
