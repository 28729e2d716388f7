#include "trainer/api/session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "adam/adam_server.h"
#include "model/spec.h"
#include "trainer/api/job_connection.h"
#include "trainer/api/merge_agreement.h"
#include "trainer/api/training_setup.h"
#include "trainer/api/worker_checkpoint.h"
#include "trainer/api/worker_checkpoint_agreement.h"
#include "trainer/sync/hybrid_ps.h"
#include "trainer/sync/hybrid_sync.h"
#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::trainer {

namespace {

// Worker 0's initial parameters travel through the store in pieces of at most this size (the
// store's values are bounded: transport/bootstrap/store.h).
constexpr size_t kPieceBytes = size_t{32} << 20;

HybridOptions hybridOptions(const SessionOptions& options) {
  HybridOptions hybrid;
  hybrid.workers = options.layout.workers;
  hybrid.ps_servers = options.layout.ps_servers;
  hybrid.adam_servers = std::max(1, options.layout.adam_servers);
  hybrid.chunk_bytes = options.chunk_bytes;
  hybrid.push = options.push;
  hybrid.optimizer = options.optimizer;
  hybrid.hybcomm = options.hybcomm;
  hybrid.name = options.job;
  hybrid.replica_check_every = options.replica_check_every;
  return hybrid;
}

Status validateOptions(const SessionOptions& options) {
  POSEIDON_RETURN_IF_ERROR(options.layout.validate());
  if (options.batch == 0) return makeStatus(StatusCode::kInvalidArgument, "a batch K of 0; expected >= 1");
  POSEIDON_RETURN_IF_ERROR(validateConsistencyOptions(options));
  POSEIDON_RETURN_IF_ERROR(validateServerCheckpoints(options.server_checkpoints, options.consistency));
  if (mayUseAdam(options.hybcomm) && options.layout.adam_servers < 1) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "HybComm may pick the Adam-style scheme, but the layout has no Adam server ({})",
                      options.layout.describe());
  }
  if (!mayUseAdam(options.hybcomm) && options.layout.adam_servers > 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "the layout has {} Adam servers, but HybComm, so configured, never picks the Adam-style scheme",
                      options.layout.adam_servers);
  }
  return Status::ok();
}

class SessionImpl final : public Session {
 public:
  SessionImpl(SessionOptions options, std::unique_ptr<JobConnection> job)
      : options_(std::move(options)), job_(std::move(job)) {}

  ~SessionImpl() override {
    pipeline_.reset();  // its threads stop before the sync they drive goes
    hybrid_ = nullptr;
    sync_.reset();  // its replicas live in the staging of device layers
    staging_.reset();
  }

  int rank() const override { return job_->rank(); }
  JobRole role() const override { return job_->layout().roleOf(job_->rank()); }
  std::string describe() const override { return job_->describe(); }
  uint64_t iteration() const override { return pipeline_ ? pipeline_->iteration() : 0; }
  const model::Model& model() const override { return model_; }
  const SyncUnits& syncUnits() const override { return units_; }
  const std::optional<MergePlan>& mergePlan() const override { return merge_plan_; }

  Status serve() override;
  Result<size_t> addLayer(const LayerRegistration& layer) override;
  Status start() override;
  Status gradientReady(size_t layer) override {
    POSEIDON_RETURN_IF_ERROR(running("gradientReady"));
    return pipeline_->gradientReady(layer);
  }
  Status waitForParameters(size_t layer) override {
    POSEIDON_RETURN_IF_ERROR(running("waitForParameters"));
    return pipeline_->waitForParameters(layer, Deadline::after(options_.sync_timeout));
  }
  Status endIteration() override {
    POSEIDON_RETURN_IF_ERROR(running("endIteration"));
    return pipeline_->endIteration();
  }
  Status finish() override;
  Status saveCheckpoint(const std::string& dir, std::span<const uint8_t> extra) override;
  Result<std::vector<uint8_t>> restoreCheckpoint(const std::string& dir) override;

