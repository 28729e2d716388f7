#include "transport/bootstrap/store.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace poseidon::transport::bootstrap {

namespace {

// Enough to recognise a key in a log line without flooding it with a 4 KiB one.
constexpr size_t kDescribedKeyBytes = 128;

void appendEscaped(std::string& out, const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
}

}  // namespace

Status barrier(Store& store, const std::string& name, int size, Deadline deadline) {
  const std::string what = fmt::format("barrier {} of size {}", describeKey(name), size);
  if (size < 1) return makeStatus(StatusCode::kInvalidArgument, "{}: size must be >= 1", what);
  const std::string count_key = name + "/count";
  const std::string done_key = name + "/done";

  Result<int64_t> arrived = store.add(count_key, 1);
  if (!arrived) return arrived.status().withContext(what);
  if (*arrived > size) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}: counted {} arrivals, expected at most {} (name reused, or ranks "
                      "disagree on the size)",
                      what, *arrived, size);
  }
  if (*arrived == size) return store.set(done_key, {'1'}).withContext(what);

  Result<std::vector<uint8_t>> done = store.get(done_key, deadline);
  if (done) return Status::ok();
  if (done.status().code() == StatusCode::kTimeout) {
    // Say how far the barrier got: that tells which ranks never came.
    Result<int64_t> now = store.add(count_key, 0);
    if (now) {
      return makeStatus(StatusCode::kTimeout, "{}: only {} of {} ranks arrived before the deadline ({})", what, *now,
                        size, done.status().message());
    }
  }
  return done.status().withContext(what);
}

Status setString(Store& store, const std::string& key, const std::string& value) {
  return store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

Result<std::string> getString(Store& store, const std::string& key, Deadline deadline) {
  Result<std::vector<uint8_t>> value = store.get(key, deadline);
  if (!value) return value.status();
  return std::string(value->begin(), value->end());
}

Status checkKeyValue(const std::string& key, size_t value_bytes) {
  if (key.size() > kMaxKeyBytes) {
    return makeStatus(StatusCode::kInvalidArgument, "key {} is {} bytes, expected at most {}", describeKey(key),
                      key.size(), kMaxKeyBytes);
  }
  if (value_bytes > kMaxValueBytes) {
    return makeStatus(StatusCode::kInvalidArgument, "value for key {} is {} bytes, expected at most {}",
                      describeKey(key), value_bytes, kMaxValueBytes);
  }
  return Status::ok();
}

std::string describeKey(const std::string& key) {
  std::string out = "'";
  appendEscaped(out, key.data(), std::min(key.size(), kDescribedKeyBytes));
  out += '\'';
  if (key.size() > kDescribedKeyBytes) out += fmt::format("... ({} bytes)", key.size());
  return out;
}

Result<int64_t> parseCounter(const std::string& key, const std::vector<uint8_t>& value) {
  const auto* first = reinterpret_cast<const char*>(value.data());
  const auto* last = first + value.size();
  int64_t parsed = 0;
  auto [end, error] = std::from_chars(first, last, parsed);
  if (value.empty() || error != std::errc() || end != last) {
    std::string shown;
    appendEscaped(shown, first, std::min(value.size(), kDescribedKeyBytes));
    return makeStatus(StatusCode::kInvalidArgument,
                      "key {} holds '{}' ({} bytes), expected a decimal int64 counter for add()", describeKey(key),
                      shown, value.size());
  }
  return parsed;
}

std::vector<uint8_t> formatCounter(int64_t value) {
  const std::string text = std::to_string(value);
  return {text.begin(), text.end()};
}

Result<int64_t> addCounter(const std::string& key, int64_t old_value, int64_t delta) {
  int64_t sum = 0;
  if (__builtin_add_overflow(old_value, delta, &sum)) {
    return makeStatus(StatusCode::kInvalidArgument, "add({}) to counter {} = {} overflows int64", delta,
                      describeKey(key), old_value);
  }
  return sum;
}

}  // namespace poseidon::transport::bootstrap
