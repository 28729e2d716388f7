#include "trainer/api/worker_checkpoint.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "model/spec.h"
#include "ps/checkpoint/checkpoint_stream.h"
#include "ps/checkpoint/durable_file.h"
#include "transport/wire/crc32c.h"

namespace poseidon::trainer {

namespace {

using ps::checkpoint_format::Radix;

constexpr std::string_view kMagic = "PSDNWKCP";
constexpr uint32_t kVersion = 2;  // 2: the consistency in the header
// The trainer's own bytes are a data position and a random state: a little, never megabytes. A
// reader refuses more before it allocates (the length may be garbage).
constexpr uint64_t kMaxExtraBytes = uint64_t{1} << 20;

// What a reader compares with the running job; the writer writes the same calls.
template <typename Io>
Status header(Io& io, const WorkerCheckpointIdentity& id) {
  const std::string spec = model::formatModelSpec(*id.model);
  POSEIDON_RETURN_IF_ERROR(io.magic(kMagic));
  POSEIDON_RETURN_IF_ERROR(io.version(kVersion));
  POSEIDON_RETURN_IF_ERROR(io.identity32("rank", id.rank));
  POSEIDON_RETURN_IF_ERROR(io.identity32("workers", id.workers));
  POSEIDON_RETURN_IF_ERROR(io.identity32("model_crc", transport::wire::crc32c(spec.data(), spec.size())));
  POSEIDON_RETURN_IF_ERROR(io.identity64("model_params", id.model->totalParams(), Radix::kDecimal));
  POSEIDON_RETURN_IF_ERROR(io.identityString("optimizer", id.optimizer->canonical()));
  POSEIDON_RETURN_IF_ERROR(io.identity32("state_words", static_cast<uint32_t>(id.optimizer->stateWords())));
  return io.identityString("consistency", id.consistency);
}

std::vector<uint64_t> packBytes(std::span<const uint8_t> bytes) {
  std::vector<uint64_t> words((bytes.size() + 7) / 8, 0);
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

}  // namespace

std::filesystem::path normalizedDirectory(const std::string& dir) {
  // Made absolute first: weakly_canonical leaves a relative path that does not exist relative.
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(dir, error);
  std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  if (!error) {
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, error);
    path = (error ? absolute : canonical).lexically_normal();
  }
  // "d/" where d does not exist yet keeps its separator: an empty last name.
  if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
  return path;
}

std::vector<uint64_t> checkpointsToRemove(std::vector<uint64_t> held, uint64_t floor, size_t keep) {
  std::sort(held.begin(), held.end());
  std::erase_if(held, [floor](uint64_t i) { return i > floor; });
  held.resize(held.size() > keep ? held.size() - keep : 0);
  return held;
}

std::string workerCheckpointPath(const std::string& dir, uint32_t rank, uint64_t iteration) {
  return fmt::format("{}/worker-{}-{}.ckpt", dir, rank, iteration);
}

Result<std::vector<uint64_t>> readWorkerCheckpointList(const std::string& dir, uint32_t rank) {
  std::vector<uint64_t> found;
  std::error_code error;
  const auto unreadable = [&] {
    return makeStatus(StatusCode::kIoError, "cannot read the checkpoint directory '{}': {}", dir, error.message());
  };
  std::filesystem::directory_iterator entries(dir, error);
  if (error == std::errc::no_such_file_or_directory) return found;
  if (error) return unreadable();
  const std::string prefix = fmt::format("worker-{}-", rank);
  // increment(error), not the range-for's ++, which throws when reading the next entry fails.
  for (const std::filesystem::directory_iterator end; entries != end; entries.increment(error)) {
    const std::string name = entries->path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".ckpt")) continue;  // temporaries end in .tmp.<pid>
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 5);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 19) continue;
    found.push_back(std::stoull(digits));  // at most 19 digits: below 2^64
  }
  if (error) return unreadable();
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<uint64_t> listWorkerCheckpoints(const std::string& dir, uint32_t rank) {
  auto found = readWorkerCheckpointList(dir, rank);
  return found ? std::move(*found) : std::vector<uint64_t>{};
}