 private:
  Status running(const char* call) const {
    if (!isWorker()) {
      return makeStatus(StatusCode::kInvalidArgument, "{} on {}: servers only serve()", call, describe());
    }
    if (!pipeline_) return makeStatus(StatusCode::kInvalidArgument, "{} before start()", call);
    return Status::ok();
  }
  Deadline startupDeadline() const { return Deadline::after(options_.startup_timeout); }
  Status startHybrid(Deadline deadline);
  Status startServerOptimized(Deadline deadline);
  Status startPipeline();
  Status saveWorkerState(const std::string& dir, std::span<const uint8_t> extra);
  Result<std::vector<uint8_t>> restoreWorkerState(const std::string& dir);
  Status checkServerCheckpointDir(const char* call, const std::string& dir) const;
  Status shareInitialParameters(Deadline deadline);
  std::vector<LayerState> layerStates();
  WorkerCheckpointIdentity checkpointIdentity() const;
  PipelineOptions pipelineOptions() const {
    PipelineOptions pipeline;
    pipeline.sync_timeout = options_.sync_timeout;
    pipeline.on_sync = options_.on_sync;
    pipeline.staging = staging_ && staging_->anyOnDevice() ? staging_.get() : nullptr;
    return pipeline;
  }
  Result<model::Model> publishedModel(Deadline deadline);
  Status createStaging();
  std::vector<std::span<float>> layerParams() const;

  const SessionOptions options_;
  std::unique_ptr<JobConnection> job_;
  std::vector<LayerRegistration> layers_;
  model::Model model_;  // the trainer's layers
  SyncUnits units_;     // the layers the schemes sync: model_'s, or merged runs of them
  std::optional<MergePlan> merge_plan_;
  std::unique_ptr<DeviceStaging> staging_;  // the host side of layers kept in GPU memory
  std::unique_ptr<LayerSync> sync_;
  HybridSync* hybrid_ = nullptr;                     // sync_ under BSP (the workers' replicas: checkpoints), else null
  ServerOptimizedSync* server_optimized_ = nullptr;  // sync_ under SSP / async, else null
  uint64_t resumed_clock_ = 0;                       // SSP / async: the servers' clock start() resumed from
  uint64_t last_saved_ = 0;                          // SSP / async: the iteration of the last save
  std::vector<LayerSource> sources_;
  std::unique_ptr<WfbpPipeline> pipeline_;
  // Directories this run's checkpoints may go to: the one it resumed from, and those it found
  // without an earlier run's files (refuseAnEarlierRunsWorkerCheckpoints) at its first save there.
  std::vector<std::filesystem::path> run_checkpoint_dirs_;
  uint64_t run_checkpoint_claims_ = 0;
  Status claimCheckpointDirectory(const std::string& dir);
};

Result<size_t> SessionImpl::addLayer(const LayerRegistration& layer) {
  if (!isWorker()) return makeStatus(StatusCode::kInvalidArgument, "addLayer on {}: servers only serve()", describe());
  if (sync_) return makeStatus(StatusCode::kInvalidArgument, "adding layer '{}' after start()", layer.name);
  for (const LayerRegistration& known : layers_) {
    if (known.name == layer.name) {
      return makeStatus(StatusCode::kInvalidArgument, "layer '{}' is registered twice (layers need unique names)",
                        layer.name);
    }
  }
  POSEIDON_RETURN_IF_ERROR(validateRegistration(layer, options_.batch));
  layers_.push_back(layer);
  return layers_.size() - 1;
}

