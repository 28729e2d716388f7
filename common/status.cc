#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace poseidon {

const char* statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kConnectionError: return "ConnectionError";
    case StatusCode::kProtocolError: return "ProtocolError";
    case StatusCode::kAuthError: return "AuthError";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  return std::string(statusCodeName(code_)) + ": " + message_;
}

Status errnoStatus(StatusCode code, const std::string& what) {
  const int err = errno;
  return Status(code, what + ": " + std::strerror(err));
}

}  // namespace poseidon
