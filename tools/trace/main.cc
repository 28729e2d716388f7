// poseidon-trace: runs a trace model (trainer/trace/trace_model.h: a zoo network's per-layer
// compute as sleeps from the papers' single-GPU rates, its gradients shrunk with the link by one
// factor) as a real job through the embedding API (trainer/api/session.h). One process per rank,
// the rank from the launch environment (POSEIDON_RANK / POSEIDON_SIZE / POSEIDON_ROOT, mpirun,
// srun): workers first, then the PS servers, which serve(). tools/bench-overlap runs the jobs.
//
// Exit codes: 0 done, 1 the job failed (the reason on stderr, naming the rank), 2 a bad command
// line or launch environment.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tools/ps/job_options.h"
#include "tools/ps/job_process.h"
#include "tools/trace/trace_options.h"
#include "tools/trace/trace_report.h"
#include "tools/trace/trace_worker.h"
#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::tools {
namespace {

constexpr const char* kProgram = "poseidon-trace";

Status runRank(const TraceCommandLine& c, const transport::bootstrap::LaunchInfo& launch,
               const LeastCommunication& least) {
  auto address = c.address.empty() ? addressTowardsStore(launch) : Result<std::string>(c.address);
  if (!address) return address.status();
  // Every measured sync kept for syncs-worker<rank>.csv, up to a million (beyond, the totals only).
  SchemeTraffic traffic(c.warmup, std::min<uint64_t>(c.iterations * c.trace.layers.size(), 1000000));
  trainer::SessionOptions options = traceSessionOptions(c, *address);
  options.on_sync = [&traffic](const trainer::SyncRecord& record) { traffic.add(record); };
  auto session = trainer::Session::join(options, launch);
  if (!session) return session.status();
  if (!(*session)->isWorker()) return (*session)->serve().withContext((*session)->describe());
  auto iterations = runTraceWorker(**session, c);
  if (!iterations) return iterations.status().withContext((*session)->describe());
  const TraceSummary summary = summarize(*iterations, least, c.trace.computeSeconds());
  const std::optional<trainer::MergePlan>& plan = (*session)->mergePlan();
  if (launch.rank == 0) {
    if (plan) fmt::print("{}\n", trainer::describeMergePlan(*plan));
    fmt::print("{}", traceTable(c, launch.rank, summary, traffic));
    std::fflush(stdout);
  }
  return writeTraceOutputs(c, launch.rank, *iterations, summary, least, traffic, plan);
}

int run(const TraceCommandLine& c) {
  auto least = leastCommunication(c);
  if (!least) {
    fmt::print(stderr, "{}: the cost model: {}\n", kProgram, least.status().toString());
    return 2;
  }
  if (c.print_scale) {
    fmt::print("{}", describeTrace(c, *least));
    return 0;
  }
  auto launch = transport::bootstrap::detectLaunch();
  if (!launch) {
    fmt::print(stderr, "{}: the launch environment: {}\n", kProgram, launch.status().message());
    return 2;
  }
  if (launch->size != c.layout().size()) {
    fmt::print(stderr,
               "{}: the {} launch environment says the job has {} ranks, but --workers {} + --ps-servers {} = {}\n",
               kProgram, launch->source, launch->size, c.workers, c.ps_servers, c.layout().size());
    return 2;
  }
  if (launch->rank == 0) {
    fmt::print("{}", describeTrace(c, *least));
    std::fflush(stdout);
  }
  if (Status status = runRank(c, *launch, *least); !status) {
    fmt::print(stderr, "{}: rank {}: {}\n", kProgram, launch->rank, status.toString());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace poseidon::tools

int main(int argc, char** argv) {
  using namespace poseidon::tools;
  spdlog::set_default_logger(spdlog::stderr_color_mt(kProgram));
  spdlog::set_level(spdlog::level::warn);
  TraceCommandLine c;
  if (auto code = parseCommandLine(
          kProgram,
          "poseidon-trace: a zoo network's training traffic and timing, compute replaced by timed sleeps (the papers'\n"
          "single-GPU rates split by FLOPs), model bytes and link rate scaled down alike. One process per rank\n"
          "(POSEIDON_RANK / POSEIDON_SIZE / POSEIDON_ROOT): workers, then PS servers. tools/bench-overlap runs jobs.\n"
          "Exit: 0 ok, 1 failure, 2 bad usage.",
          argc, argv, [&](CLI::App& app) { addTraceOptions(app, c); },
          [&] { return checkTraceOptions(c, std::getenv("POSEIDON_SECRET")); })) {
    return *code;
  }
  try {
    return run(c);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
}