Status SessionImpl::start() {
  if (!isWorker()) return makeStatus(StatusCode::kInvalidArgument, "start on {}: servers only serve()", describe());
  if (sync_) return makeStatus(StatusCode::kInvalidArgument, "start() called twice");
  if (layers_.empty()) return makeStatus(StatusCode::kInvalidArgument, "start() with no layer registered");
  const Deadline deadline = startupDeadline();
  std::vector<model::Layer> described;
  for (const LayerRegistration& layer : layers_) described.push_back(describeLayer(layer));
  model_ = model::Model("session", std::move(described), options_.batch);
  POSEIDON_RETURN_IF_ERROR(model_.validate());
  auto merge = agreeOnMergeUnits(*job_, model_, options_, deadline);
  if (!merge) return merge.status().withContext(describe());
  units_ = std::move(merge->units);
  merge_plan_ = std::move(merge->plan);
  if (merge_plan_ && rank() == 0) spdlog::info("{}: merged layers: {}", describe(), describeMergePlan(*merge_plan_));
  POSEIDON_RETURN_IF_ERROR(createStaging());
  // The servers build their side from worker 0's model and training setup; the workers' start-up
  // agreements (theirs here, HybridSync's and the PS's) catch a worker started otherwise.
  if (rank() == 0) {
    POSEIDON_RETURN_IF_ERROR(publishTrainingSetup(*job_, options_));
    POSEIDON_RETURN_IF_ERROR(
        transport::bootstrap::setString(job_->view(), "model", model::formatModelSpec(units_.unitModel())));
  }
  POSEIDON_RETURN_IF_ERROR(agreeOnTrainingSetup(*job_, options_, deadline).withContext(describe()));
  POSEIDON_RETURN_IF_ERROR(serverOptimized(options_.consistency) ? startServerOptimized(deadline)
                                                                 : startHybrid(deadline));
  return startPipeline();
}

Status SessionImpl::startHybrid(Deadline deadline) {
  const HybridOptions hybrid = hybridOptions(options_);
  auto schemes = schemesInUse(units_.unitModel(), hybrid);
  if (!schemes) return schemes.status();
  HybridContexts contexts;
  for (scheme::Scheme s : *schemes) {
    auto context = job_->join(s, deadline);
    if (!context) return context.status();
    switch (s) {
      case scheme::Scheme::kPs: contexts.ps = *context; break;
      case scheme::Scheme::kSfb: contexts.sfb = *context; break;
      case scheme::Scheme::kRing: contexts.ring = *context; break;
      case scheme::Scheme::kAdam: contexts.adam = *context; break;
    }
  }
  auto sync = HybridSync::start(contexts, job_->store(), units_.unitModel(), hybrid, deadline);
  if (!sync) return sync.status().withContext(describe());
  hybrid_ = sync->get();
  sync_ = std::move(*sync);
  POSEIDON_RETURN_IF_ERROR(shareInitialParameters(deadline));
  return bindUnitParams(*sync_, units_, layerParams());
}

Status SessionImpl::startServerOptimized(Deadline deadline) {
  // Resuming, this worker can go on only where it has its own state: the job takes the newest
  // clock every server and every worker has (ps/checkpoint/resume.h).
  const ServerCheckpointOptions& checkpoints = options_.server_checkpoints;
  std::optional<std::vector<uint64_t>> resumable;
  Status unreadable;  // this worker still takes part in the agreement (holding none), then says why
  if (checkpoints.resume) {
    auto listed = readWorkerCheckpointList(checkpoints.dir, static_cast<uint32_t>(rank()));
    if (!listed) unreadable = listed.status();
    resumable = listed ? std::move(*listed) : std::vector<uint64_t>{};
  }
  auto sync = startServerOptimizedSync(*job_, units_.unitModel(), options_, resumable, deadline);
  if (!sync && !unreadable.isOk()) {
    return makeStatus(sync.status().code(), "{}: {} (this worker held none: {})", describe(), sync.status().message(),
                      unreadable.message());
  }
  if (!sync) return sync.status().withContext(describe());
  if (!unreadable.isOk()) {  // no server had a checkpoint either: a fresh start, but say why
    spdlog::warn("{}: {}; it resumes with none of its own checkpoints", describe(), unreadable.toString());
  }
  ServerOptimizedSync& started = **sync;
  server_optimized_ = sync->get();
  sync_ = std::move(*sync);
  resumed_clock_ = last_saved_ = started.iteration();
  if (resumed_clock_ > 0) {
    // Files of later clocks are the crashed run's: left, a later resume could pair them with this
    // run's files of the same clock. The directory is this run's from here on.
    removeWorkerCheckpointsAfter(checkpoints.dir, static_cast<uint32_t>(rank()), resumed_clock_);
    run_checkpoint_dirs_.push_back(normalizedDirectory(checkpoints.dir));
  } else if (!checkpoints.dir.empty()) {
    // Claimed now, while the workers are in step: at the first save an async worker could be
    // far ahead of the others, and the claim waits for every worker.
    POSEIDON_RETURN_IF_ERROR(claimCheckpointDirectory(checkpoints.dir).withContext(describe()));
  }
  POSEIDON_RETURN_IF_ERROR(bindUnitParams(*sync_, units_, layerParams()));
  // Worker 0's parameters reach every worker through the servers (their initial model); a merged
  // unit's arrive in the sync's own memory, and go on to its layers' buffers.
  POSEIDON_RETURN_IF_ERROR(started.initialize(deadline).withContext(describe()));
  scatterMergedParams(*sync_, units_, layerParams());
  return Status::ok();
}

