#include "tools/train/worker_loop.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>
#include <vector>

#include "tools/train/batch_reader.h"
#include "tools/train/evaluate.h"
#include "tools/train/progress.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/network_session.h"
#include "trainer/timeline/chrome_trace.h"

namespace poseidon::tools {

namespace {

using trainer::data::Position;
using trainer::reference::Network;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The loop's state and worker 0's books.
class Trainer {
 public:
  Trainer(const WorkerRun& run, Network network, BatchReader reader)
      : run_(run),
        c_(*run.c),
        session_(*run.session),
        network_(std::move(network)),
        reader_(std::move(reader)),
        fresh_(network_.parametricCount(), false),
        progress_(std::max<uint64_t>(reader_.sharder().stepsPerEpoch() / 20, 1)) {}

  Status run();

 private:
  bool bookkeeper() const { return session_.rank() == 0; }
  void setHooks();
  Status step(Position position);
  Status waitForEveryLayer();
  Status evaluateAndLog(uint64_t epoch);
  Status writeTimelines();
  void mergeTimelines();

  const WorkerRun& run_;
  const TrainCommandLine& c_;
  trainer::Session& session_;
  Network network_;
  BatchReader reader_;
  // Layers whose parameters were waited for outside the hooks (before an evaluation): the next
  // forward must not wait again, as no sync was reported in between.
  std::vector<bool> fresh_;
  ProgressLine progress_;
  std::optional<RunOutputs> outputs_;
  Clock::time_point start_{};
  std::filesystem::file_time_type files_since_{};  // older timeline files are an earlier run's
  double eval_seconds_ = 0;
  uint64_t first_iteration_ = 0;
  EpochResult last_;
};

void Trainer::setHooks() {
  TrainTimeline& timeline = *run_.timeline;
  trainer::reference::NetworkHooks inner = trainer::reference::sessionHooks(
      session_, [&timeline](trainer::reference::HookPhase phase, size_t l) { timeline.observe(phase, l); });
  trainer::reference::NetworkHooks hooks = inner;
  hooks.before_forward = [this, &timeline, wait = inner.before_forward](size_t l) {
    if (!fresh_[l]) return wait(l);
    fresh_[l] = false;
    timeline.observe(trainer::reference::HookPhase::kWaitBegin, l);
    timeline.observe(trainer::reference::HookPhase::kWaitEnd, l);
    return Status::ok();
  };
  network_.setHooks(std::move(hooks));
}

Status Trainer::waitForEveryLayer() {
  for (size_t l = 0; l < network_.parametricCount(); ++l) {
    if (fresh_[l]) continue;
    POSEIDON_RETURN_IF_ERROR(session_.waitForParameters(l));
    fresh_[l] = true;
  }
  return Status::ok();
}

Status Trainer::step(Position position) {
  const uint64_t iteration = session_.iteration();
  run_.timeline->beginIteration(iteration);
  POSEIDON_RETURN_IF_ERROR(reader_.read(position));
  auto loss = network_.forward(reader_.images(), reader_.labels());
  if (!loss) return loss.status();
  run_.timeline->endForward();
  run_.timeline->beginBackward();
  POSEIDON_RETURN_IF_ERROR(network_.backward());
  POSEIDON_RETURN_IF_ERROR(session_.endIteration());
  if (!bookkeeper()) return Status::ok();
  const double seconds = secondsSince(start_), train_seconds = seconds - eval_seconds_;
  const RunTotals totals{session_.iteration() - first_iteration_, seconds, train_seconds};
  const double images_per_s = totals.imagesPerSecond(c_.globalBatch());
  const double accuracy = static_cast<double>(loss->correct) / static_cast<double>(c_.batch);
  POSEIDON_RETURN_IF_ERROR(outputs_->iteration(iteration + 1, seconds, loss->loss, accuracy, images_per_s));
  progress_.update({position.epoch + 1, c_.epochs, position.step + 1, reader_.sharder().stepsPerEpoch(), loss->loss,
                    images_per_s, run_.bytes->describe()});
  return Status::ok();
}

Status Trainer::evaluateAndLog(uint64_t epoch) {
  const Clock::time_point began = Clock::now();
  auto accuracy = evaluate(network_, *run_.test);
  setHooks();
  if (!accuracy) return accuracy.status().withContext("evaluating the test set");
  eval_seconds_ += secondsSince(began);
  last_ = {epoch, secondsSince(start_), accuracy->correct, accuracy->total};
  progress_.print(
      fmt::format("epoch {}: test accuracy {:.4f} ({}/{})", epoch, last_.accuracy(), last_.correct, last_.total));
  return outputs_->epoch(last_);
}

Status Trainer::writeTimelines() {
  return run_.timeline->write(outPath(c_, fmt::format("timeline-worker{}.json", session_.rank())));
}

Status Trainer::run() {
  if (bookkeeper()) {
    auto outputs = RunOutputs::create(c_, *run_.bytes);
    if (!outputs) return outputs.status();
    outputs_.emplace(std::move(*outputs));
  }
  POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session_, network_));
  POSEIDON_RETURN_IF_ERROR(session_.start());
  const trainer::data::EpochSharder& sharder = reader_.sharder();
  Position position;
  if (c_.resume) {
    auto extra = session_.restoreCheckpoint(c_.checkpoint_dir);
    if (!extra) return extra.status().withContext(fmt::format("--resume from '{}'", c_.checkpoint_dir));
    auto restored = sharder.restore(*extra);
    if (!restored) return restored.status().withContext(fmt::format("the data position in '{}'", c_.checkpoint_dir));
    position = *restored;
  }
  setHooks();
  first_iteration_ = session_.iteration();
  start_ = Clock::now();
  files_since_ = std::filesystem::file_time_type::clock::now();
  const auto more = [&](Position at) {
    return at.epoch < c_.epochs && (c_.max_steps == 0 || session_.iteration() < c_.max_steps);
  };
  while (more(position)) {
    POSEIDON_RETURN_IF_ERROR(step(position));
    const Position next = sharder.next(position);
    if (c_.checkpoint_every > 0 && session_.iteration() % c_.checkpoint_every == 0) {
      POSEIDON_RETURN_IF_ERROR(session_.saveCheckpoint(c_.checkpoint_dir, sharder.save(next)));
    }
    // An epoch's evaluation; the run's last one comes after finish(), when no worker waits for it.
    if (bookkeeper() && next.epoch != position.epoch && more(next)) {
      POSEIDON_RETURN_IF_ERROR(waitForEveryLayer());
      POSEIDON_RETURN_IF_ERROR(evaluateAndLog(next.epoch));
    }
    position = next;
  }
  POSEIDON_RETURN_IF_ERROR(waitForEveryLayer());
  // Written before finish(): its last barrier then tells worker 0 that every file is there.
  POSEIDON_RETURN_IF_ERROR(writeTimelines());
  RunTotals totals{session_.iteration() - first_iteration_, secondsSince(start_), secondsSince(start_) - eval_seconds_};
  POSEIDON_RETURN_IF_ERROR(session_.finish());
  if (!bookkeeper()) return Status::ok();
  auto overlap = run_.timeline->syncOverlapWithBackward();
  if (!overlap) return overlap.status().withContext("the timeline's overlap of syncs with backward");
  totals.sync_overlap = *overlap;
  // The epoch the run ended in: the one just completed, or the one --max-steps cut short.
  POSEIDON_RETURN_IF_ERROR(evaluateAndLog(position.step == 0 ? position.epoch : position.epoch + 1));
  POSEIDON_RETURN_IF_ERROR(outputs_->summary(last_, totals, session_.mergePlan()));
  mergeTimelines();
  progress_.print(fmt::format(
      "done: {} steps, {:.1f} s, {:.0f} images/s, test accuracy {:.4f}, {:.0f} % of sync time under backward; "
      "outputs in {}",
      totals.iterations, totals.seconds, totals.imagesPerSecond(c_.globalBatch()), last_.accuracy(),
      100 * totals.sync_overlap, c_.out_dir));
  return Status::ok();
}

