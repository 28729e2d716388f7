// MemoryStore: a Store in one process's memory, for unit tests of what is built on a Store
// (views, the region exchange) without sockets or files. get() waits for a set() or the deadline.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "transport/bootstrap/store.h"

namespace poseidon::testing {

class MemoryStore final : public transport::bootstrap::Store {
 public:
  Status set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
    changed_.notify_all();
    return Status::ok();
  }
  Result<std::vector<uint8_t>> get(const std::string& key, Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    while (values_.find(key) == values_.end()) {
      if (changed_.wait_until(lock, deadline.at()) == std::cv_status::timeout && values_.count(key) == 0) {
        return makeStatus(StatusCode::kTimeout, "key {} was not set before the deadline",
                          transport::bootstrap::describeKey(key));
      }
    }
    return values_[key];
  }
  Result<int64_t> add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(key);
    int64_t old = 0;
    if (it != values_.end()) {
      auto parsed = transport::bootstrap::parseCounter(key, it->second);
      if (!parsed) return parsed.status();
      old = *parsed;
    }
    values_[key] = transport::bootstrap::formatCounter(old + delta);
    changed_.notify_all();
    return old + delta;
  }
  // Every key set so far, to check where a view or an exchange wrote.
  std::vector<std::string> keys() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [key, value] : values_) out.push_back(key);
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<uint8_t>> values_;
};

}  // namespace poseidon::testing