Status SessionImpl::startPipeline() {
  for (size_t l = 0; l < layers_.size(); ++l) {
    const StagedLayerBuffers& host = staging_->host(l);
    sources_.push_back(
        {host.input.data(), host.output_gradient.data(), layers_[l].feature_major, host.gradient.data(), host.params});
  }
  POSEIDON_RETURN_IF_ERROR(staging_->pushParamsToDevice(startupDeadline()));
  // A resumed SSP / async job numbers its iterations from the servers' clock.
  pipeline_ = std::make_unique<WfbpPipeline>(*sync_, units_, sources_, pipelineOptions(), sync_->iteration());
  return Status::ok();
}

std::vector<std::span<float>> SessionImpl::layerParams() const {
  // A device layer's replica lives in its pinned staging, a host layer's in the trainer's memory.
  std::vector<std::span<float>> params;
  for (size_t l = 0; l < layers_.size(); ++l) params.push_back(staging_->host(l).params);
  return params;
}

Status SessionImpl::createStaging() {
  std::vector<std::string> names;
  std::vector<StagedLayerBuffers> buffers;
  for (const LayerRegistration& r : layers_) {
    names.push_back(r.name);
    buffers.push_back({r.params, r.input, r.output_gradient, r.gradient});
  }
  DeviceStagingOptions staging;
  staging.compute_stream = options_.compute_stream;
  staging.copy_streams = options_.copy_streams;
  auto created =
      DeviceStaging::create(options_.copy_engine ? options_.copy_engine : builtinCopyEngine(), names, buffers, staging);
  if (!created) return created.status().withContext(describe());
  staging_ = std::move(*created);
  // Worker 0's parameters are shared from the host side.
  return staging_->pullParamsToHost(startupDeadline()).withContext(describe());
}

Status SessionImpl::checkServerCheckpointDir(const char* call, const std::string& dir) const {
  const std::string& servers = options_.server_checkpoints.dir;
  if (servers.empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{} under consistency {}: the parameters and the optimizer state live on the PS servers; set "
                      "SessionOptions::server_checkpoints (dir, every) so that they checkpoint them, and save each "
                      "worker's state beside them",
                      call, options_.consistency.canonical());
  }
  if (normalizedDirectory(dir) != normalizedDirectory(servers)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}('{}') under consistency {}: the workers' files go beside the servers', into "
                      "SessionOptions::server_checkpoints.dir '{}'",
                      call, dir, options_.consistency.canonical(), servers);
  }
  return Status::ok();
}

Status SessionImpl::shareInitialParameters(Deadline deadline) {
  transport::bootstrap::StoreView initial = job_->view().child("initial");
  for (size_t l = 0; l < layers_.size(); ++l) {
    std::span<float> params = staging_->host(l).params;
    const size_t bytes = params.size_bytes();
    auto* data = reinterpret_cast<uint8_t*>(params.data());
    for (size_t offset = 0, piece = 0; offset < bytes; offset += kPieceBytes, ++piece) {
      const size_t length = std::min(kPieceBytes, bytes - offset);
      const std::string key = fmt::format("{}/{}", l, piece);
      if (rank() == 0) {
        POSEIDON_RETURN_IF_ERROR(initial.set(key, std::vector<uint8_t>(data + offset, data + offset + length)));
        continue;
      }
      auto value = initial.get(key, deadline);
      if (!value)
        return value.status().withContext(fmt::format("worker 0's initial parameters of '{}'", layers_[l].name));
      if (value->size() != length) {
        return makeStatus(StatusCode::kProtocolError,
                          "worker 0's initial parameters of '{}' (piece {}): {} bytes, "
                          "expected {}",
                          layers_[l].name, piece, value->size(), length);
      }
      std::memcpy(data + offset, value->data(), length);
    }
  }
  return Status::ok();
}

