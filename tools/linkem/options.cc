#include "tools/linkem/options.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

namespace poseidon::linkem {
namespace {

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// The text each numeric option was given as, so errors can quote it exactly.
struct RawNumbers {
  std::string delay_ms = "0";
  std::string jitter_ms = "0";
  std::string loss = "0";
  std::string rate_mbit = "0";
  std::string seed = "1";
  std::string mtu = "1500";
  std::string queue_limit = "10000";
  std::string duration_s = "0";
  std::string addr_a = "10.77.0.1/24";
  std::string addr_b = "10.77.0.2/24";
};

std::string check_real(std::string_view flag, const std::string& text, double lo, double hi, std::string_view expected,
                       double& out) {
  const auto value = parse_number<double>(text);
  if (!value || !std::isfinite(*value) || *value < lo || *value > hi)
    return fmt::format("{} '{}': expected {}", flag, text, expected);
  out = *value;
  return {};
}

template <typename T>
std::string check_integer(std::string_view flag, const std::string& text, T lo, T hi, std::string_view expected,
                          T& out) {
  const auto value = parse_number<T>(text);
  if (!value || *value < lo || *value > hi) return fmt::format("{} '{}': expected {}", flag, text, expected);
  out = *value;
  return {};
}

std::string check_netns(std::string_view flag, const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == ".." || name.find('/') != std::string::npos)
    return fmt::format("{} '{}': expected a network namespace name (as listed by `ip netns`)", flag, name);
  struct stat st {};
  if (::stat(netns_path(name).c_str(), &st) != 0)
    return fmt::format(
        "{} '{}': no such network namespace ({} is missing; create it with "
        "`ip netns add {}`)",
        flag, name, netns_path(name), name);
  return {};
}

std::string check_dev_name(const std::string& name) {
  const bool chars_ok = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
  if (name.empty() || name.size() > 15 || !chars_ok || name == "." || name == "..")
    return fmt::format(
        "--dev-name '{}': expected an interface name of 1 to 15 characters "
        "from A-Z a-z 0-9 _ - .",
        name);
  return {};
}

std::uint32_t netmask(int length) { return length == 0 ? 0 : ~std::uint32_t{0} << (32 - length); }

std::string check_addresses(const RawNumbers& raw, Options& o) {
  constexpr std::string_view kExpected = "expected an IPv4 address with a prefix length of 1 to 31, like 10.77.0.1/24";
  const auto a = parse_prefix(raw.addr_a);
  if (!a || a->length < 1 || a->length > 31) return fmt::format("--addr-a '{}': {}", raw.addr_a, kExpected);
  const auto b = parse_prefix(raw.addr_b);
  if (!b || b->length < 1 || b->length > 31) return fmt::format("--addr-b '{}': {}", raw.addr_b, kExpected);
  const std::uint32_t mask = netmask(a->length);
  if (b->length != a->length || (a->address & mask) != (b->address & mask))
    return fmt::format("--addr-b '{}': expected an address in the same subnet as --addr-a '{}'", raw.addr_b,
                       raw.addr_a);
  if (a->address == b->address)
    return fmt::format("--addr-b '{}': expected an address different from --addr-a", raw.addr_b);
  if (a->length <= 30) {
    for (const auto& [flag, text, p] :
         {std::tuple{"--addr-a", raw.addr_a, *a}, std::tuple{"--addr-b", raw.addr_b, *b}}) {
      const std::uint32_t host = p.address & ~mask;
      if (host == 0 || host == ~mask)
        return fmt::format(
            "{} '{}': expected a host address, not the network or broadcast "
            "address of the subnet",
            flag, text);
    }
  }
  o.addr_a = *a;
  o.addr_b = *b;
  return {};
}

std::string check_ready_file(const std::string& path) {
  if (path.empty()) return {};
  const std::filesystem::path p(path);
  if (!p.has_filename()) return fmt::format("--ready-file '{}': expected a file path, not a directory", path);
  const std::filesystem::path dir = p.parent_path().empty() ? "." : p.parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return fmt::format(
        "--ready-file '{}': expected a path in an existing directory ('{}' is not "
        "one)",
        path, dir.string());
  return {};
}

// All checks in order; the first failure is reported.
std::string check(const RawNumbers& raw, Options& o) {
  const std::string errors[] = {
      check_addresses(raw, o),
      check_dev_name(o.dev_name),
      check_real("--delay-ms", raw.delay_ms, 0, 60'000, "a one-way delay in milliseconds from 0 to 60000", o.delay_ms),
      check_real("--jitter-ms", raw.jitter_ms, 0, 60'000, "a jitter in milliseconds from 0 to 60000", o.jitter_ms),
      check_real("--loss", raw.loss, 0, 1, "a loss probability from 0 to 1, like 0.2", o.loss),
      check_real("--rate-mbit", raw.rate_mbit, 0, 1e6, "a rate in Mbit/s from 0 (unlimited) to 1000000", o.rate_mbit),
      check_integer<std::uint64_t>("--seed", raw.seed, 0, UINT64_MAX, "an unsigned 64-bit integer", o.seed),
      check_integer<int>("--mtu", raw.mtu, 68, 65535, "an MTU in bytes from 68 to 65535", o.mtu),
      check_integer<std::size_t>("--queue-limit", raw.queue_limit, 1, 1'000'000,
                                 "a number of packets from 1 to 1000000", o.queue_limit),
      check_real("--duration-s", raw.duration_s, 0, 1e8, "seconds from 0 (until SIGINT/SIGTERM) to 100000000",
                 o.duration_s),
      o.ns_a == o.ns_b ? fmt::format("--ns-b '{}': expected a namespace different from --ns-a", o.ns_b) : std::string(),
      check_ready_file(o.ready_file),
      // Last, whether the namespaces exist.
      check_netns("--ns-a", o.ns_a),
      check_netns("--ns-b", o.ns_b),
  };
  for (const std::string& error : errors)
    if (!error.empty()) return error;
  return {};
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::optional<Ipv4Prefix> parse_prefix(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto length = parse_number<int>(text.substr(slash + 1));
  if (!length || *length < 0 || *length > 32) return std::nullopt;
  std::uint32_t address = 0;
  std::string_view rest = text.substr(0, slash);
  for (int i = 0; i < 4; ++i) {
    const std::size_t dot = i < 3 ? rest.find('.') : rest.size();
    if (dot == std::string_view::npos || dot == 0 || dot > 3) return std::nullopt;
    const auto octet = parse_number<unsigned>(rest.substr(0, dot));
    if (!octet || *octet > 255) return std::nullopt;
    address = (address << 8) | *octet;
    rest = i < 3 ? rest.substr(dot + 1) : std::string_view();
  }
  return Ipv4Prefix{address, *length};
}

std::string format_prefix(Ipv4Prefix p) {
  return fmt::format("{}.{}.{}.{}/{}", p.address >> 24, (p.address >> 16) & 0xff, (p.address >> 8) & 0xff,
                     p.address & 0xff, p.length);
}

LinkConfig link_config(const Options& o, bool a_to_b) {
  LinkConfig c;
  c.delay = std::chrono::nanoseconds(std::llround(o.delay_ms * 1e6));
  c.jitter = std::chrono::nanoseconds(std::llround(o.jitter_ms * 1e6));
  c.loss = o.loss;
  c.rate_bytes_per_s = o.rate_mbit * 1e6 / 8.0;
  // Deep enough for one full-size packet, or one millisecond of traffic at the rate.
  c.burst_bytes =
      std::max<std::size_t>(static_cast<std::size_t>(o.mtu), static_cast<std::size_t>(c.rate_bytes_per_s / 1000.0));
  c.queue_limit = o.queue_limit;
  c.seed = splitmix64(o.seed * 2 + (a_to_b ? 0 : 1));
  return c;
}

ParsedOptions parse_options(int argc, const char* const* argv) {
  CLI::App app{
      "poseidon-linkem: joins two network namespaces with a TUN device in each and forwards the\n"
      "packets between them with delay, jitter, loss and a rate limit (a userspace netem)."};
  Options o;
  RawNumbers raw;
  struct Spec {
    const char* flag;
    std::string* text;
    const char* type;
    const char* help;
  };
  const Spec specs[] = {
      {"--ns-a", &o.ns_a, "NAME", "First network namespace (from `ip netns add`)"},
      {"--ns-b", &o.ns_b, "NAME", "Second network namespace"},
      {"--addr-a", &raw.addr_a, "ADDR/LEN", "Address/prefix of the device in --ns-a"},
      {"--addr-b", &raw.addr_b, "ADDR/LEN", "Address/prefix of the device in --ns-b (same subnet)"},
      {"--dev-name", &o.dev_name, "NAME", "Name of the TUN device in both namespaces"},
      {"--delay-ms", &raw.delay_ms, "MS", "One-way delay, each direction (milliseconds)"},
      {"--jitter-ms", &raw.jitter_ms, "MS", "Each packet's delay varies uniformly by +-this (may reorder)"},
      {"--loss", &raw.loss, "P", "Probability that a packet is dropped, 0..1"},
      {"--rate-mbit", &raw.rate_mbit, "MBIT", "Token-bucket rate per direction, 0 = unlimited"},
      {"--seed", &raw.seed, "N", "Seed of the loss and jitter draws"},
      {"--mtu", &raw.mtu, "BYTES", "MTU of both devices"},
      {"--queue-limit", &raw.queue_limit, "PACKETS", "Packets held per direction before arrivals are dropped"},
      {"--duration-s", &raw.duration_s, "SECONDS", "Run this long, 0 = until SIGINT/SIGTERM"},
      {"--ready-file", &o.ready_file, "PATH", "Written once the link is up (removed on exit)"},
  };
  for (const Spec& spec : specs) {
    CLI::Option* option = app.add_option(spec.flag, *spec.text, spec.help)->type_name(spec.type);
    if (!spec.text->empty()) option->capture_default_str();
  }
  app.get_option("--ns-a")->required();
  app.get_option("--ns-b")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return {std::nullopt, app.exit(e)};
  } catch (const CLI::CallForAllHelp& e) {
    return {std::nullopt, app.exit(e)};
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "poseidon-linkem: {}\nRun with --help for the options.\n", e.what());
    return {std::nullopt, 2};
  }
  if (const std::string error = check(raw, o); !error.empty()) {
    fmt::print(stderr, "poseidon-linkem: {}\n", error);
    return {std::nullopt, 2};
  }
  return {o, 0};
}

}  // namespace poseidon::linkem
