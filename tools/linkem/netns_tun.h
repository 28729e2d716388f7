#pragma once
// Network namespaces by name (/var/run/netns/NAME, as `ip netns add` makes them) and a TUN
// device created and configured inside one.

#include <cstdint>
#include <string>

namespace poseidon::linkem {

// Where `ip netns` keeps the namespace called `name`.
std::string netns_path(const std::string& name);

// Switches the calling thread into a named network namespace and back on destruction. Sockets
// and TUN devices opened meanwhile stay in that namespace after the switch back.
// Throws std::system_error naming the namespace when it cannot be entered.
class ScopedNetns {
 public:
  explicit ScopedNetns(const std::string& name);
  ~ScopedNetns();
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;

 private:
  int original_fd_ = -1;
};

struct Ipv4Prefix {
  std::uint32_t address = 0;  // host byte order
  int length = 0;             // 0..32
};

// A TUN device (IFF_TUN | IFF_NO_PI) in namespace `ns`, with `addr` assigned, the given MTU, up.
// The device is not persistent: closing the fd (destructor, or process exit) removes it.
// Throws std::system_error / std::runtime_error naming the namespace and device.
class NetnsTun {
 public:
  NetnsTun(const std::string& ns, const std::string& dev, Ipv4Prefix addr, int mtu);
  ~NetnsTun();
  NetnsTun(const NetnsTun&) = delete;
  NetnsTun& operator=(const NetnsTun&) = delete;

  int fd() const { return fd_; }
  const std::string& ns() const { return ns_; }
  const std::string& dev() const { return dev_; }

 private:
  std::string ns_;
  std::string dev_;
  int fd_ = -1;
};

}  // namespace poseidon::linkem