Status SessionImpl::finish() {
  POSEIDON_RETURN_IF_ERROR(running("finish"));
  Status status = pipeline_->drain(Deadline::after(options_.sync_timeout));
  pipeline_.reset();
  const Deadline deadline = startupDeadline();  // after the drain, which may take its own while
  if (status.isOk()) status = sync_->finish(deadline);
  if (status.isOk()) status = job_->leave(deadline);
  // Destroying the sync stops the schemes' drivers: after a failure no sync still running may
  // write into the trainer's buffers once this returns.
  if (!status.isOk()) sync_.reset();
  return status.withContext(describe());
}

std::vector<LayerState> SessionImpl::layerStates() {
  std::vector<LayerState> states;
  // Per trainer layer whatever the merging: a merged unit's state is its layers' slices in order.
  for (size_t l = 0; l < layers_.size(); ++l) {
    const size_t unit = units_.unitOf(l), offset = units_.offsetInUnit(l), floats = units_.floats(l);
    auto slice = [&](std::span<float> state) { return state.empty() ? state : state.subspan(offset, floats); };
    states.push_back(
        {staging_->host(l).params, slice(hybrid_->optimizerState(unit, 0)), slice(hybrid_->optimizerState(unit, 1))});
  }
  return states;
}

WorkerCheckpointIdentity SessionImpl::checkpointIdentity() const {
  return {static_cast<uint32_t>(rank()), static_cast<uint32_t>(options_.layout.workers), &model_, &options_.optimizer,
          options_.consistency.canonical()};
}

// Every worker says through the store what it found, and all refuse together: one refusing alone
// would leave the others waiting on it until their sync deadline, then naming it as lost.
Status SessionImpl::claimCheckpointDirectory(const std::string& dir) {
  const std::filesystem::path path = normalizedDirectory(dir);
  if (std::find(run_checkpoint_dirs_.begin(), run_checkpoint_dirs_.end(), path) != run_checkpoint_dirs_.end()) {
    return Status::ok();
  }
  const Status mine = refuseAnEarlierRunsWorkerCheckpoints(dir, static_cast<uint32_t>(rank()));
  // Every worker claims its directories in the same order (saveCheckpoint after the same
  // endIteration()), so the claim's number names the same save on all.
  transport::bootstrap::StoreView claims =
      job_->view().child("checkpoint-claims").child(std::to_string(run_checkpoint_claims_++));
  POSEIDON_RETURN_IF_ERROR(
      transport::bootstrap::setString(claims, std::to_string(rank()), mine.isOk() ? "" : mine.message()));
  std::vector<std::string> refusals;
  for (int w = 0; w < options_.layout.workers; ++w) {
    auto theirs = transport::bootstrap::getString(claims, std::to_string(w), startupDeadline());
    if (!theirs) return theirs.status();
    if (!theirs->empty()) refusals.push_back(*theirs);
  }
  if (!refusals.empty()) return makeStatus(StatusCode::kInvalidArgument, "{}", fmt::join(refusals, "; "));
  run_checkpoint_dirs_.push_back(path);
  return Status::ok();
}

Status SessionImpl::saveCheckpoint(const std::string& dir, std::span<const uint8_t> extra) {
  POSEIDON_RETURN_IF_ERROR(running("saveCheckpoint"));
  if (server_optimized_ != nullptr) return saveWorkerState(dir, extra).withContext(describe());
  POSEIDON_RETURN_IF_ERROR(claimCheckpointDirectory(dir).withContext(describe()));
  // The syncs of the iterations ended so far complete first: the file holds their updates.
  POSEIDON_RETURN_IF_ERROR(pipeline_->drain(Deadline::after(options_.sync_timeout)));
  const std::vector<LayerState> states = layerStates();
  const uint64_t iteration = hybrid_->iteration();
  const auto rank = static_cast<uint32_t>(this->rank());
  POSEIDON_RETURN_IF_ERROR(
      writeWorkerCheckpoint(dir, checkpointIdentity(), iteration, extra, states).withContext(describe()));
  removeWorkerCheckpoints(dir, rank, checkpointsToRemove(listWorkerCheckpoints(dir, rank), iteration, 2));
  return Status::ok();
}

