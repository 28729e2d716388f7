// readableRange: a CLI11 range check whose message a person can read. CLI11's NonNegativeNumber
// and PositiveNumber compare against the largest double and print it in full (309 digits), and
// its Range prints doubles as 0.000000; this prints both bounds as fmt does ("0 to 1e+15").
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <string>

namespace poseidon::tools {

template <typename T>
CLI::Validator readableRange(T low, T high) {
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(text, value)) return fmt::format("'{}' is not a number", text);
        if (value < low || value > high) return fmt::format("{} is out of range: expected {} to {}", text, low, high);
        return "";
      },
      fmt::format("{} to {}", low, high));
}

}  // namespace poseidon::tools
