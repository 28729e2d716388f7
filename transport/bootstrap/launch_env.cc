#include "transport/bootstrap/launch_env.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace poseidon::transport::bootstrap {

namespace {

struct Launcher {
  const char* source;
  const char* rank_var;
  const char* size_var;
  const char* local_rank_var;  // optional in every launcher
};

// In order of precedence: explicit variables override what a launcher set around them (e.g.
// mpirun inside a Slurm allocation sees both OMPI_* and SLURM_*, and OpenMPI is the one to use).
constexpr Launcher kLaunchers[] = {
    {"poseidon", "POSEIDON_RANK", "POSEIDON_SIZE", "POSEIDON_LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

constexpr const char* kRootVar = "POSEIDON_ROOT";
constexpr const char* kStoreDirVar = "POSEIDON_STORE_DIR";
constexpr const char* kRootForm = "host:port (IPv4, hostname or [IPv6]:port)";

// NAME=value as the user would have typed it; quoted when blanks would otherwise hide.
std::string assignment(const std::string& name, const std::string& value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isgraph(static_cast<unsigned char>(c)) != 0;
  });
  return plain ? fmt::format("{}={}", name, value) : fmt::format("{}='{}'", name, value);
}

// The whole string as a decimal integer in [lo, hi], or nullopt.
std::optional<int64_t> parseInteger(const std::string& text, int64_t lo, int64_t hi) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

bool isHostnameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

// Splits "host:port" / "[v6]:port"; on failure the reason, on success empty.
std::string splitRoot(const std::string& value, std::string& host, std::string& port_text) {
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string::npos) return "'[' without a closing ']'";
    host = value.substr(1, close - 1);
    if (close + 1 >= value.size() || value[close + 1] != ':') return "no ':port' after ']'";
    port_text = value.substr(close + 2);
    in6_addr addr{};
    if (::inet_pton(AF_INET6, host.c_str(), &addr) != 1) return fmt::format("'{}' is not an IPv6 address", host);
    return {};
  }
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos) return "no ':port'";
  host = value.substr(0, colon);
  port_text = value.substr(colon + 1);
  if (host.find(':') != std::string::npos) return "an IPv6 address needs brackets, as in [fe80::1]:29500";
  if (host.empty()) return "the host is empty";
  if (!std::all_of(host.begin(), host.end(), isHostnameChar)) {
    return fmt::format("'{}' is not an IPv4 address or hostname", host);
  }
  return {};
}

Status parseRoot(const std::string& value, LaunchInfo& info) {
  std::string host;
  std::string port_text;
  std::string reason = splitRoot(value, host, port_text);
  std::optional<int64_t> port;
  if (reason.empty()) {
    port = parseInteger(port_text, 1, std::numeric_limits<uint16_t>::max());
    if (!port) reason = fmt::format("port '{}' is not an integer in [1, 65535]", port_text);
  }
  if (!reason.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "{} is not {}: {}", assignment(kRootVar, value), kRootForm, reason);
  }
  info.root_host = std::move(host);
  info.root_port = static_cast<uint16_t>(*port);
  return Status::ok();
}

Status readLauncher(const EnvLookup& getenv_fn, const Launcher& launcher, const std::string& rank_text,
                    const std::string& size_text, LaunchInfo& info) {
  const std::optional<int64_t> size = parseInteger(size_text, 1, std::numeric_limits<int>::max());
  if (!size) {
    return makeStatus(StatusCode::kInvalidArgument, "{} is not an integer in [1, {}]",
                      assignment(launcher.size_var, size_text), std::numeric_limits<int>::max());
  }
  const std::optional<int64_t> rank = parseInteger(rank_text, 0, *size - 1);
  if (!rank) {
    return makeStatus(StatusCode::kInvalidArgument, "{} is not an integer in [0, {}) ({}={})",
                      assignment(launcher.rank_var, rank_text), launcher.size_var, launcher.size_var, *size);
  }
  info.size = static_cast<int>(*size);
  info.rank = static_cast<int>(*rank);
  info.local_rank = 0;
  if (const std::optional<std::string> local = getenv_fn(launcher.local_rank_var)) {
    const std::optional<int64_t> local_rank = parseInteger(*local, 0, *size - 1);
    if (!local_rank) {
      return makeStatus(StatusCode::kInvalidArgument, "{} is not an integer in [0, {}) ({}={})",
                        assignment(launcher.local_rank_var, *local), launcher.size_var, launcher.size_var, *size);
    }
    info.local_rank = static_cast<int>(*local_rank);
  }
  info.source = launcher.source;
  return Status::ok();
}

}  // namespace

Result<LaunchInfo> detectLaunch(const EnvLookup& getenv_fn) {
  LaunchInfo info;
  const Launcher* found = nullptr;
  for (const Launcher& launcher : kLaunchers) {
    const std::optional<std::string> rank = getenv_fn(launcher.rank_var);
    const std::optional<std::string> size = getenv_fn(launcher.size_var);
    if (!rank && !size) continue;
    // Half a set is a mistake, not a reason to fall through to a launcher further down.
    if (!rank || !size) {
      const char* present = rank ? launcher.rank_var : launcher.size_var;
      const char* missing = rank ? launcher.size_var : launcher.rank_var;
      return makeStatus(StatusCode::kInvalidArgument, "{} is set but {} is not; expected both ({} launch)",
                        assignment(present, rank ? *rank : *size), missing, launcher.source);
    }
    POSEIDON_RETURN_IF_ERROR(readLauncher(getenv_fn, launcher, *rank, *size, info));
    found = &launcher;
    break;
  }
  if (found == nullptr) {
    return makeStatus(StatusCode::kUnavailable,
                      "no launch environment found: looked for {}/{} (plain variables), {}/{} (OpenMPI "
                      "mpirun) and {}/{} (Slurm srun)",
                      kLaunchers[0].rank_var, kLaunchers[0].size_var, kLaunchers[1].rank_var, kLaunchers[1].size_var,
                      kLaunchers[2].rank_var, kLaunchers[2].size_var);
  }

  if (const std::optional<std::string> dir = getenv_fn(kStoreDirVar)) {
    if (dir->empty()) {
      return makeStatus(StatusCode::kInvalidArgument, "{} is set but empty; expected a directory every rank shares",
                        kStoreDirVar);
    }
    info.file_store_dir = *dir;
  }

  if (const std::optional<std::string> root = getenv_fn(kRootVar)) {
    POSEIDON_RETURN_IF_ERROR(parseRoot(*root, info));
  } else if (info.size > 1 && !info.file_store_dir) {
    // Ranks on other hosts cannot guess where rank 0 listens.
    return makeStatus(StatusCode::kInvalidArgument,
                      "{} is not set; expected {} of rank 0's store since {}={} (or set {} to rendezvous "
                      "through a shared directory)",
                      kRootVar, kRootForm, found->size_var, info.size, kStoreDirVar);
  }
  return info;
}

Result<LaunchInfo> detectLaunch() {
  return detectLaunch([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace poseidon::transport::bootstrap
