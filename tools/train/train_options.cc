#include "tools/train/train_options.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "ps/checkpoint/durable_file.h"
#include "tools/ps/job_process.h"
#include "trainer/api/worker_checkpoint.h"
#include "trainer/data/fashion_mnist.h"

#include "trainer/reference/fashion_cnn.h"

namespace poseidon::tools {

namespace {

// The four files the run reads, so a wrong --data-dir fails before any rank waits for another.
std::string checkDataDir(const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return fmt::format(
        "--data-dir '{}': no such directory, expected Fashion-MNIST's gzip IDX files there "
        "(Debian's dataset-fashion-mnist installs them in {})",
        dir, trainer::data::kFashionMnistDefaultDir);
  }
  using trainer::data::Split;
  for (Split split : {Split::kTrain, Split::kTest}) {
    for (const std::string& path :
         {trainer::data::fashionMnistImagesPath(dir, split), trainer::data::fashionMnistLabelsPath(dir, split)}) {
      if (!std::filesystem::is_regular_file(path, error)) {
        return fmt::format("--data-dir '{}': '{}' is missing, expected Fashion-MNIST's gzip IDX files", dir, path);
      }
    }
  }
  return {};
}

trainer::HybCommOptions hybcommOptions(const TrainCommandLine& c) {
  trainer::HybCommOptions options;
  const std::pair<const char*, scheme::Scheme> fixed[] = {
      {"ps", scheme::Scheme::kPs}, {"sfb", scheme::Scheme::kSfb}, {"ring", scheme::Scheme::kRing}};
  for (const auto& [name, s] : fixed) {
    if (c.hybcomm == name) {
      options.mode = trainer::HybCommMode::kFixed;
      options.fixed = s;
    }
  }
  if (c.hybcomm == "adaptive") {
    options.mode = trainer::HybCommMode::kAdaptive;
    if (c.adam_servers > 0) options.candidates.push_back(scheme::Scheme::kAdam);
  }
  return options;
}

}  // namespace

void addTrainOptions(CLI::App& app, TrainCommandLine& c) {
  app.add_option("--workers", c.workers, "Worker ranks P1 (ranks 0..P1-1; default 4)")
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  app.add_option("--ps-servers", c.ps_servers, "Parameter-server ranks P2 (after the workers; default 2)")
      ->type_name("N")
      ->check(CLI::Range(1, 64));
  app.add_option("--adam-servers", c.adam_servers,
                 "Adam-style servers (last ranks; default 0). Only with --hybcomm adaptive, which then times Adam too")
      ->type_name("N")
      ->check(CLI::Range(0, 64));
  app.add_option("--batch", c.batch, "K: images per worker per step (default 16; the global batch is P1 x K)")
      ->type_name("K");
  app.add_option("--epochs", c.epochs, "Passes over the training set (default 3)")->type_name("N");
  app.add_option("--optimizer", c.optimizer_spec,
                 fmt::format("Every worker's step on the mean gradient (kernels/optimizer_config.h; default {} with "
                             "max_steps = the run's steps; under ssp:<s> with s > 0 and async, where stale gradients "
                             "add momentum, {})",
                             kDefaultTrainOptimizer, kDefaultStaleTrainOptimizer))
      ->type_name("SPEC");
  app.add_option("--hybcomm", c.hybcomm,
                 "How each layer is synchronised: closed (the papers' closed form, default), adaptive (measured), or "
                 "one scheme for every layer it applies to: ps, sfb, ring")
      ->type_name("MODE");
  app.add_option("--merge", c.merge,
                 "MG-WFBP: off (default), planned (each worker times its backward pass on its first batches, worker "
                 "0 probes its link and plans), or fixed:<groups> (positions from the output layer: fixed:0,1,2-3 "
                 "merges conv1 and conv2)")
      ->type_name("MODE");
  app.add_flag("--priority,!--no-priority", c.priority,
               "PS chunks of the layers nearest the input go first, pushes and the servers' answers (default on; "
               "--no-priority: in the order they became ready)");
  app.add_option("--consistency", c.consistency_spec,
                 "bsp (default: HybComm, the optimizer on the workers), ssp:<staleness> or "
                 "async[:push=<n>,fetch=<n>] (every layer through the PS, the optimizer on its servers; needs "
                 "--hybcomm ps)")
      ->type_name("MODE");
  app.add_option("--seed", c.seed,
                 "Initial parameters (worker 0's reach every worker) and the data's shuffle (default 1)")
      ->type_name("N");
  app.add_option("--data-dir", c.data_dir,
                 fmt::format("Fashion-MNIST's gzip IDX files (default $POSEIDON_FASHION_MNIST_DIR, else {})",
                             trainer::data::kFashionMnistDefaultDir))
      ->type_name("DIR");
  app.add_option("--out", c.out_dir,
                 "Where the outputs go: timeline*.json, metrics.csv, epochs.csv, summary.json (default train-out)")
      ->type_name("DIR");
  app.add_option("--backend", c.backend, "Transport: tcp (default) or verbs")->type_name("NAME");
  app.add_option("--address", c.address,
                 "Address this rank listens on and advertises (default: this host's address on the route to rank 0)")
      ->type_name("ADDRESS");
  app.add_option("--secret", c.secret, "The job's shared secret (default $POSEIDON_SECRET)")->type_name("SECRET");
  app.add_option("--timeout", c.timeout_s, "Seconds any one wait for a peer may take (default 60)")
      ->type_name("SECONDS");
  app.add_option("--blas-threads", c.blas_threads, "OpenBLAS threads per worker (default 1)")->type_name("N");
  app.add_option("--max-steps", c.max_steps, "Stop after this many steps in all (default 0: every epoch's)")
      ->type_name("N");
  app.add_option("--timeline-steps", c.timeline_steps,
                 "Steps the timeline records from the start (default 1000; 0: none)")
      ->type_name("N");
  app.add_option("--checkpoint-dir", c.checkpoint_dir, "Where checkpoints are written and resumed from")
      ->type_name("DIR");
  app.add_option("--checkpoint-every", c.checkpoint_every,
                 "Write a checkpoint every N steps (default 0: never); under SSP / async the PS servers write the "
                 "model's, the workers their data positions")
      ->type_name("N");
  app.add_flag("--resume", c.resume, "Start from the checkpoint in --checkpoint-dir");
}