// SSP / async: the servers write the weights at the clocks of server_checkpoints.every themselves;
// the worker adds its trainer's state at the same clock.
Status SessionImpl::saveWorkerState(const std::string& dir, std::span<const uint8_t> extra) {
  POSEIDON_RETURN_IF_ERROR(checkServerCheckpointDir("saveCheckpoint", dir));
  const uint64_t iteration = pipeline_->iteration(), every = options_.server_checkpoints.every;
  if (every == 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "saveCheckpoint under consistency {}: SessionOptions::server_checkpoints.every is 0, so the "
                      "servers write no checkpoint this one could go with",
                      options_.consistency.canonical());
  }
  if (iteration == 0 || iteration % every != 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "saveCheckpoint after iteration {} under consistency {}: the servers checkpoint every {} "
                      "clocks (SessionOptions::server_checkpoints.every), so save after iterations {}, {}, ...",
                      iteration, options_.consistency.canonical(), every, every, 2 * every);
  }
  // This worker's pushes up to the clock are applied first: an async worker that died right after
  // its file would otherwise leave the servers' checkpoint of the clock without them (they stop
  // waiting for a lost worker), and the resumed job would never apply them.
  POSEIDON_RETURN_IF_ERROR(pipeline_->drain(Deadline::after(options_.sync_timeout)));
  const auto rank = static_cast<uint32_t>(this->rank());
  POSEIDON_RETURN_IF_ERROR(writeWorkerCheckpoint(dir, checkpointIdentity(), iteration, extra, {}));
  if (last_saved_ + every < iteration) {
    spdlog::warn(
        "{}: saved after iteration {}, but not after {} (every {}): the job resumes only from clocks "
        "every worker saved",
        describe(), iteration, iteration - every, every);
  }
  last_saved_ = iteration;
  // The job resumes from the newest clock every server and every worker has. Every server wrote
  // the committed clock, but a peer may have crashed before its file of it: its file of an
  // earlier clock must still find this worker's, as the servers keep `keep` up to that clock.
  const uint64_t floor = std::min(iteration, server_optimized_->committedCheckpoint());
  removeWorkerCheckpoints(dir, rank,
                          checkpointsToRemove(listWorkerCheckpoints(dir, rank), floor,
                                              static_cast<size_t>(options_.server_checkpoints.keep)));
  return Status::ok();
}

Result<std::vector<uint8_t>> SessionImpl::restoreCheckpoint(const std::string& dir) {
  POSEIDON_RETURN_IF_ERROR(running("restoreCheckpoint"));
  if (server_optimized_ != nullptr) {
    POSEIDON_RETURN_IF_ERROR(checkServerCheckpointDir("restoreCheckpoint", dir).withContext(describe()));
  }
  if (pipeline_->anyReported() || sync_->iteration() != resumed_clock_) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "restoreCheckpoint after training began (a layer was reported): restore right after start()");
  }
  if (server_optimized_ != nullptr) return restoreWorkerState(dir);
  transport::bootstrap::StoreView resume = job_->view().child("resume");
  auto iteration = agreeOnWorkerCheckpoint(resume, dir, rank(), options_.layout.workers, startupDeadline());
  if (!iteration) return iteration.status().withContext(describe());
  const std::vector<LayerState> states = layerStates();
  auto restored = readWorkerCheckpoint(dir, checkpointIdentity(), *iteration, states);
  if (!restored) return restored.status().withContext(describe());
  // Files of later iterations are another run's (written before the crash this resumes from):
  // left, they could be paired with this run's files of the same iteration after the next crash.
  removeWorkerCheckpointsAfter(dir, static_cast<uint32_t>(rank()), *iteration);
  run_checkpoint_dirs_.push_back(normalizedDirectory(dir));
  gatherMergedParams(*sync_, units_, layerParams());
  POSEIDON_RETURN_IF_ERROR(staging_->pushParamsToDevice(startupDeadline()).withContext(describe()));
  // A fresh pipeline numbers its syncs from the restored iteration.
  pipeline_.reset();
  const Status set = hybrid_->setIteration(restored->iteration);
  pipeline_ =
      std::make_unique<WfbpPipeline>(*sync_, units_, sources_, pipelineOptions(), set.isOk() ? restored->iteration : 0);
  POSEIDON_RETURN_IF_ERROR(set);
  return std::move(restored->extra);
}

