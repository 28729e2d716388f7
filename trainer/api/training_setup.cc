#include "trainer/api/training_setup.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <vector>

#include "scheme/start_agreement.h"
#include "trainer/sync/hybrid_ps.h"

namespace poseidon::trainer {

namespace {

constexpr const char* kSetupKey = "training";
constexpr uint8_t kSetupFormat = 2;  // 2: the server checkpoints

std::string hybcommName(const HybCommOptions& h) {
  switch (h.mode) {
    case HybCommMode::kClosedForm: return "closed form";
    case HybCommMode::kAdaptive: return "adaptive";
    case HybCommMode::kFixed: return fmt::format("fixed {}", scheme::schemeName(h.fixed));
  }
  return "unknown";
}

// The setup as bytes: every field at its full width, so the servers run exactly worker 0's
// optimizer (a text form would have to round-trip every double).
class Writer {
 public:
  template <typename T>
  Writer& put(T value) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(T));
    return *this;
  }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  Reader& get(T& value) {
    if (at_ + sizeof(T) > in_.size()) {
      short_ = true;
      return *this;
    }
    std::memcpy(&value, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return *this;
  }
  bool whole() const { return !short_ && at_ == in_.size(); }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
  bool short_ = false;
};

std::vector<uint8_t> encode(const TrainingSetup& s) {
  const kernels::OptimizerConfig& o = s.optimizer;
  Writer w;
  w.put(kSetupFormat).put(static_cast<uint8_t>(s.consistency.mode)).put(s.consistency.staleness);
  w.put(s.consistency.n_push).put(s.consistency.n_fetch);
  w.put(static_cast<uint8_t>(o.kind)).put(static_cast<uint8_t>(o.sum_only)).put(static_cast<uint8_t>(o.lr.kind));
  w.put(o.lr.base_lr).put(o.lr.step_size).put(o.lr.gamma).put(o.lr.max_steps).put(o.lr.power).put(o.lr.min_lr);
  w.put(o.grad_scale).put(o.weight_decay).put(o.momentum).put(static_cast<uint8_t>(o.nesterov)).put(o.eps);
  w.put(o.beta1).put(o.beta2).put(o.initial_accumulator);
  const CheckpointRequest& c = s.checkpoints;
  w.put(static_cast<uint8_t>(c.on)).put(c.every).put(c.keep).put(static_cast<uint8_t>(c.resume));
  return std::move(w.out);
}

Result<TrainingSetup> decode(std::span<const uint8_t> bytes) {
  TrainingSetup s;
  kernels::OptimizerConfig& o = s.optimizer;
  uint8_t format = 0, mode = 0, kind = 0, sum_only = 0, schedule = 0, nesterov = 0, checkpoints = 0, resume = 0;
  Reader r(bytes);
  r.get(format).get(mode).get(s.consistency.staleness).get(s.consistency.n_push).get(s.consistency.n_fetch);
  r.get(kind).get(sum_only).get(schedule);
  r.get(o.lr.base_lr).get(o.lr.step_size).get(o.lr.gamma).get(o.lr.max_steps).get(o.lr.power).get(o.lr.min_lr);
  r.get(o.grad_scale).get(o.weight_decay).get(o.momentum).get(nesterov).get(o.eps);
  r.get(o.beta1).get(o.beta2).get(o.initial_accumulator);
  r.get(checkpoints).get(s.checkpoints.every).get(s.checkpoints.keep).get(resume);
  if (format != kSetupFormat || !r.whole() || mode > static_cast<uint8_t>(ps::Consistency::Mode::kAsync) ||
      schedule > static_cast<uint8_t>(kernels::LrSchedule::Kind::kCosine)) {
    return makeStatus(StatusCode::kProtocolError,
                      "worker 0's training setup: {} bytes of format {} (expected format {}, {} bytes)", bytes.size(),
                      format, kSetupFormat, encode(TrainingSetup{}).size());
  }
  s.consistency.mode = static_cast<ps::Consistency::Mode>(mode);
  o.kind = static_cast<kernels::OptimizerKind>(kind);
  o.sum_only = sum_only != 0;
  o.lr.kind = static_cast<kernels::LrSchedule::Kind>(schedule);
  o.nesterov = nesterov != 0;
  s.checkpoints.on = checkpoints != 0;
  s.checkpoints.resume = resume != 0;
  POSEIDON_RETURN_IF_ERROR(s.consistency.validate().withContext("worker 0's consistency"));
  POSEIDON_RETURN_IF_ERROR(o.validate().withContext("worker 0's optimizer"));
  return s;
}

}  // namespace