std::string checkTrainOptions(TrainCommandLine& c, const char* environment_secret) {
  if (c.batch < 1 || c.batch > 4096) return fmt::format("--batch {}: expected an integer from 1 to 4096", c.batch);
  if (c.epochs < 1 || c.epochs > 1000) return fmt::format("--epochs {}: expected an integer from 1 to 1000", c.epochs);
  if (c.timeout_s < 1 || c.timeout_s > 86400) {
    return fmt::format("--timeout {}: expected seconds from 1 to 86400", c.timeout_s);
  }
  if (c.blas_threads < 1 || c.blas_threads > 256) {
    return fmt::format("--blas-threads {}: expected an integer from 1 to 256", c.blas_threads);
  }
  if (c.backend != "tcp" && c.backend != "verbs")
    return fmt::format("--backend '{}': expected tcp or verbs", c.backend);
  if (std::find(std::begin(kHybCommModes), std::end(kHybCommModes), c.hybcomm) == std::end(kHybCommModes)) {
    return fmt::format("--hybcomm '{}': expected closed, adaptive, ps, sfb or ring", c.hybcomm);
  }
  if (c.adam_servers > 0 && c.hybcomm != "adaptive") {
    return fmt::format("--adam-servers {}: only --hybcomm adaptive can pick the Adam-style scheme (it is '{}')",
                       c.adam_servers, c.hybcomm);
  }
  if (c.globalBatch() > trainer::data::kFashionMnistTrainCount) {
    return fmt::format("--workers {} x --batch {} = {} images per step: expected at most the {} training images",
                       c.workers, c.batch, c.globalBatch(), trainer::data::kFashionMnistTrainCount);
  }
  auto consistency = ps::parseConsistency(c.consistency_spec);
  if (!consistency) return fmt::format("--consistency '{}': {}", c.consistency_spec, consistency.status().message());
  c.consistency = *consistency;
  if (c.optimizer_spec.empty()) {
    const uint64_t steps_per_epoch = trainer::data::kFashionMnistTrainCount / std::max<uint64_t>(c.globalBatch(), 1);
    const bool stale = c.consistency.mode == ps::Consistency::Mode::kAsync ||
                       (c.consistency.mode == ps::Consistency::Mode::kSsp && c.consistency.staleness > 0);
    c.optimizer_spec = fmt::format("{},max_steps={}", stale ? kDefaultStaleTrainOptimizer : kDefaultTrainOptimizer,
                                   c.epochs * steps_per_epoch);
  }
  auto optimizer = kernels::parseOptimizer(c.optimizer_spec);
  if (!optimizer) return fmt::format("--optimizer '{}': {}", c.optimizer_spec, optimizer.status().message());
  if (optimizer->sum_only) {
    return fmt::format("--optimizer '{}': expected an optimizer that updates the model (sgd, adagrad, adam)",
                       c.optimizer_spec);
  }
  c.optimizer = *optimizer;
  c.hybcomm_options = hybcommOptions(c);
  auto merge = trainer::parseMergeMode(c.merge);
  if (!merge) return fmt::format("--merge: {}", merge.status().message());
  c.merge_options = std::move(*merge);
  if (c.merge_options.mode == trainer::MergeOptions::Mode::kFixed) {
    auto units = trainer::planMergeUnits(trainer::reference::fashionCnnModel(c.batch), c.merge_options);
    if (!units) return fmt::format("--merge {}: {}", c.merge, units.status().message());
  }
  if (c.merge_options.mode == trainer::MergeOptions::Mode::kPlanned && c.workers < 2) {
    return "--merge planned: one worker has no link to probe for the message cost";
  }
  if (c.consistency.mode != ps::Consistency::Mode::kBsp) {
    if (c.hybcomm != "ps") {
      return fmt::format("--consistency {} sends every layer through the PS: expected --hybcomm ps, not '{}'",
                         c.consistency.canonical(), c.hybcomm);
    }
  }
  if ((c.checkpoint_every > 0 || c.resume) && c.checkpoint_dir.empty()) {
    return fmt::format("{} needs --checkpoint-dir", c.resume ? "--resume" : "--checkpoint-every");
  }
  if (std::error_code error; c.resume && !std::filesystem::is_directory(c.checkpoint_dir, error)) {
    return fmt::format("--resume: --checkpoint-dir '{}' is not a directory, so there is nothing to resume from",
                       c.checkpoint_dir);
  }
  if (c.checkpoint_every > 0) {
    // Checked now, not at the first checkpoint an epoch into the run.
    if (Status writable = ps::checkWritableDirectory(c.checkpoint_dir); !writable) {
      return fmt::format("--checkpoint-dir: {}", writable.message());
    }
    // The Session refuses as much at the first checkpoint (trainer/api/session.h): said now too.
    for (int rank = 0; !c.resume && rank < c.workers; ++rank) {
      const Status earlier =
          trainer::refuseAnEarlierRunsWorkerCheckpoints(c.checkpoint_dir, static_cast<uint32_t>(rank));
      if (!earlier) return fmt::format("--checkpoint-dir without --resume: {}", earlier.message());
    }
  }
  if (c.out_dir.empty()) return "--out '': expected a directory";
  if (c.data_dir.empty()) c.data_dir = trainer::data::fashionMnistDir();
  if (std::string error = checkDataDir(c.data_dir); !error.empty()) return error;
  if (c.secret.empty() && environment_secret != nullptr) c.secret = environment_secret;
  return {};
}

