#include "ps/consistency.h"

#include <fmt/format.h>
#include <charconv>
#include <vector>

#include "common/text.h"
#include "ps/imm_code.h"

namespace poseidon::ps {

uint64_t Consistency::minVersion(uint64_t clock) const {
  switch (mode) {
    case Mode::kBsp: return clock;
    case Mode::kSsp: return clock > staleness ? clock - staleness : 0;
    case Mode::kAsync: return 0;
  }
  return clock;
}

std::string Consistency::canonical() const {
  switch (mode) {
    case Mode::kBsp: return "bsp";
    case Mode::kSsp: return fmt::format("ssp:{}", staleness);
    case Mode::kAsync: return fmt::format("async:push={},fetch={}", n_push, n_fetch);
  }
  return "unknown";
}

Status Consistency::validate() const {
  // A pull's version travels as 15 bits widened against the worker's clock, which is exact only
  // while the bound stays inside that window.
  if (mode == Mode::kSsp && staleness >= kImmValueWindow / 2) {
    return makeStatus(StatusCode::kInvalidArgument, "staleness {} is not below {}", staleness, kImmValueWindow / 2);
  }
  if (mode == Mode::kAsync && (n_push == 0 || n_fetch == 0)) {
    return makeStatus(StatusCode::kInvalidArgument, "async n_push {} and n_fetch {} must both be >= 1", n_push,
                      n_fetch);
  }
  return Status::ok();
}

namespace {

Result<uint32_t> parseCount(std::string_view what, std::string_view text) {
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "consistency {} '{}' is not a non-negative integer", what, text);
  }
  return value;
}

}  // namespace

Result<Consistency> parseConsistency(std::string_view text) {
  Consistency result;
  const size_t colon = text.find(':');
  const std::string_view mode = text.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (mode == "bsp" && colon == std::string_view::npos) return result;
  if (mode == "ssp") {
    auto staleness = parseCount("staleness", rest);
    if (!staleness) return staleness.status();
    result = Consistency::ssp(*staleness);
  } else if (mode == "async") {
    result = Consistency::async();
    // Comma-separated: "push=2,fetch=3". An empty `rest` holds no option; an empty item (a
    // trailing comma) is an error.
    for (std::string_view item : splitListOrNone(rest)) {
      const size_t equals = item.find('=');
      const std::string_view key = item.substr(0, equals);
      if (equals == std::string_view::npos || (key != "push" && key != "fetch")) {
        return makeStatus(StatusCode::kInvalidArgument, "async option '{}' is not push=<n> or fetch=<n>", item);
      }
      auto count = parseCount(key, item.substr(equals + 1));
      if (!count) return count.status();
      (key == "push" ? result.n_push : result.n_fetch) = *count;
    }
  } else {
    return makeStatus(StatusCode::kInvalidArgument,
                      "consistency '{}' is not bsp, ssp:<staleness> or async[:push=<n>,fetch=<n>]", text);
  }
  POSEIDON_RETURN_IF_ERROR(result.validate());
  return result;
}

}  // namespace poseidon::ps
