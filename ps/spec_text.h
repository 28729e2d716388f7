// Splitting the small specs command lines give ("async:push=2,fetch=1", "tensors:a=3,b=4").
#pragma once

#include <string_view>

namespace poseidon::ps {

// Removes and returns the text up to the first `separator` of `rest` (all of it if none).
inline std::string_view takeItem(std::string_view& rest, char separator = ',') {
  const size_t at = rest.find(separator);
  const std::string_view item = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + 1);
  return item;
}

}  // namespace poseidon::ps
