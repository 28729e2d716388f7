// Cutting the short texts our options, specs and store values are made of: a list split at its
// separator, an item trimmed of blanks. One definition of each, so the parsers see the same items;
// whether an empty item or blanks are allowed is each parser's rule (a store value has none).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace poseidon {

// `text` without leading and trailing spaces and tabs.
inline std::string_view trimBlanks(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The items between `separator`s, empty ones kept, so a parser can name them: "a,,b" gives
// {"a", "", "b"}, "a," gives {"a", ""}, and "" gives {""} (one empty item: a list that must not
// be empty). splitListOrNone below is for lists that may be.
inline std::vector<std::string_view> splitList(std::string_view text, char separator = ',') {
  std::vector<std::string_view> items;
  for (size_t start = 0;;) {
    const size_t end = text.find(separator, start);
    items.push_back(text.substr(start, end - start));  // to the end when npos
    if (end == std::string_view::npos) return items;
    start = end + 1;
  }
}

// As splitList, but "" gives no item: for a list that may be empty (an option string, a store
// value listing what a rank holds). "," still gives two empty items, for the parser to name.
inline std::vector<std::string_view> splitListOrNone(std::string_view text, char separator = ',') {
  if (text.empty()) return {};
  return splitList(text, separator);
}

}  // namespace poseidon
