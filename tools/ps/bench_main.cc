// poseidon-ps-bench: a worker of a parameter-server job that measures the PS data path alone.
// The model is synthetic (--model), pushed and pulled layer by layer (a layer's weight and bias
// together; uniform: and tensors: models have one tensor per layer); the gradients are filled
// once with a constant (no compute), and every iteration pushes every layer, then pulls every
// layer and waits for all of it. Prints a perftest-style table of iteration time and goodput (bytes this
// worker pushed + pulled per second), optionally as JSON too.
//
// Exit codes: 0 done, 1 the job failed (the reason on stderr), 2 a bad command line.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "ps/client.h"
#include "tools/ps/bench_report.h"
#include "tools/ps/bench_schedule.h"
#include "tools/ps/job_options.h"
#include "tools/ps/job_process.h"
#include "tools/ps/program.h"

namespace poseidon::tools {
namespace {

using transport::RequestPtr;

constexpr const char* kProgram = "poseidon-ps-bench";
// Small enough that the parameters stay finite over any number of SGD steps a benchmark takes.
constexpr float kGradient = 1e-3f;
constexpr uint64_t kMaxIterations = 1'000'000;

struct BenchCommandLine {
  JobOptions job;
  uint64_t iterations = 10;
  uint64_t warmup = 2;
  std::string order = kPushThenPull;
  BenchSchedule schedule;
  std::string json_path;
};

void addBenchOptions(CLI::App& app, BenchCommandLine& c) {
  app.add_option("--iterations", c.iterations, "Measured iterations (default 10)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{1}, kMaxIterations));
  app.add_option("--warmup", c.warmup, "Iterations run first and not measured (default 2)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{0}, kMaxIterations));
  app.add_option("--order", c.order,
                 "push-then-pull (default): push every layer, then pull every layer; interleaved: push and pull "
                 "each layer in turn")
      ->type_name("ORDER")
      ->check(CLI::IsMember({kPushThenPull, kInterleaved}));
  app.add_option("--window", c.schedule.window,
                 "Layers whose pushes may be unacknowledged at once (default 0: no limit)")
      ->type_name("N")
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
  app.add_option("--json", c.json_path, "Also write the results as JSON to FILE")->type_name("FILE");
}

BenchReport describe(const BenchCommandLine& c, const JobProcess& p) {
  BenchReport r;
  r.worker = p.rank();
  r.rank = p.rank();
  r.size = p.launch.size;
  r.workers = p.job.workers;
  r.servers = p.job.servers;
  r.model_spec = c.job.model_spec;
  r.tensors = c.job.model.tensors().size();
  r.model_bytes = c.job.model_bytes;
  r.chunk_bytes = c.job.chunk_bytes;
  r.chunks = p.layout.chunks().size();
  r.consistency = c.job.consistency.canonical();
  r.optimizer = c.job.optimizer_spec + " (the servers' setting)";
  r.transport = fmt::format("{} {}, {} stream(s) per pair", c.job.backend, p.device->listenAddress(), c.job.streams);
  r.schedule = c.schedule.describe();
  r.warmup = c.warmup;
  r.planned = c.iterations;
  return r;
}

Status writeJson(const std::string& path, const BenchReport& report) {
  std::ofstream out(path, std::ios::trunc);
  out << benchToJson(report).dump(2) << '\n';
  out.close();
  if (!out) return makeStatus(StatusCode::kIoError, "cannot write the JSON report to '{}'", path);
  return Status::ok();
}

Status benchmark(const BenchCommandLine& c, JobProcess& p, BenchReport& report) {
  auto client = ps::Client::start(*p.context, *p.store, c.job.model, p.layout, p.job, c.job.consistency, p.deadline());
  if (!client) return client.status();
  ps::Client& worker = **client;
  for (size_t t = 0; t < p.layout.tensorCount(); ++t) {
    const std::span<float> gradients = worker.gradients(t);
    std::fill(gradients.begin(), gradients.end(), kGradient);
  }
  POSEIDON_RETURN_IF_ERROR(worker.initialize(p.deadline()));
  // The starting parameters, so the first timed push is not also the wait for initialisation.
  if (auto initial = exchange(worker, c.schedule, false, p.deadline()); !initial) return initial.status();
  for (uint64_t i = 0; i < c.warmup + c.iterations; ++i) {
    const auto start = Clock::now();
    auto pushed = exchange(worker, c.schedule, true, p.deadline());
    if (!pushed) return pushed.status().withContext(fmt::format("iteration {}", i + 1));
    const auto seconds = [&](Clock::time_point t) { return std::chrono::duration<double>(t - start).count(); };
    // Every layer's gradient travels once and its parameters come back once.
    if (i >= c.warmup) {
      report.iterations.push_back({seconds(Clock::now()), seconds(*pushed), c.job.model_bytes, c.job.model_bytes});
    }
  }
  return worker.finish(p.deadline());
}

int run(const BenchCommandLine& c) {
  auto process = joinJob(c.job, Role::kWorker, "poseidon-server");
  if (!process) {
    fmt::print(stderr, "{}: {}\n", kProgram, process.status().toString());
    return 1;
  }
  JobProcess& p = **process;
  BenchReport report = describe(c, p);
  fmt::print("{}", benchHeader(report));
  std::fflush(stdout);
  Status status = benchmark(c, p, report);
  if (status) {
    fmt::print("{}", benchTable(report));
    if (!c.json_path.empty()) status = writeJson(c.json_path, report);
  }
  return endJob(p, status, kProgram);
}

}  // namespace
}  // namespace poseidon::tools

int main(int argc, char** argv) {
  using namespace poseidon::tools;
  CLI::App app{
      "poseidon-ps-bench: a benchmarking worker of a parameter-server job. Each iteration pushes every\n"
      "layer of --model (weight and bias together) and pulls every layer back; gradients are a constant, so\n"
      "this measures the PS data path. Start poseidon-server on the server ranks. Exit: 0 ok, 1 failure,\n"
      "2 bad usage.",
      kProgram};
  BenchCommandLine c;
  addJobOptions(app, c.job);
  addBenchOptions(app, c);
  return runProgram(argc, argv, {kProgram, &app, &c.job, {}, [&] {
                                   c.schedule.order = c.order == kInterleaved ? BenchSchedule::Order::kInterleaved
                                                                              : BenchSchedule::Order::kPushThenPull;
                                   return run(c);
                                 }});
}
