// The exception the forwarder's system calls throw: errno's error with what was being done.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

namespace poseidon::linkem {

inline std::system_error sysError(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

}  // namespace poseidon::linkem
