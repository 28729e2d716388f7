// What worker 0 writes into --out as it trains: metrics.csv (a row per iteration), epochs.csv (a
// row per evaluation of the test set) and, at the end, summary.json; and the bytes this worker
// has sent per scheme, counted from the library's sync records.
//
// The loss and the train accuracy are worker 0's own batch's (every worker's batch is a slice of
// the same global batch, drawn alike); the test accuracy is worker 0's replica's, which every
// replica equals bit for bit, so one worker's evaluation is the job's.
#pragma once

#include <optional>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "scheme/scheme.h"
#include "tools/train/train_options.h"
#include "trainer/timeline/csv_log.h"
#include "trainer/wfbp/merge_plan.h"
#include "trainer/wfbp/pipeline.h"

namespace poseidon::tools {

inline constexpr scheme::Scheme kReportedSchemes[] = {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kRing,
                                                      scheme::Scheme::kAdam};

// Bytes sent per scheme so far; add() runs on the library's thread, the rest anywhere.
class SchemeBytes {
 public:
  void add(const trainer::SyncRecord& record) {
    sent_[static_cast<size_t>(record.scheme)].fetch_add(record.bytes_sent, std::memory_order_relaxed);
  }
  uint64_t sent(scheme::Scheme s) const { return sent_[static_cast<size_t>(s)].load(std::memory_order_relaxed); }
  // "PS 12.3 MB  SFB 4.5 MB" (schemes that sent nothing left out)
  std::string describe() const;

 private:
  std::array<std::atomic<uint64_t>, 4> sent_{};
};

struct EpochResult {
  uint64_t epoch = 0;  // 1-based; the run's last, partial one when --max-steps cut it
  double seconds = 0;  // since training started
  uint64_t correct = 0;
  uint64_t total = 0;
  double accuracy() const { return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total); }
};

struct RunTotals {
  uint64_t iterations = 0;
  double seconds = 0;        // wall time of the training loop, evaluations included
  double train_seconds = 0;  // the same without the evaluations
  double sync_overlap = 0;   // TrainTimeline::syncOverlapWithBackward() of worker 0
  double imagesPerSecond(uint64_t global_batch) const {
    return train_seconds > 0 ? static_cast<double>(iterations * global_batch) / train_seconds : 0.0;
  }
};

class RunOutputs {
 public:
  static Result<RunOutputs> create(const TrainCommandLine& c, const SchemeBytes& bytes);

  Status iteration(uint64_t iteration, double seconds, double loss, double train_accuracy, double images_per_s);
  Status epoch(const EpochResult& result);
  // summary.json: the last evaluation, the totals, the bytes and the options.
  // With merged gradients, the plan and its predicted times too ("merge_plan").
  Status summary(const EpochResult& last, const RunTotals& totals, const std::optional<trainer::MergePlan>& plan) const;

 private:
  RunOutputs(const TrainCommandLine& c, const SchemeBytes& bytes, trainer::timeline::CsvLog metrics,
             trainer::timeline::CsvLog epochs);

  const TrainCommandLine* c_;
  const SchemeBytes* bytes_;
  trainer::timeline::CsvLog metrics_;
  trainer::timeline::CsvLog epochs_;
};

// <out>/<name>
std::string outPath(const TrainCommandLine& c, const std::string& name);

}  // namespace poseidon::tools
