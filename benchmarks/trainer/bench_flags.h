// The trainer benchmarks' own flags (--name=N, whole numbers), taken out of the command line
// before Google Benchmark reads the rest.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace poseidon::bench {

class BenchFlags {
 public:
  // `defaults`: every flag this program takes, with its value when not given (each must be >= 1).
  BenchFlags(int argc, char** argv, std::map<std::string, uint64_t> defaults) : values_(std::move(defaults)) {
    for (int i = 0; i < argc; ++i) {
      const std::string_view arg(argv[i]);
      const size_t eq = arg.find('=');
      const auto known =
          arg.starts_with("--") && eq != arg.npos ? values_.find(std::string(arg.substr(2, eq - 2))) : values_.end();
      if (i == 0 || known == values_.end()) {
        rest_.push_back(argv[i]);
        continue;
      }
      const std::string_view text = arg.substr(eq + 1);
      uint64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size() || value == 0) {
        error_ = "argument '" + std::string(arg) + "': expected a whole number >= 1";
      } else {
        known->second = value;
      }
    }
  }

  uint64_t value(const std::string& name) const { return values_.at(name); }
  // Empty, or what was wrong with a flag.
  const std::string& error() const { return error_; }
  // argv without this program's flags, for benchmark::Initialize.
  int restCount() const { return static_cast<int>(rest_.size()); }
  char** rest() { return rest_.data(); }

 private:
  std::map<std::string, uint64_t> values_;
  std::vector<char*> rest_;
  std::string error_;
};

}  // namespace poseidon::bench
