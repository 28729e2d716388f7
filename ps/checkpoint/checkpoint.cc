#include "ps/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

#include "ps/checkpoint/checkpoint_format.h"
#include "ps/checkpoint/checkpoint_names.h"
#include "ps/checkpoint/checkpoint_stream.h"
#include "ps/checkpoint/durable_file.h"

namespace poseidon::ps {

namespace {

Status checkSpan(std::string_view name, size_t size, uint64_t expected) {
  if (size == expected) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "checkpoint {} has {} floats; the identity needs {}", name, size,
                    expected);
}

// The caller's buffers against the identity, before a file is touched.
Status checkBuffers(const CheckpointIdentity& id, const CheckpointData& data) {
  if (id.state_words > 2) {
    return makeStatus(StatusCode::kInvalidArgument, "checkpoint state_words {} is not 0, 1 or 2", id.state_words);
  }
  POSEIDON_RETURN_IF_ERROR(checkSpan("params", data.params.size(), id.elements));
  POSEIDON_RETURN_IF_ERROR(checkSpan("state word 0", data.state0.size(), id.state_words >= 1 ? id.elements : 0));
  return checkSpan("state word 1", data.state1.size(), id.state_words >= 2 ? id.elements : 0);
}

// What the writer needs beyond checkBuffers(): anything the reader would refuse is refused here,
// so a job never writes a checkpoint it cannot load.
Status checkWrite(const std::string& dir, const CheckpointIdentity& id, const CheckpointData& data) {
  if (dir.empty()) return makeStatus(StatusCode::kInvalidArgument, "checkpoint directory is empty");
  POSEIDON_RETURN_IF_ERROR(checkBuffers(id, data));
  if (data.chunk_steps.size() != id.chunks) {
    return makeStatus(StatusCode::kInvalidArgument, "checkpoint chunk_steps has {} values; the identity has {} chunks",
                      data.chunk_steps.size(), id.chunks);
  }
  if (data.applied.size() != uint64_t{id.chunks} * id.workers) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "checkpoint applied has {} values; the identity needs chunks {} x workers {}",
                      data.applied.size(), id.chunks, id.workers);
  }
  for (const auto& [field, value] : {std::pair{"optimizer", &id.optimizer}, {"consistency", &id.consistency}}) {
    if (value->size() > checkpoint_format::kMaxStringBytes) {
      return makeStatus(StatusCode::kInvalidArgument, "checkpoint {} string of {} bytes exceeds the limit {}", field,
                        value->size(), checkpoint_format::kMaxStringBytes);
    }
  }
  return Status::ok();
}

Status writeTemporary(const std::string& path, const CheckpointIdentity& id, const CheckpointData& data) {
  CheckpointWriter writer(path);
  POSEIDON_RETURN_IF_ERROR(writer.create());
  POSEIDON_RETURN_IF_ERROR(checkpoint_format::header(writer, id, data.clock));
  POSEIDON_RETURN_IF_ERROR(checkpoint_format::payload(writer, id, data));
  return writer.finish();
}

}  // namespace

Status writeCheckpoint(const std::string& dir, const CheckpointIdentity& identity, const CheckpointData& data) {
  POSEIDON_RETURN_IF_ERROR(checkWrite(dir, identity, data));
  POSEIDON_RETURN_IF_ERROR(makeDirectory(dir));
  const std::string temp = checkpointTempPath(dir, identity.server, data.clock);
  const std::string path = checkpointPath(dir, identity.server, data.clock);
  if (Status status = writeTemporary(temp, identity, data); !status.isOk()) {
    ::unlink(temp.c_str());  // a partial file only takes space; the previous checkpoint is intact
    return status;
  }
  return replaceFile(temp, path, dir);
}

Status pruneCheckpoints(const std::string& dir, uint32_t server, uint64_t committed, uint64_t passed_by_all, int keep) {
  if (keep < 1) return makeStatus(StatusCode::kInvalidArgument, "checkpoint keep {} is not >= 1", keep);
  std::vector<uint64_t> settled = listCheckpoints(dir, server);  // ascending
  std::vector<uint64_t> doomed;
  size_t committed_kept = 0;
  for (auto clock = settled.rbegin(); clock != settled.rend(); ++clock) {
    if (*clock > committed && *clock <= passed_by_all) {
      doomed.push_back(*clock);  // not on every disk, and never will be
    } else if (*clock <= committed && ++committed_kept > static_cast<size_t>(keep)) {
      doomed.push_back(*clock);
    }
  }
  for (const uint64_t clock : doomed) {
    const std::string path = checkpointPath(dir, server, clock);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return errnoStatus(StatusCode::kIoError,
                         fmt::format("removing checkpoint {} (clock {} is the newest every server has written) failed",
                                     path, committed));
    }
  }
  return Status::ok();
}

size_t removeCheckpointsAfter(const std::string& dir, uint32_t server, uint64_t clock) {
  size_t removed = 0;
  for (const uint64_t later : listCheckpoints(dir, server)) {
    if (later > clock && ::unlink(checkpointPath(dir, server, later).c_str()) == 0) ++removed;
  }
  return removed;
}

Status loadCheckpoint(const std::string& dir, const CheckpointIdentity& identity, uint64_t clock,
                      CheckpointData& data) {
  POSEIDON_RETURN_IF_ERROR(checkBuffers(identity, data));
  CheckpointReader reader(checkpointPath(dir, identity.server, clock));
  POSEIDON_RETURN_IF_ERROR(reader.open());
  POSEIDON_RETURN_IF_ERROR(checkpoint_format::header(reader, identity, clock));
  // Counters land here and reach `data` only if the whole file checks out. The parameters and
  // state go straight into the caller's buffers (they may be GBs), so the file's size is checked
  // first: after that only a checksum mismatch or an I/O error can leave them half-overwritten.
  CheckpointData staged{.clock = clock, .params = data.params, .state0 = data.state0, .state1 = data.state1};
  checkpoint_format::FieldSizes sizes;
  POSEIDON_RETURN_IF_ERROR(checkpoint_format::payload(sizes, identity, staged));
  POSEIDON_RETURN_IF_ERROR(reader.expectRemaining(sizes.fields()));
  POSEIDON_RETURN_IF_ERROR(checkpoint_format::payload(reader, identity, staged));
  POSEIDON_RETURN_IF_ERROR(reader.checksum());
  data.clock = clock;
  data.chunk_steps = std::move(staged.chunk_steps);
  data.applied = std::move(staged.applied);
  return Status::ok();
}

}  // namespace poseidon::ps