std::string checkLaunchFitsLayout(const TrainCommandLine& c, const transport::bootstrap::LaunchInfo& launch) {
  const trainer::JobLayout layout = c.layout();
  if (launch.size == layout.size()) return {};
  return fmt::format(
      "the {} launch environment says the job has {} ranks (POSEIDON_SIZE), but --workers {} + "
      "--ps-servers {} + --adam-servers {} = {} ranks ({})",
      launch.source, launch.size, c.workers, c.ps_servers, c.adam_servers, layout.size(), layout.describe());
}

trainer::SessionOptions sessionOptions(const TrainCommandLine& c, const std::string& address) {
  trainer::SessionOptions options;
  options.job = "train";
  options.layout = c.layout();
  options.batch = c.batch;
  options.optimizer = c.optimizer;
  options.hybcomm = c.hybcomm_options;
  options.merge = c.merge_options;
  options.push.priority = c.priority;
  options.consistency = c.consistency;
  options.device.backend = c.backend;
  options.device.address = address;
  options.device.secret = c.secret;
  options.startup_timeout = std::chrono::seconds(c.timeout_s);
  options.sync_timeout = std::chrono::seconds(c.timeout_s);
  // SSP / async: the servers hold the model and checkpoint it every --checkpoint-every steps; the
  // workers' saves (their data positions) go beside.
  if (c.consistency.mode != ps::Consistency::Mode::kBsp && (c.checkpoint_every > 0 || c.resume)) {
    options.server_checkpoints.dir = c.checkpoint_dir;
    options.server_checkpoints.every = c.checkpoint_every;
    options.server_checkpoints.resume = c.resume;
  }
  return options;
}

Result<std::string> listenAddress(const TrainCommandLine& c, const transport::bootstrap::LaunchInfo& launch) {
  if (!c.address.empty()) return c.address;
  return addressTowardsStore(launch);
}

}  // namespace poseidon::tools
