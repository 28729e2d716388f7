#include "tests/support/include_rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace poseidon::testing {
namespace {

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "ps/client.h" -> "ps"; "" when the path has no folder.
std::string_view topFolder(std::string_view path) {
  const size_t slash = path.find('/');
  return slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
}

bool under(std::string_view path, std::string_view folder) {
  return path.size() > folder.size() && path.starts_with(folder) && path[folder.size()] == '/';
}

bool isSourceFile(std::string_view path) {
  for (std::string_view ext : {".h", ".cc", ".cu", ".cuh"}) {
    if (path.ends_with(ext)) return true;
  }
  return false;
}

}  // namespace

Result<IncludeMap> IncludeMap::parse(std::string_view rules) {
  IncludeMap map;
  std::vector<std::pair<int, std::vector<std::string>>> right_sides;  // checked once all folders are known
  int number = 0;
  std::istringstream in{std::string(rules)};
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    std::string_view line = raw;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return makeStatus(StatusCode::kInvalidArgument, "deps line {} '{}': expected 'folder: folders it may include'",
                        number, line);
    }
    const std::string left(trim(line.substr(0, colon)));
    std::vector<std::string> right = words(line.substr(colon + 1));
    if (left == "separate") {
      if (right.size() < 2) {
        return makeStatus(StatusCode::kInvalidArgument, "deps line {}: 'separate' needs at least two folders, got {}",
                          number, right.size());
      }
      map.separate_.push_back(std::move(right));
      continue;
    }
    if (left.empty() || left.find('/') != std::string::npos || left == "*") {
      return makeStatus(StatusCode::kInvalidArgument, "deps line {}: '{}' is not a top-level folder name", number,
                        left);
    }
    if (map.allowed_.count(left)) {
      return makeStatus(StatusCode::kInvalidArgument, "deps line {}: folder '{}' has a rule already", number, left);
    }
    map.allowed_[left] = std::set<std::string>(right.begin(), right.end());
    right_sides.emplace_back(number, std::move(right));
  }
  for (const auto& [line, right] : right_sides) {
    for (const std::string& folder : right) {
      if (folder != "*" && !map.knows(folder)) {
        return makeStatus(StatusCode::kInvalidArgument, "deps line {}: '{}' is not a folder of the map", line, folder);
      }
    }
  }
  for (const auto& group : map.separate_) {
    for (const std::string& folder : group) {
      if (!map.knows(topFolder(folder))) {
        return makeStatus(StatusCode::kInvalidArgument, "deps 'separate': '{}' is not inside a folder of the map",
                          folder);
      }
    }
  }
  if (map.allowed_.empty()) return makeStatus(StatusCode::kInvalidArgument, "the deps block has no rules");
  return map;
}

Result<IncludeMap> IncludeMap::fromMarkdown(std::string_view markdown) {
  constexpr std::string_view kOpen = "\n```deps\n";
  const size_t open = markdown.find(kOpen);
  if (open == std::string_view::npos) {
    return makeStatus(StatusCode::kInvalidArgument, "no ```deps block (a line of its own) in the document");
  }
  const size_t begin = open + kOpen.size();
  const size_t close = markdown.find("\n```", begin - 1);
  if (close == std::string_view::npos) {
    return makeStatus(StatusCode::kInvalidArgument, "the ```deps block is not closed by a ``` line");
  }
  return parse(close < begin ? std::string_view{} : markdown.substr(begin, close - begin));
}

std::string IncludeMap::checkEdge(std::string_view from_file, std::string_view included) const {
  const std::string_view to = topFolder(included);
  if (to.empty() || !knows(to)) return {};
  const std::string_view from = topFolder(from_file);
  const auto rule = allowed_.find(from);
  if (rule == allowed_.end()) return fmt::format("folder '{}' is not in the map", from);
  if (from == to) {
    for (const auto& group : separate_) {
      for (const std::string& mine : group) {
        if (!under(from_file, mine)) continue;
        for (const std::string& other : group) {
          if (other != mine && under(included, other)) return fmt::format("{} -> {}: kept separate", mine, other);
        }
      }
    }
    return {};
  }
  const std::set<std::string>& may = rule->second;
  if (may.count("*") || may.count(std::string(to))) return {};
  return fmt::format("{} -> {} is not an arrow of the map ({} may include: {})", from, to, from,
                     may.empty() ? std::string("nothing else") : fmt::format("{}", fmt::join(may, " ")));
}

