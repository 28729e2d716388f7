#include "tools/train/run_outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::tools {

namespace {

// "ps_bytes", "sfb_bytes", ...: the CSV's and the summary's name of a scheme's bytes.
std::string bytesColumn(scheme::Scheme s) {
  std::string name(scheme::schemeName(s));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return name + "_bytes";
}

nlohmann::json optionsJson(const TrainCommandLine& c) {
  return {{"workers", c.workers},
          {"ps_servers", c.ps_servers},
          {"adam_servers", c.adam_servers},
          {"batch", c.batch},
          {"global_batch", c.globalBatch()},
          {"epochs", c.epochs},
          {"optimizer", c.optimizer_spec},
          {"hybcomm", c.hybcomm},
          {"merge", c.merge},
          {"consistency", c.consistency.canonical()},
          {"seed", c.seed},
          {"data_dir", c.data_dir},
          {"backend", c.backend},
          {"timeout_s", c.timeout_s},
          {"blas_threads", c.blas_threads},
          {"max_steps", c.max_steps},
          {"checkpoint_dir", c.checkpoint_dir},
          {"checkpoint_every", c.checkpoint_every},
          {"resume", c.resume}};
}

}  // namespace

std::string SchemeBytes::describe() const {
  std::string text;
  for (scheme::Scheme s : kReportedSchemes) {
    if (sent(s) == 0) continue;
    text += fmt::format("{}{} {:.1f} MB", text.empty() ? "" : "  ", scheme::schemeName(s),
                        static_cast<double>(sent(s)) / 1e6);
  }
  return text.empty() ? "nothing sent" : text;
}

std::string outPath(const TrainCommandLine& c, const std::string& name) { return c.out_dir + "/" + name; }

RunOutputs::RunOutputs(const TrainCommandLine& c, const SchemeBytes& bytes, trainer::timeline::CsvLog metrics,
                       trainer::timeline::CsvLog epochs)
    : c_(&c), bytes_(&bytes), metrics_(std::move(metrics)), epochs_(std::move(epochs)) {}

Result<RunOutputs> RunOutputs::create(const TrainCommandLine& c, const SchemeBytes& bytes) {
  std::vector<std::string> columns = {"iteration", "seconds", "loss", "train_accuracy", "images_per_s"};
  for (scheme::Scheme s : kReportedSchemes) columns.push_back(bytesColumn(s));
  auto metrics = trainer::timeline::CsvLog::create(outPath(c, "metrics.csv"), std::move(columns));
  if (!metrics) return metrics.status();
  auto epochs = trainer::timeline::CsvLog::create(outPath(c, "epochs.csv"),
                                                  {"epoch", "seconds", "test_accuracy", "test_correct", "test_total"});
  if (!epochs) return epochs.status();
  return RunOutputs(c, bytes, std::move(*metrics), std::move(*epochs));
}

Status RunOutputs::iteration(uint64_t iteration, double seconds, double loss, double train_accuracy,
                             double images_per_s) {
  std::array<double, 5 + std::size(kReportedSchemes)> row = {static_cast<double>(iteration), seconds, loss,
                                                             train_accuracy, images_per_s};
  for (size_t i = 0; i < std::size(kReportedSchemes); ++i) {
    row[5 + i] = static_cast<double>(bytes_->sent(kReportedSchemes[i]));
  }
  return metrics_.append(row);
}

Status RunOutputs::epoch(const EpochResult& r) {
  const double row[] = {static_cast<double>(r.epoch), r.seconds, r.accuracy(), static_cast<double>(r.correct),
                        static_cast<double>(r.total)};
  return epochs_.append(row);
}

Status RunOutputs::summary(const EpochResult& last, const RunTotals& totals,
                           const std::optional<trainer::MergePlan>& plan) const {
  nlohmann::json bytes = nlohmann::json::object();
  for (scheme::Scheme s : kReportedSchemes) bytes[bytesColumn(s)] = bytes_->sent(s);
  const nlohmann::json summary = {
      {"test_accuracy", last.accuracy()},
      {"test_correct", last.correct},
      {"test_total", last.total},
      {"test_note", "worker 0's replica; every replica is bit-identical to it"},
      {"epochs_run", last.epoch},
      {"iterations", totals.iterations},
      {"images_per_s", totals.imagesPerSecond(c_->globalBatch())},
      {"seconds", totals.seconds},
      {"train_seconds", totals.train_seconds},
      {"bytes_sent_by_worker0", bytes},
      {"sync_overlapped_by_backward", totals.sync_overlap},
      {"cores_available", std::thread::hardware_concurrency()},
      {"merge_plan", plan ? nlohmann::json::parse(trainer::mergePlanJson(*plan)) : nlohmann::json()},
      {"options", optionsJson(*c_)}};
  const std::string path = outPath(*c_, "summary.json");
  std::ofstream out(path, std::ios::trunc);
  out << summary.dump(2) << '\n';
  out.close();
  if (!out) return makeStatus(StatusCode::kIoError, "cannot write the summary to '{}'", path);
  return Status::ok();
}

}  // namespace poseidon::tools
