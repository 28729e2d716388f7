// IncludeMap: docs/DESIGN.md's module map (its ```deps block), and the checks that hold every
// `#include "folder/..."` of the repository to it.
//
// Block format, one rule a line ('#' starts a comment):
//   folder: the folders it may include besides itself   ('*': every folder of the map)
//   separate: a/b c/d ...                                 (sub-folders that may not include each other)
// A folder may always include itself. An include whose first path component is not a folder of
// the map ("gtest/gtest.h", "fmt/format.h", "local.h") is not the map's business.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace poseidon::testing {

class IncludeMap {
 public:
  // Parses the rules themselves; errors name the line and what is wrong with it.
  static Result<IncludeMap> parse(std::string_view rules);
  // Finds the ```deps block in a Markdown document and parses it.
  static Result<IncludeMap> fromMarkdown(std::string_view markdown);

  bool knows(std::string_view folder) const { return allowed_.count(std::string(folder)) != 0; }
  // Empty when `from_file` (a path relative to the repository root) may include `included` (the
  // quoted path); otherwise the reason, naming the edge and what the including folder may include.
  std::string checkEdge(std::string_view from_file, std::string_view included) const;

 private:
  std::map<std::string, std::set<std::string>, std::less<>> allowed_;  // "*" inside: anything
  std::vector<std::vector<std::string>> separate_;
};

struct QuotedInclude {
  int line = 0;  // 1-based
  std::string path;
};
// Every `#include "..."` of a source text, in order.
std::vector<QuotedInclude> quotedIncludes(std::string_view source);

// One problem, as "file:line: message" (line 0: about the file's folder, not a line).
struct IncludeViolation {
  std::string file;
  int line = 0;
  std::string message;
  std::string toString() const;
};

// Every forbidden include of one file; its folder must be in the map.
std::vector<IncludeViolation> checkFile(const IncludeMap& map, const std::string& file, std::string_view source);

// The repository's source files (*.h, *.cc, *.cu, *.cuh), relative to `root`: what git tracks, or,
// where git cannot say (not a checkout, no git), every such file outside hidden and build folders.
Result<std::vector<std::string>> sourceFiles(const std::string& root);

// checkFile over every file read from `root`.
Result<std::vector<IncludeViolation>> checkTree(const IncludeMap& map, const std::string& root,
                                                const std::vector<std::string>& files);

}  // namespace poseidon::testing