// The workers' timelines as one file, of those this run wrote here: workers on other hosts keep
// theirs there, and an async job may have gone on without a lost worker (whose file, if any, is
// an earlier run's).
void Trainer::mergeTimelines() {
  std::vector<std::string> files;
  std::vector<std::string> left_out;
  for (int w = 0; w < c_.workers; ++w) {
    std::string file = outPath(c_, fmt::format("timeline-worker{}.json", w));
    std::error_code error;
    const auto written = std::filesystem::last_write_time(file, error);
    if (error) {
      left_out.push_back(fmt::format("worker {} ({})", w, error.message()));
    } else if (written < files_since_) {
      left_out.push_back(fmt::format("worker {} (its file is older than this run)", w));
    } else {
      files.push_back(std::move(file));
    }
  }
  if (!left_out.empty()) {
    progress_.print(
        fmt::format("timeline.json leaves out {}: no timeline-worker<N>.json of this run in {} (on "
                    "another host, or lost)",
                    fmt::join(left_out, ", "), c_.out_dir));
  }
  if (Status merged = trainer::timeline::mergeChromeTraceFiles(files, outPath(c_, "timeline.json")); !merged) {
    progress_.print(fmt::format("timeline.json not written: {}", merged.toString()));
  }
}

}  // namespace

Status runWorker(const WorkerRun& run) {
  const TrainCommandLine& c = *run.c;
  auto network = trainer::reference::buildFashionCnn(c.batch, c.seed);
  if (!network) return network.status();
  auto reader = BatchReader::create(
      *run.train, {c.seed, static_cast<uint32_t>(c.workers), static_cast<uint32_t>(run.session->rank()), c.batch});
  if (!reader) return reader.status();
  Trainer trainer(run, std::move(*network), std::move(*reader));
  return trainer.run();
}

}  // namespace poseidon::tools
