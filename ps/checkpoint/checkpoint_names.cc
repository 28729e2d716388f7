#include "ps/checkpoint/checkpoint_names.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "ps/checkpoint/checkpoint.h"

namespace poseidon::ps {
namespace {

std::string fileName(uint32_t server, uint64_t clock) { return fmt::format("server-{}.clock-{}.ckpt", server, clock); }

std::string join(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// The decimal number at the start of `text`, consumed.
template <typename T>
bool consumeNumber(std::string_view& text, T& value) {
  const size_t digits = static_cast<size_t>(
      std::find_if(text.begin(), text.end(), [](char c) { return c < '0' || c > '9'; }) - text.begin());
  if (digits == 0 || (digits > 1 && text[0] == '0')) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) return false;
  text.remove_prefix(digits);
  return true;
}

}  // namespace

std::string checkpointPath(const std::string& dir, uint32_t server, uint64_t clock) {
  return join(dir, fileName(server, clock));
}

std::string checkpointTempPath(const std::string& dir, uint32_t server, uint64_t clock) {
  return join(dir, fmt::format(".{}.tmp.{}", fileName(server, clock), ::getpid()));
}

std::optional<CheckpointName> parseCheckpointName(std::string_view file_name) {
  CheckpointName name;
  std::string_view rest = file_name;
  if (!consume(rest, "server-") || !consumeNumber(rest, name.server) || !consume(rest, ".clock-") ||
      !consumeNumber(rest, name.clock) || rest != ".ckpt") {
    return std::nullopt;
  }
  return name;
}

std::vector<uint64_t> listCheckpoints(const std::string& dir, uint32_t server) {
  std::vector<uint64_t> clocks;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return clocks;
  while (const dirent* entry = ::readdir(handle)) {
    if (entry->d_type == DT_DIR) continue;
    const auto name = parseCheckpointName(entry->d_name);
    if (name && name->server == server) clocks.push_back(name->clock);
  }
  ::closedir(handle);
  std::sort(clocks.begin(), clocks.end());
  return clocks;
}

size_t removeStaleTemporaries(const std::string& dir, uint32_t server) {
  size_t removed = 0;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return removed;
  const std::string own_suffix = fmt::format(".tmp.{}", ::getpid());
  while (const dirent* entry = ::readdir(handle)) {
    std::string_view name = entry->d_name;
    // ".server-<s>.clock-<T>.ckpt.tmp.<pid>": this server's, written by another (dead) process.
    if (!consume(name, ".")) continue;
    const size_t tmp = name.find(".tmp.");
    if (tmp == std::string_view::npos || name.substr(tmp) == own_suffix) continue;
    const auto complete = parseCheckpointName(name.substr(0, tmp));
    if (!complete || complete->server != server) continue;
    if (::unlink(join(dir, entry->d_name).c_str()) == 0) ++removed;
  }
  ::closedir(handle);
  return removed;
}

}  // namespace poseidon::ps
