// poseidon-allreduce-bench: our ring all-reduce (ring/ring_allreduce.h) alone, over a range of
// message sizes, on every rank of a job; rank 0 prints one CSV row per size on stdout (time per
// call, algorithm and bus bandwidth, the CPU time per call of all ranks together), the rows
// tools/bench-peers sets beside Gloo's.
//   POSEIDON_RANK=r POSEIDON_SIZE=P POSEIDON_ROOT=host:port poseidon-allreduce-bench [options]
//
// Exit codes: 0 done (every call's sum verified), 1 the job failed (the reason on stderr), 2 a
// bad command line.
#include <fmt/format.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "tools/ps/job_process.h"
#include "tools/ps/program.h"
#include "tools/ring-bench/allreduce_bench.h"
#include "tools/ring-bench/allreduce_options.h"
#include "transport/bootstrap/open_store.h"

namespace poseidon::tools {
namespace {

constexpr const char* kProgram = "poseidon-allreduce-bench";

// The launch as poseidon-server resolves it (--rank/--size/--root win over the environment).
Result<transport::bootstrap::LaunchInfo> launchOf(const AllreduceBenchCommandLine& c) {
  JobOptions options;
  options.rank = c.rank;
  options.size = c.size;
  options.root = c.root;
  auto launch = resolveLaunch(options);
  if (!launch) return launch.status();
  if (launch->size < 2) {
    return makeStatus(StatusCode::kInvalidArgument, "the job has size {} ({} launch): expected at least 2 ranks",
                      launch->size, launch->source);
  }
  return launch;
}

// A job of workers only: the store, the device and one full-mesh context, as tools/ps joins one;
// kept in a JobProcess so that leave() ends it the same way.
Status join(const AllreduceBenchCommandLine& c, JobProcess& process) {
  process.timeout = std::chrono::seconds(c.timeout_s);
  auto launch = launchOf(c);
  if (!launch) return launch.status();
  process.launch = *launch;
  process.job = ps::PsJob{launch->size, 0, "allreduce"};
  if (!c.address.empty()) {
    process.address = c.address;
  } else {
    auto address = addressTowardsStore(*launch);
    if (!address) return address.status();
    process.address = *address;
  }
  const std::string who = process.describe();
  auto store = transport::bootstrap::openStore(*launch, process.deadline(), c.secret);
  if (!store) return store.status().withContext(fmt::format("{}: the store", who));
  process.store = std::move(*store);
  auto device = transport::createDevice(deviceOptionsFor(c, process.address));
  if (!device)
    return device.status().withContext(fmt::format("{}: the {} device on {}", who, c.backend, process.address));
  process.device = *device;
  auto context = process.device->createContext(launch->rank, launch->size, process.job.name);
  if (!context) return context.status().withContext(who);
  process.context = *context;
  return process.context->connect(*process.store, process.deadline()).withContext(who);
}

void printRows(const std::vector<AllreduceRow>& rows, int ranks) {
  fmt::print("bytes,iters,median_us,mean_us,min_us,algbw_gbps,busbw_gbps,cpu_us\n");
  for (const AllreduceRow& row : rows) {
    fmt::print("{},{},{:.1f},{:.1f},{:.1f},{:.4f},{:.4f},{:.1f}\n", row.bytes, row.iters, row.median_us, row.mean_us,
               row.min_us, row.algbw_gbps(), row.busbw_gbps(ranks), row.cpu_us);
  }
  std::fflush(stdout);
}

int run(const AllreduceBenchCommandLine& c) {
  JobProcess process;
  if (Status joined = join(c, process); !joined) {
    fmt::print(stderr, "{}: {}\n", kProgram, joined.toString());
    return 1;
  }
  // The ring is gone when this returns, so no write of ours is in flight at the goodbye.
  Result<std::vector<AllreduceRow>> rows = runAllreduceBench(c, process);
  if (rows && process.rank() == 0) printRows(*rows, process.launch.size);
  return endJob(process, rows.status(), kProgram);
}

}  // namespace
}  // namespace poseidon::tools

int main(int argc, char** argv) {
  using namespace poseidon::tools;
  // The library logs warnings and worse to stderr; stdout carries the rows.
  spdlog::set_default_logger(spdlog::stderr_color_mt(kProgram));
  spdlog::set_level(spdlog::level::warn);
  AllreduceBenchCommandLine c;
  if (auto code = parseCommandLine(
          kProgram, "poseidon-allreduce-bench: the ring all-reduce alone, verified, over a range of sizes", argc, argv,
          [&](CLI::App& app) { addAllreduceBenchOptions(app, c); },
          [&] { return checkAllreduceBenchOptions(c, std::getenv("POSEIDON_SECRET")); })) {
    return *code;
  }
  return run(c);
}