Status validateConsistencyOptions(const SessionOptions& options) {
  const ps::Consistency& c = options.consistency;
  POSEIDON_RETURN_IF_ERROR(c.validate().withContext("SessionOptions::consistency"));
  if (!serverOptimized(c)) return Status::ok();
  const HybCommOptions& h = options.hybcomm;
  if (h.mode != HybCommMode::kFixed || h.fixed != scheme::Scheme::kPs) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "consistency {} sends every layer through the PS, whose servers run the optimizer, but "
                      "SessionOptions::hybcomm ({}) may pick another scheme: set hybcomm to fixed ps "
                      "(SFB, the ring and the Adam-style scheme are BSP only)",
                      c.canonical(), hybcommName(h));
  }
  if (options.optimizer.sum_only) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "consistency {} runs SessionOptions::optimizer on the PS servers; 'sum' is not an optimizer",
                      c.canonical());
  }
  if (options.replica_check_every != 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SessionOptions::replica_check_every {} under consistency {}: workers read parameters of "
                      "different versions by design, so their copies differ; set it to 0",
                      options.replica_check_every, c.canonical());
  }
  return Status::ok();
}

Status publishTrainingSetup(JobConnection& job, const SessionOptions& options) {
  const ServerCheckpointOptions& c = options.server_checkpoints;
  return job.view().set(kSetupKey,
                        encode({options.consistency, options.optimizer, {!c.dir.empty(), c.every, c.keep, c.resume}}));
}

Result<TrainingSetup> publishedTrainingSetup(JobConnection& job, Deadline deadline) {
  auto bytes = job.view().get(kSetupKey, deadline);
  if (!bytes) return bytes.status().withContext("worker 0's training setup");
  return decode(*bytes);
}

Status agreeOnTrainingSetup(JobConnection& job, const SessionOptions& options, Deadline deadline) {
  model::Fingerprint items;
  items.add("session.consistency", options.consistency.canonical());
  items.add("session.optimizer", options.optimizer.canonical());
  // ps::PushSchedule::priority: every worker reorders, or none does.
  items.add("session.push.priority", options.push.priority ? "on" : "off");
  // Saves go with the servers' clocks, and a resume is every rank's or none's.
  const ServerCheckpointOptions& checkpoints = options.server_checkpoints;
  items.add("session.server_checkpoints",
            checkpoints.dir.empty()
                ? "off"
                : fmt::format("every={},keep={},resume={}", checkpoints.every, checkpoints.keep, checkpoints.resume));
  scheme::AgreementGroup workers{"session/start", {}, [](int r) { return fmt::format("worker {} (rank {})", r, r); }};
  for (int w = 0; w < options.layout.workers; ++w) workers.ranks.push_back(w);
  return scheme::agreeOnStart(job.view(), workers, job.rank(), items, deadline);
}

Result<std::unique_ptr<ServerOptimizedSync>> startServerOptimizedSync(
    JobConnection& job, const model::Model& model, const SessionOptions& options,
    const std::optional<std::vector<uint64_t>>& resumable_clocks, Deadline deadline) {
  auto context = job.join(scheme::Scheme::kPs, deadline);
  if (!context) return context.status();
  ServerOptimizedOptions sync;
  sync.workers = options.layout.workers;
  sync.ps_servers = options.layout.ps_servers;
  sync.chunk_bytes = options.chunk_bytes;
  sync.push = options.push;
  sync.consistency = options.consistency;
  sync.name = options.job;  // the name HybridSync gives its PS job too: the servers need not know which
  sync.resumable_clocks = resumable_clocks;
  return ServerOptimizedSync::start(**context, job.store(), model, sync, deadline);
}

Result<std::unique_ptr<ps::Server>> startPsServer(JobConnection& job, std::span<const model::Layer> layers,
                                                  const SessionOptions& options, const TrainingSetup& setup,
                                                  Deadline deadline) {
  auto context = job.join(scheme::Scheme::kPs, deadline);
  if (!context) return context.status();
  const int workers = options.layout.workers, servers = options.layout.ps_servers;
  if (!serverOptimized(setup.consistency)) {
    return startSummationServer(**context, job.store(), layers, workers, servers, options.chunk_bytes, options.job,
                                deadline);
  }
  ps::ServerOptions server;
  server.optimizer = setup.optimizer;
  server.consistency = setup.consistency;
  server.average = true;  // the mean of the workers' gradients, as HybComm's workers step on
  // Checkpoints as worker 0 asks, into this server's own directory.
  const CheckpointRequest& asked = setup.checkpoints;
  const std::string& dir = options.server_checkpoints.dir;
  if (asked.on && dir.empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "worker 0 asks the servers to checkpoint every {} clocks{}, but this server's "
                      "SessionOptions::server_checkpoints.dir is empty",
                      asked.every, asked.resume ? " and to resume" : "");
  }
  if (!asked.on && !dir.empty()) {
    spdlog::warn("SessionOptions::server_checkpoints.dir '{}' unused: worker 0 asks for no server checkpoints", dir);
  }
  if (asked.on) {
    const ServerCheckpointOptions checkpoints{dir, asked.every, asked.keep, asked.resume};
    POSEIDON_RETURN_IF_ERROR(
        validateServerCheckpoints(checkpoints, setup.consistency).withContext("worker 0's server checkpoints"));
    server.checkpoint_dir = dir;
    server.checkpoint_every = asked.every;
    server.checkpoint_keep = asked.keep;
    server.resume = asked.resume;
  }
  return startLayerServer(**context, job.store(), layers, workers, servers, options.chunk_bytes, options.job, server,
                          deadline);
}

}  // namespace poseidon::trainer
