#include "tools/linkem/netns_tun.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "tools/linkem/sys_error.h"

namespace poseidon::linkem {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

ifreq make_ifreq(const std::string& dev) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, dev.data(), std::min(dev.size(), sizeof ifr.ifr_name - 1));
  return ifr;
}

void set_ipv4(ifreq& ifr, std::uint32_t host_order) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(host_order);
  std::memcpy(&ifr.ifr_addr, &sin, sizeof sin);
}

// Assigns the address, netmask and MTU and brings the device up, through an AF_INET socket
// opened in the device's namespace (the caller is inside it).
void configure(const std::string& where, const std::string& dev, Ipv4Prefix addr, int mtu) {
  Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (sock.get() < 0) throw sys_error(fmt::format("{}: socket for configuring {}", where, dev));
  ifreq ifr = make_ifreq(dev);
  set_ipv4(ifr, addr.address);
  if (::ioctl(sock.get(), SIOCSIFADDR, &ifr) < 0)
    throw sys_error(fmt::format("{}: assigning an address to {}", where, dev));
  const std::uint32_t mask = addr.length == 0 ? 0 : ~std::uint32_t{0} << (32 - addr.length);
  ifr = make_ifreq(dev);
  set_ipv4(ifr, mask);
  if (::ioctl(sock.get(), SIOCSIFNETMASK, &ifr) < 0)
    throw sys_error(fmt::format("{}: setting the netmask /{} of {}", where, addr.length, dev));
  ifr = make_ifreq(dev);
  ifr.ifr_mtu = mtu;
  if (::ioctl(sock.get(), SIOCSIFMTU, &ifr) < 0)
    throw sys_error(fmt::format("{}: setting MTU {} on {}", where, mtu, dev));
  ifr = make_ifreq(dev);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &ifr) < 0)
    throw sys_error(fmt::format("{}: reading the flags of {}", where, dev));
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &ifr) < 0) throw sys_error(fmt::format("{}: bringing {} up", where, dev));
}

}  // namespace

std::string netns_path(const std::string& name) { return "/var/run/netns/" + name; }

ScopedNetns::ScopedNetns(const std::string& name) {
  Fd original(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (original.get() < 0) throw sys_error("opening /proc/thread-self/ns/net");
  const std::string path = netns_path(name);
  Fd target(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (target.get() < 0) throw sys_error(fmt::format("network namespace '{}': opening {}", name, path));
  if (::setns(target.get(), CLONE_NEWNET) < 0) throw sys_error(fmt::format("network namespace '{}': setns", name));
  original_fd_ = original.release();
}

ScopedNetns::~ScopedNetns() {
  // Going back into the namespace we came from cannot fail for a process that left it.
  [[maybe_unused]] const int rc = ::setns(original_fd_, CLONE_NEWNET);
  ::close(original_fd_);
}

NetnsTun::NetnsTun(const std::string& ns, const std::string& dev, Ipv4Prefix addr, int mtu) : ns_(ns), dev_(dev) {
  const std::string where = fmt::format("network namespace '{}'", ns);
  if (dev.empty() || dev.size() >= IFNAMSIZ)
    throw std::invalid_argument(fmt::format("device name '{}': expected 1 to {} characters", dev, IFNAMSIZ - 1));
  ScopedNetns inside(ns);
  if (::if_nametoindex(dev.c_str()) != 0)
    throw std::runtime_error(fmt::format(
        "{}: a device named '{}' already exists (another poseidon-linkem, or pick --dev-name)", where, dev));
  Fd tun(::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (tun.get() < 0) throw sys_error(fmt::format("{}: opening /dev/net/tun", where));
  ifreq ifr = make_ifreq(dev);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (::ioctl(tun.get(), TUNSETIFF, &ifr) < 0) throw sys_error(fmt::format("{}: creating TUN device '{}'", where, dev));
  configure(where, dev, addr, mtu);
  fd_ = tun.release();
}

NetnsTun::~NetnsTun() {
  if (fd_ >= 0) ::close(fd_);  // the last close of a non-persistent TUN device deletes it
}

}  // namespace poseidon::linkem