std::vector<QuotedInclude> quotedIncludes(std::string_view source) {
  std::vector<QuotedInclude> out;
  int number = 0;
  std::istringstream in{std::string(source)};
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    std::string_view line = trim(raw);
    if (!line.starts_with('#')) continue;
    line = trim(line.substr(1));
    if (!line.starts_with("include")) continue;
    line = trim(line.substr(std::string_view("include").size()));
    if (!line.starts_with('"')) continue;
    const size_t close = line.find('"', 1);
    if (close == std::string_view::npos) continue;
    out.push_back({number, std::string(line.substr(1, close - 1))});
  }
  return out;
}

std::string IncludeViolation::toString() const {
  return line > 0 ? fmt::format("{}:{}: {}", file, line, message) : fmt::format("{}: {}", file, message);
}

std::vector<IncludeViolation> checkFile(const IncludeMap& map, const std::string& file, std::string_view source) {
  std::vector<IncludeViolation> out;
  for (const QuotedInclude& include : quotedIncludes(source)) {
    std::string why = map.checkEdge(file, include.path);
    if (!why.empty()) out.push_back({file, include.line, fmt::format("#include \"{}\": {}", include.path, why)});
  }
  return out;
}

Result<std::vector<std::string>> sourceFiles(const std::string& root) {
  std::vector<std::string> files;
  const std::string command = fmt::format("git -C '{}' ls-files -z 2>/dev/null", root);
  if (FILE* pipe = popen(command.c_str(), "r")) {
    std::string listing;
    char buffer[65536];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) listing.append(buffer, n);
    const int status = pclose(pipe);
    if (status == 0 && !listing.empty()) {
      std::istringstream in(listing);
      for (std::string path; std::getline(in, path, '\0');) {
        if (isSourceFile(path)) files.push_back(path);
      }
      return files;
    }
  }
  namespace fs = std::filesystem;
  std::error_code error;
  fs::recursive_directory_iterator it(root, error), end;
  if (error) return makeStatus(StatusCode::kIoError, "cannot list '{}': {}", root, error.message());
  for (; it != end; it.increment(error)) {
    if (error) return makeStatus(StatusCode::kIoError, "listing '{}': {}", root, error.message());
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.starts_with('.') || name.starts_with("build") || name == "out")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && isSourceFile(name)) files.push_back(fs::relative(it->path(), root).generic_string());
  }
  return files;
}

Result<std::vector<IncludeViolation>> checkTree(const IncludeMap& map, const std::string& root,
                                                const std::vector<std::string>& files) {
  std::vector<IncludeViolation> out;
  std::map<std::string, std::vector<std::string>> unknown;  // folder -> its files
  for (const std::string& file : files) {
    const std::string folder(topFolder(file));
    if (folder.empty()) continue;
    if (!map.knows(folder)) {
      unknown[folder].push_back(file);
      continue;
    }
    std::ifstream in(root + "/" + file, std::ios::binary);
    if (!in) return makeStatus(StatusCode::kIoError, "cannot read '{}/{}'", root, file);
    std::ostringstream text;
    text << in.rdbuf();
    for (IncludeViolation& v : checkFile(map, file, text.str())) out.push_back(std::move(v));
  }
  for (const auto& [folder, its_files] : unknown) {
    out.push_back({folder + "/", 0,
                   fmt::format("folder with {} source files (first: {}) is not in the map: add a rule for it",
                               its_files.size(), its_files.front())});
  }
  return out;
}

}  // namespace poseidon::testing
