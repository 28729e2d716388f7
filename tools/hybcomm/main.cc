// poseidon-hybcomm-bench: HybComm's scaling benchmark. One program, three roles, by rank:
// workers (HybridSync: every layer synchronised each iteration by the scheme the mode picks, the
// optimizer applied locally), PS summation servers and Adam servers. The layers are synthetic
// (--layers), their factors pseudo-random; see bench_worker.h for what a worker times and
// bench_report.h for what it prints. Servers print one JSON line of statistics when done.
//
// Exit codes: 0 done, 1 the job failed (the reason on stderr), 2 a bad command line.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "adam/adam_server.h"
#include "tools/hybcomm/bench_options.h"
#include "tools/hybcomm/bench_process.h"
#include "tools/hybcomm/bench_worker.h"
#include "tools/ps/program.h"
#include "trainer/sync/hybrid_ps.h"

namespace poseidon::tools {
namespace {

constexpr const char* kProgram = "poseidon-hybcomm-bench";

Deadline runDeadline(const HybBenchCommandLine& c) {
  return c.run_timeout_s > 0 ? Deadline::after(std::chrono::seconds(c.run_timeout_s)) : Deadline::never();
}

Status writeJson(const std::string& path, const nlohmann::json& json) {
  std::ofstream out(path, std::ios::trunc);
  out << json.dump(2) << '\n';
  out.close();
  if (!out) return makeStatus(StatusCode::kIoError, "cannot write the JSON report to '{}'", path);
  return Status::ok();
}

void printServerLine(const HybridProcess& p, const char* role, Status status, nlohmann::json stats) {
  stats["role"] = role;
  stats["rank"] = p.rank();
  stats["ok"] = status.isOk();
  fmt::print("{}\n", stats.dump());
  std::fflush(stdout);
}

Status runWorker(const HybBenchCommandLine& c, HybridProcess& p) {
  HybBenchReport report = describeBench(c, p);
  fmt::print("{}", hybHeader(report));
  std::fflush(stdout);
  POSEIDON_RETURN_IF_ERROR(runBenchWorker(c, p, report));
  fmt::print("{}", hybTables(report));
  std::fflush(stdout);
  if (c.json_path.empty()) return Status::ok();
  return writeJson(c.json_path, hybToJson(report));
}

Status runPsServer(const HybBenchCommandLine& c, HybridProcess& p) {
  auto server = trainer::startSummationServer(*p.base.context, *p.base.store, c.model.layers(), c.workers(),
                                              c.psServers(), c.job.chunk_bytes, c.job.job_name, p.deadline());
  if (!server) return server.status();
  const Status status = (*server)->waitUntilDone(runDeadline(c));
  const ps::ServerStats stats = (*server)->stats();
  printServerLine(p, kPsServerRole, status,
                  {{"server", p.rank() - c.workers()},
                   {"bytes_pushed", stats.bytes_pushed},
                   {"bytes_pulled", stats.bytes_pulled},
                   {"updates", stats.updates}});
  return status;
}

Status runAdamServer(const HybBenchCommandLine& c, HybridProcess& p) {
  std::vector<model::Layer> layers;  // the FC layers: the ones Adam syncs
  for (const model::Layer& layer : c.model.layers()) {
    if (layer.isFullyConnected()) layers.push_back(layer);
  }
  auto server = adam::AdamServer::start(*p.adam, *p.base.store, layers, c.model.batch(), c.workers(), p.deadline());
  if (!server) return server.status();
  const Status status = (*server)->waitUntilDone(runDeadline(c));
  nlohmann::json traffic = nlohmann::json::array();
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto t = (*server)->traffic(l);
    if (t.sent_bytes + t.received_bytes == 0) continue;
    traffic.push_back({{"layer", layers[l].name()},
                       {"iterations", (*server)->iterations(l)},
                       {"sent_bytes", t.sent_bytes},
                       {"received_bytes", t.received_bytes}});
  }
  printServerLine(p, kAdamServerRole, status, {{"server", (*server)->server()}, {"layers", traffic}});
  return status;
}

int run(const HybBenchCommandLine& c) {
  auto process = joinHybridJob(c);
  if (!process) {
    fmt::print(stderr, "{}: {}\n", kProgram, process.status().toString());
    return 1;
  }
  HybridProcess& p = **process;
  Status status;
  switch (p.role) {
    case BenchRole::kWorker: status = runWorker(c, p); break;
    case BenchRole::kPsServer: status = runPsServer(c, p); break;
    case BenchRole::kAdamServer: status = runAdamServer(c, p); break;
  }
  return endHybridJob(p, status, kProgram);
}

}  // namespace
}  // namespace poseidon::tools

int main(int argc, char** argv) {
  using namespace poseidon::tools;
  CLI::App app{
      "poseidon-hybcomm-bench: HybComm's scaling benchmark. Workers (ranks 0..P1-1) sync synthetic layers\n"
      "every iteration by the scheme --mode picks (ps, sfb, ring, adam, closed, adaptive) and time it;\n"
      "PS summation servers (the next P2 ranks) and Adam servers (last, when the mode may use Adam) serve\n"
      "them. Rank 0 serves the rendezvous store. Exit: 0 ok, 1 failure, 2 bad usage.",
      kProgram};
  HybBenchCommandLine c;
  addBenchOptions(app, c);
  return runProgram(argc, argv, {kProgram, &app, &c.job, [&] { return checkBenchOptions(c); }, [&] { return run(c); }});
}
