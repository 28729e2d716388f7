#include "trainer/api/merge_agreement.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <system_error>

#include "trainer/wfbp/cost_fit.h"
#include "trainer/wfbp/link_probe.h"
#include "trainer/wfbp/merge_plan_text.h"
#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

namespace {

bool costGiven(const MessageCost& cost) { return cost.latency_s > 0 || cost.seconds_per_byte > 0; }

// The scheme a merged unit (an "other" layer) is priced for: the ring when HybComm is fixed to it,
// else the PS, which the closed form picks for plain tensors here (an adaptive HybComm may move a
// unit to the ring later; the plan is not redone then).
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

// How this worker means to merge, as worker 0 publishes it: the mode, and for a planned merge
// whether the link is probed (a collective step every worker must take alike).
std::string mergeIntent(const MergeOptions& merge) {
  switch (merge.mode) {
    case MergeOptions::Mode::kOff: return "off";
    case MergeOptions::Mode::kFixed: return "fixed:" + merge.groups;
    case MergeOptions::Mode::kPlanned: return costGiven(merge.cost) ? "planned (cost given)" : "planned (probed)";
  }
  return "?";
}

// "<a> <b> <groups>", a and b as shortest round-trip decimals: the cost worker 0 planned with.
Result<MergeOptions> parsePublishedPlan(const std::string& text, MergeOptions fixed) {
  fixed.mode = MergeOptions::Mode::kFixed;
  const size_t first = text.find(' '), second = first == std::string::npos ? first : text.find(' ', first + 1);
  const auto parse = [&](size_t from, size_t to, double& value) {
    if (from >= to) return false;
    const auto [end, error] = std::from_chars(text.data() + from, text.data() + to, value);
    return error == std::errc() && end == text.data() + to;
  };
  if (second == std::string::npos || !parse(0, first, fixed.cost.latency_s) ||
      !parse(first + 1, second, fixed.cost.seconds_per_byte)) {
    return makeStatus(StatusCode::kProtocolError, "worker 0's merge plan '{}': expected '<a> <b> <groups>'", text);
  }
  fixed.groups = text.substr(second + 1);
  return fixed;
}

Result<MergeSetup> planAsWorkerZero(JobConnection& job, const model::Model& layers, const SessionOptions& options,
                                    transport::bootstrap::StoreView& view, Deadline deadline) {
  MergeOptions mine = options.merge;
  Result<MergeSetup> setup = makeStatus(StatusCode::kInternal, "no plan");
  auto cost = costGiven(mine.cost) ? Result<MessageCost>(mine.cost) : probedCost(job, layers, options, deadline);
  if (cost) {
    mine.cost = *cost;
    setup = planMergeUnits(layers, mine);
  }
  const Status& failed = cost ? setup.status() : cost.status();
  if (!cost || !setup) {
    // The others would wait for a plan that never comes: they fail at once with the cause.
    (void)transport::bootstrap::setString(view, "plan", fmt::format("! {}", failed.message()));
    return failed;
  }
  const MergePlan& plan = *setup->plan;
  POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(
      view, "plan",
      fmt::format("{} {} {}", plan.cost.latency_s, plan.cost.seconds_per_byte, formatMergeGroups(plan.groups))));
  return setup;
}

}  // namespace

Result<MergeSetup> agreeOnMergeUnits(JobConnection& job, const model::Model& layers, const SessionOptions& options,
                                     Deadline deadline) {
  const MergeOptions& given = options.merge;
  const bool probes = given.mode == MergeOptions::Mode::kPlanned && !costGiven(given.cost);
  if (probes && options.layout.workers < 2) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "merge option planned: no message cost given and one worker, so no link to probe; give "
                      "MergeOptions::cost (a and b of T(M) = a + bM)");
  }
  // Every worker must merge alike, and a probe needs every worker: compare intents first, so a
  // worker started otherwise fails at once naming both instead of waiting in the probe.
  transport::bootstrap::StoreView view = job.view().child("merge");
  if (job.rank() == 0) {
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(view, "intent", mergeIntent(given)));
  } else {
    auto intent = transport::bootstrap::getString(view, "intent", deadline);
    if (!intent) return intent.status().withContext("worker 0's merge option");
    if (*intent != mergeIntent(given)) {
      return makeStatus(
          StatusCode::kInvalidArgument,
          "SessionOptions::merge: worker 0 merges '{}', this worker '{}'; every worker must give the same", *intent,
          mergeIntent(given));
    }
  }
  if (given.mode != MergeOptions::Mode::kPlanned) return planMergeUnits(layers, given);
  if (job.rank() == 0) return planAsWorkerZero(job, layers, options, view, deadline);
  if (probes) {
    auto cost = probedCost(job, layers, options, deadline);  // the responder's side, or just the mesh
    if (!cost) return cost.status();
  }
  auto published = transport::bootstrap::getString(view, "plan", deadline);
  if (!published) return published.status().withContext("worker 0's merge plan");
  if (published->starts_with("! ")) {
    return makeStatus(StatusCode::kInvalidArgument, "worker 0 could not plan the merge: {}", published->substr(2));
  }
  auto fixed = parsePublishedPlan(*published, given);
  if (!fixed) return fixed.status();
  // Worker 0's groups, timed with this worker's own profile (zeros when it gave none).
  if (fixed->backward_seconds.size() != layers.layers().size()) fixed->backward_seconds.clear();
  return planMergeUnits(layers, *fixed);
}

}  // namespace poseidon::trainer