Status writeWorkerCheckpoint(const std::string& dir, const WorkerCheckpointIdentity& id, uint64_t iteration,
                             std::span<const uint8_t> extra, std::span<const LayerState> layers) {
  POSEIDON_RETURN_IF_ERROR(ps::makeDirectory(dir));
  const std::string path = workerCheckpointPath(dir, id.rank, iteration);
  const std::string temp = fmt::format("{}.tmp.{}", path, ::getpid());
  ps::CheckpointWriter writer(temp);
  const auto write = [&]() -> Status {
    POSEIDON_RETURN_IF_ERROR(writer.create());
    POSEIDON_RETURN_IF_ERROR(header(writer, id));
    const uint64_t numbers[] = {iteration, extra.size()};
    POSEIDON_RETURN_IF_ERROR(writer.u64s("iteration and extra bytes", numbers, 2));
    const std::vector<uint64_t> words = packBytes(extra);
    POSEIDON_RETURN_IF_ERROR(writer.u64s("extra", words, words.size()));
    for (const LayerState& layer : layers) {
      POSEIDON_RETURN_IF_ERROR(writer.floats("params", layer.params));
      POSEIDON_RETURN_IF_ERROR(writer.floats("state0", layer.state0));
      POSEIDON_RETURN_IF_ERROR(writer.floats("state1", layer.state1));
    }
    return writer.finish();
  };
  if (Status status = write(); !status.isOk()) {
    ::unlink(temp.c_str());
    return status.withContext(fmt::format("writing checkpoint {}", path));
  }
  return ps::replaceFile(temp, path, dir);
}

void removeWorkerCheckpoints(const std::string& dir, uint32_t rank, std::span<const uint64_t> iterations) {
  for (uint64_t i : iterations) ::unlink(workerCheckpointPath(dir, rank, i).c_str());
}

void removeWorkerCheckpointsAfter(const std::string& dir, uint32_t rank, uint64_t iteration) {
  for (uint64_t i : listWorkerCheckpoints(dir, rank)) {
    if (i > iteration) ::unlink(workerCheckpointPath(dir, rank, i).c_str());
  }
}

Status refuseAnEarlierRunsWorkerCheckpoints(const std::string& dir, uint32_t rank) {
  const std::vector<uint64_t> found = listWorkerCheckpoints(dir, rank);
  if (found.empty()) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument,
                    "'{}' holds worker {}'s checkpoint{} of iteration{} {}, of an earlier run this one did not resume "
                    "from; resume from them, or remove them (worker-<rank>-<iteration>.ckpt) or write elsewhere to "
                    "train from iteration 0 (a run beside them could later resume into a mix of the two runs)",
                    dir, rank, found.size() == 1 ? "" : "s", found.size() == 1 ? "" : "s", fmt::join(found, ", "));
}

Result<RestoredCheckpoint> readWorkerCheckpoint(const std::string& dir, const WorkerCheckpointIdentity& id,
                                                uint64_t iteration, std::span<const LayerState> layers) {
  const std::string path = workerCheckpointPath(dir, id.rank, iteration);
  const auto read = [&]() -> Result<RestoredCheckpoint> {
    ps::CheckpointReader reader(path);
    POSEIDON_RETURN_IF_ERROR(reader.open());
    POSEIDON_RETURN_IF_ERROR(header(reader, id));
    std::vector<uint64_t> numbers;
    POSEIDON_RETURN_IF_ERROR(reader.u64s("iteration and extra bytes", numbers, 2));
    if (numbers[0] != iteration) {
      return makeStatus(StatusCode::kProtocolError, "holds iteration {}, expected {} (its name)", numbers[0],
                        iteration);
    }

    if (numbers[1] > kMaxExtraBytes) {
      return makeStatus(StatusCode::kProtocolError, "the trainer's state is {} bytes, more than the {} allowed",
                        numbers[1], kMaxExtraBytes);
    }
    std::vector<uint64_t> words;
    POSEIDON_RETURN_IF_ERROR(reader.u64s("extra", words, (numbers[1] + 7) / 8));
    // Staged, so a file that fails its checksum at the end leaves the caller's memory untouched.
    std::vector<std::vector<float>> staged;
    for (const LayerState& layer : layers) {
      for (std::span<float> part : {layer.params, layer.state0, layer.state1}) {
        staged.emplace_back(part.size());
        POSEIDON_RETURN_IF_ERROR(reader.floats("layer data", staged.back()));
      }
    }
    POSEIDON_RETURN_IF_ERROR(reader.checksum());
    size_t i = 0;
    for (const LayerState& layer : layers) {
      for (std::span<float> part : {layer.params, layer.state0, layer.state1}) {
        std::copy(staged[i].begin(), staged[i].end(), part.begin());
        ++i;
      }
    }
    RestoredCheckpoint restored;
    restored.iteration = numbers[0];
    restored.extra.resize(numbers[1]);
    if (!restored.extra.empty()) std::memcpy(restored.extra.data(), words.data(), restored.extra.size());
    return restored;
  };
  auto restored = read();
  if (!restored) return restored.status().withContext(fmt::format("checkpoint {}", path));
  return restored;
}

}  // namespace poseidon::trainer
