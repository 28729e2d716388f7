#include "trainer/api/merge_agreement.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "trainer/wfbp/cost_fit.h"
#include "trainer/wfbp/link_probe.h"
#include "trainer/wfbp/merge_plan_text.h"
#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

namespace {

bool costGiven(const MessageCost& cost) { return cost.latency_s > 0 || cost.seconds_per_byte > 0; }

// The scheme a merged unit (an "other" layer) is synced by.
scheme::Scheme mergedScheme(const SessionOptions& options) {
  const bool ring = options.hybcomm.mode == HybCommMode::kFixed && options.hybcomm.fixed == scheme::Scheme::kRing;
  return ring ? scheme::Scheme::kRing : scheme::Scheme::kPs;
}

// Worker 0's side of the probe (the other workers only connect): T(M) of the merged scheme.
Result<MessageCost> probedCost(JobConnection& job, const model::Model& layers, const SessionOptions& options,
                               Deadline deadline) {
  auto context = job.joinWorkers("probe", deadline);
  if (!context) return context.status();
  const int rank = job.rank();
  if (rank > 1) return MessageCost{};  // connected for the mesh; not part of the exchange
  auto samples = probeLink(**context, 1 - rank, rank == 0, LinkProbeOptions{}, deadline);
  if (!samples) return samples.status().withContext("probing the link for the merge plan");
  if (rank == 1) return MessageCost{};
  auto fit = fitMessageCost(*samples);
  if (!fit) return fit.status().withContext("fitting the link probe");
  const LinkModel link{fit->cost.latency_s, fit->cost.seconds_per_byte > 0 ? 1.0 / fit->cost.seconds_per_byte : 1e15};
  const ClusterShape cluster{options.layout.workers, std::max(1, options.layout.ps_servers),
                             static_cast<int64_t>(layers.batch())};
  auto cost = syncMessageCost(mergedScheme(options), cluster, link);
  if (!cost) return cost.status();
  spdlog::info(
      "merge plan: link to worker 1 a = {:.1f} us, {:.3f} GB/s ({} samples, rms {:.1f} us{}{}); {} sync "
      "T(M) = {:.1f} us + M / {:.3f} GB/s",
      fit->cost.latency_s * 1e6, link.bytes_per_s / 1e9, fit->samples, fit->rms_residual_s * 1e6,
      fit->note.empty() ? "" : "; ", fit->note, scheme::schemeName(mergedScheme(options)), cost->latency_s * 1e6,
      cost->seconds_per_byte > 0 ? 1e-9 / cost->seconds_per_byte : 0.0);
  return *cost;
}

}  // namespace

Result<MergeSetup> agreeOnMergeUnits(JobConnection& job, const model::Model& layers, const SessionOptions& options,
                                     Deadline deadline) {
  const MergeOptions& given = options.merge;
  if (given.mode != MergeOptions::Mode::kPlanned) return planMergeUnits(layers, given);
  MergeOptions mine = given;
  if (!costGiven(given.cost)) {
    if (options.layout.workers < 2) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge option planned: no message cost given and one worker, so no link to probe; give "
                        "MergeOptions::cost (a and b of T(M) = a + bM)");
    }
    auto cost = probedCost(job, layers, options, deadline);
    if (!cost) return cost.status();
    mine.cost = *cost;
  }
  transport::bootstrap::StoreView view = job.view().child("merge");
  if (job.rank() == 0) {
    auto setup = planMergeUnits(layers, mine);
    if (!setup) {
      // The others would wait for a plan that never comes: they fail at once with the cause.
      (void)transport::bootstrap::setString(view, "plan", fmt::format("! {}", setup.status().message()));
      return setup.status();
    }
    const MergePlan& plan = *setup->plan;
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(
        view, "plan",
        fmt::format("{:a} {:a} {}", plan.cost.latency_s, plan.cost.seconds_per_byte, formatMergeGroups(plan.groups))));
    return setup;
  }
  auto published = transport::bootstrap::getString(view, "plan", deadline);
  if (!published) return published.status().withContext("worker 0's merge plan");
  if (published->starts_with("! ")) {
    return makeStatus(StatusCode::kInvalidArgument, "worker 0 could not plan the merge: {}", published->substr(2));
  }
  MergeOptions fixed = mine;
  fixed.mode = MergeOptions::Mode::kFixed;
  // "<a> <b> <groups>", a and b as hexadecimal floats: the bits worker 0 planned with.
  const std::string& text = *published;
  const size_t first = text.find(' '), second = first == std::string::npos ? first : text.find(' ', first + 1);
  char* end_a = nullptr;
  char* end_b = nullptr;
  if (second != std::string::npos) {
    fixed.cost.latency_s = std::strtod(text.c_str(), &end_a);
    fixed.cost.seconds_per_byte = std::strtod(text.c_str() + first + 1, &end_b);
  }
  if (second == std::string::npos || end_a != text.c_str() + first || end_b != text.c_str() + second) {
    return makeStatus(StatusCode::kProtocolError, "worker 0's merge plan '{}': expected '<a> <b> <groups>'", text);
  }
  fixed.groups = text.substr(second + 1);
  // Worker 0's groups, timed with this worker's own profile (zeros when it gave none).
  if (fixed.backward_seconds.size() != layers.layers().size()) fixed.backward_seconds.clear();
  return planMergeUnits(layers, fixed);
}

}  // namespace poseidon::trainer
