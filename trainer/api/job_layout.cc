#include "trainer/api/job_layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace poseidon::trainer {

namespace {

std::string rankRange(int first, int count) {
  return count == 1 ? std::to_string(first) : fmt::format("{}-{}", first, first + count - 1);
}

}  // namespace

JobRole JobLayout::roleOf(int rank) const {
  if (rank < workers) return JobRole::kWorker;
  if (rank < workers + ps_servers) return JobRole::kPsServer;
  return JobRole::kAdamServer;
}

std::string JobLayout::describe(int rank) const {
  switch (roleOf(rank)) {
    case JobRole::kWorker: return fmt::format("worker {} (rank {} of {})", rank, rank, size());
    case JobRole::kPsServer: return fmt::format("PS server {} (rank {} of {})", rank - workers, rank, size());
    case JobRole::kAdamServer:
      return fmt::format("Adam server {} (rank {} of {})", rank - workers - ps_servers, rank, size());
  }
  return "?";
}

std::string JobLayout::describe() const {
  std::string text =
      fmt::format("workers on ranks {}, PS servers on {}", rankRange(0, workers), rankRange(workers, ps_servers));
  if (adam_servers > 0)
    return text + fmt::format(", Adam servers on {}", rankRange(workers + ps_servers, adam_servers));
  return text + ", no Adam server";
}

Status JobLayout::validate() const {
  if (workers < 1) return makeStatus(StatusCode::kInvalidArgument, "a job of {} workers; expected >= 1", workers);
  if (ps_servers < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "a job of {} PS servers; expected >= 1", ps_servers);
  }
  if (adam_servers < 0) {
    return makeStatus(StatusCode::kInvalidArgument, "a job of {} Adam servers; expected >= 0", adam_servers);
  }
  return Status::ok();
}

bool mayUseAdam(const HybCommOptions& options) {
  switch (options.mode) {
    case HybCommMode::kFixed: return options.fixed == scheme::Scheme::kAdam;
    case HybCommMode::kClosedForm: return options.closed_form.consider_adam;
    case HybCommMode::kAdaptive:  // layers a candidate does not fit take their closed-form scheme
      return options.closed_form.consider_adam || std::find(options.candidates.begin(), options.candidates.end(),
                                                            scheme::Scheme::kAdam) != options.candidates.end();
  }
  return false;
}

}  // namespace poseidon::trainer
