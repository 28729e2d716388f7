// poseidon-linkem: a userspace link emulator between two network namespaces (see README.md).

#include <fmt/format.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "tools/linkem/forwarder.h"
#include "tools/linkem/netns_tun.h"
#include "tools/linkem/options.h"

namespace {

using poseidon::linkem::Clock;

// A signalfd for SIGINT and SIGTERM, blocked first so they wait for the forwarding loop.
int stop_signal_fd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) < 0) throw std::system_error(errno, std::generic_category(), "sigprocmask");
  const int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
  return fd;
}

// Writes the ready file by rename, so a watcher never sees it half written.
void write_ready_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) throw std::system_error(errno, std::generic_category(), "creating ready file " + tmp);
  const bool written = std::fputs(content.c_str(), f) >= 0;
  if (std::fclose(f) != 0 || !written)
    throw std::system_error(errno, std::generic_category(), "writing ready file " + tmp);
  std::filesystem::rename(tmp, path);
}

void print_direction(const char* name, const poseidon::linkem::LinkStats& s, std::uint64_t write_errors) {
  fmt::print(stderr,
             "poseidon-linkem: {}: {} packets in, {} forwarded ({} bytes), {} lost, {} dropped "
             "at the queue limit, {} refused by the receiver, {} still held\n",
             name, s.offered, s.released, s.released_bytes, s.lost, s.queue_full, write_errors,
             s.offered - s.released - s.lost - s.queue_full);
}

int run(const poseidon::linkem::Options& o) {
  using namespace poseidon::linkem;
  const int signal_fd = stop_signal_fd();
  NetnsTun a(o.ns_a, o.dev_name, o.addr_a, o.mtu);
  NetnsTun b(o.ns_b, o.dev_name, o.addr_b, o.mtu);
  Forwarder forwarder(a.fd(), b.fd(), link_config(o, true), link_config(o, false),
                      static_cast<std::size_t>(o.mtu) + 64);
  std::optional<Clock::time_point> until;
  if (o.duration_s > 0)
    until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));

  const std::string rate = o.rate_mbit == 0 ? std::string("unlimited") : fmt::format("{} Mbit/s", o.rate_mbit);
  const std::string summary = fmt::format("{} {} {} <-> {} {} {}: delay {} ms, jitter {} ms, loss {}, rate {}, seed {}",
                                          o.ns_a, o.dev_name, format_prefix(o.addr_a), o.ns_b, o.dev_name,
                                          format_prefix(o.addr_b), o.delay_ms, o.jitter_ms, o.loss, rate, o.seed);
  struct ReadyFile {  // removed again however the run ends
    std::string path;
    ~ReadyFile() {
      if (!path.empty()) std::remove(path.c_str());
    }
  } ready;
  if (!o.ready_file.empty()) {
    write_ready_file(o.ready_file, fmt::format("{}\n{}\n", getpid(), summary));
    ready.path = o.ready_file;
  }
  fmt::print(stderr, "poseidon-linkem: up: {}\n", summary);

  forwarder.run(signal_fd, until);

  print_direction("a->b", forwarder.a_to_b().stats(), forwarder.stats().write_errors_a_to_b);
  print_direction("b->a", forwarder.b_to_a().stats(), forwarder.stats().write_errors_b_to_a);
  ::close(signal_fd);
  return 0;  // the devices go when `a` and `b` close their fds
}

}  // namespace

int main(int argc, char** argv) {
  const poseidon::linkem::ParsedOptions parsed = poseidon::linkem::parse_options(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  try {
    return run(*parsed.options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "poseidon-linkem: {}\n", e.what());
    return 1;
  }
}
