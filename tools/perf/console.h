// What both sides of poseidon-perf print: a failure to stderr, report lines to stdout at once
// (the other side's tools and a user's pipe see each line as it is made).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "common/status.h"

namespace poseidon::perf {

// Prints the failure and returns the exit status for it.
inline int reportFailure(const Status& status) {
  fmt::print(stderr, "poseidon-perf: {}\n", status.toString());
  return 1;
}

inline void printNow(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace poseidon::perf
