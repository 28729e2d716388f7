// The exception linkem's system calls throw (the forwarder's, the tun set-up's): errno's error
// with what was being done.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

namespace poseidon::linkem {

inline std::system_error sys_error(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

}  // namespace poseidon::linkem