// SSP / async: start() resumed the servers and this worker at the newest clock every rank has;
// the worker's file of that clock holds its trainer's state.
Result<std::vector<uint8_t>> SessionImpl::restoreWorkerState(const std::string& dir) {
  if (!options_.server_checkpoints.resume) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}: restoreCheckpoint under consistency {} without SessionOptions::server_checkpoints.resume: "
                      "the job resumes at start(), so set resume on every rank",
                      describe(), options_.consistency.canonical());
  }
  if (resumed_clock_ == 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}: no server had a checkpoint in '{}' to resume from, so the job started from clock 0",
                      describe(), dir);
  }
  auto restored = readWorkerCheckpoint(dir, checkpointIdentity(), resumed_clock_, {});
  if (!restored) return restored.status().withContext(describe());
  return std::move(restored->extra);
}

Result<model::Model> SessionImpl::publishedModel(Deadline deadline) {
  auto spec = transport::bootstrap::getString(job_->view(), "model", deadline);
  if (!spec) return spec.status().withContext("worker 0's model");
  auto model = model::parseModelSpec(*spec);
  if (!model) return model.status().withContext("worker 0's model");
  return model;
}

Status SessionImpl::serve() {
  if (isWorker()) return makeStatus(StatusCode::kInvalidArgument, "serve() on {}: workers train", describe());
  const Deadline deadline = startupDeadline();
  auto model = publishedModel(deadline);
  if (!model) return model.status().withContext(describe());
  model_ = std::move(*model);
  const Deadline done = Deadline::after(options_.serve_timeout);
  Status status;
  std::vector<int> lost_ranks;  // the workers an async server went on without (job ranks = worker indices)
  if (role() == JobRole::kPsServer) {
    auto setup = publishedTrainingSetup(*job_, deadline);
    if (!setup) return setup.status().withContext(describe());
    auto server = startPsServer(*job_, model_.layers(), options_, *setup, deadline);
    if (!server) return server.status().withContext(describe());
    status = (*server)->waitUntilDone(done);
    if (status.isOk()) lost_ranks = (*server)->lostWorkers();
  } else {
    auto context = job_->join(scheme::Scheme::kAdam, deadline);
    if (!context) return context.status();
    std::vector<model::Layer> fc_layers;
    for (size_t l : model_.fcLayers()) fc_layers.push_back(model_.layers()[l]);
    auto server =
        adam::AdamServer::start(**context, job_->store(), fc_layers, model_.batch(), options_.layout.workers, deadline);
    if (!server) return server.status().withContext(describe());
    status = (*server)->waitUntilDone(done);
  }
  if (status.isOk()) status = job_->leave(startupDeadline(), lost_ranks);
  return status.withContext(describe());
}

}  // namespace

Result<std::unique_ptr<Session>> Session::join(const SessionOptions& options) {
  auto launch = transport::bootstrap::detectLaunch();
  if (!launch) return launch.status();
  return join(options, *launch);
}

Result<std::unique_ptr<Session>> Session::join(const SessionOptions& options,
                                               const transport::bootstrap::LaunchInfo& launch) {
  POSEIDON_RETURN_IF_ERROR(validateOptions(options));
  auto job = JobConnection::open(options.job, options.layout, launch, options.device,
                                 Deadline::after(options.startup_timeout));
  if (!job) return job.status();
  return std::unique_ptr<Session>(std::make_unique<SessionImpl>(options, std::move(*job)));
}

}  // namespace poseidon::trainer
