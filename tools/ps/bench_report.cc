#include "tools/ps/bench_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/perf/report.h"

namespace poseidon::tools {
namespace {

using perf::kBytesPerGb;
using perf::kBytesPerMB;

constexpr const char* kTableHeader =
    " #iteration   time[msec]    pushes acked[msec]   pushed[B]      pulled[B]      goodput[MB/sec]   "
    "goodput[Gb/sec]\n";

std::string row(const std::string& label, const BenchIteration& it) {
  return fmt::format(" {:<12} {:<13.2f} {:<20.2f} {:<14} {:<14} {:<17.2f} {:.3f}\n", label, it.seconds * 1e3,
                     it.push_seconds * 1e3, it.bytes_pushed, it.bytes_pulled, it.goodput() / kBytesPerMB,
                     it.goodput() / kBytesPerGb);
}

}  // namespace

double BenchReport::totalSeconds() const {
  double total = 0;
  for (const BenchIteration& it : iterations) total += it.seconds;
  return total;
}

double BenchReport::goodput() const {
  uint64_t bytes = 0;
  for (const BenchIteration& it : iterations) bytes += it.bytes_pushed + it.bytes_pulled;
  const double seconds = totalSeconds();
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
}

std::string benchHeader(const BenchReport& r) {
  std::string out = perf::resultLine();
  out += "                    Parameter server push + pull (poseidon-ps-bench)\n";
  out += fmt::format(" Worker          : {} of {}\t\tRank           : {} of {}\n", r.worker, r.workers, r.rank, r.size);
  out += fmt::format(" Servers         : {}\t\tConsistency    : {}\n", r.servers, r.consistency);
  out += fmt::format(" Model           : {} ({} tensors, {}[B])\n", r.model_spec, r.tensors, r.model_bytes);
  out += fmt::format(" Chunks          : {} of {}[B]\n", r.chunks, r.chunk_bytes);
  out += fmt::format(" Optimizer       : {}\n", r.optimizer);
  out += fmt::format(" Transport       : {}\n", r.transport);
  out += fmt::format(" Iterations      : {} measured after {} warm-up\n", r.planned, r.warmup);
  out += fmt::format(" Schedule        : {}\n", r.schedule);
  out += perf::resultLine();
  return out;
}

std::string benchTable(const BenchReport& r) {
  std::string out = kTableHeader;
  BenchIteration sum;
  for (size_t i = 0; i < r.iterations.size(); ++i) {
    const BenchIteration& it = r.iterations[i];
    out += row(std::to_string(i + 1), it);
    sum.seconds += it.seconds;
    sum.push_seconds += it.push_seconds;
    sum.bytes_pushed += it.bytes_pushed;
    sum.bytes_pulled += it.bytes_pulled;
  }
  out += perf::resultLine();
  if (r.iterations.empty()) return out;
  const auto [fastest, slowest] =
      std::minmax_element(r.iterations.begin(), r.iterations.end(),
                          [](const BenchIteration& a, const BenchIteration& b) { return a.seconds < b.seconds; });
  const uint64_t n = r.iterations.size();
  const BenchIteration average{sum.seconds / static_cast<double>(n), sum.push_seconds / static_cast<double>(n),
                               sum.bytes_pushed / n, sum.bytes_pulled / n};
  out += row("average", average);
  out += row("fastest", *fastest);
  out += row("slowest", *slowest);
  out += perf::resultLine();
  return out;
}

nlohmann::json benchToJson(const BenchReport& r) {
  nlohmann::json iterations = nlohmann::json::array();
  for (const BenchIteration& it : r.iterations) {
    iterations.push_back({{"seconds", it.seconds},
                          {"push_seconds", it.push_seconds},
                          {"bytes_pushed", it.bytes_pushed},
                          {"bytes_pulled", it.bytes_pulled}});
  }
  return {{"tool", "poseidon-ps-bench"},
          {"worker", r.worker},
          {"rank", r.rank},
          {"size", r.size},
          {"workers", r.workers},
          {"servers", r.servers},
          {"model", r.model_spec},
          {"tensors", r.tensors},
          {"model_bytes", r.model_bytes},
          {"chunk_bytes", r.chunk_bytes},
          {"chunks", r.chunks},
          {"consistency", r.consistency},
          {"optimizer", r.optimizer},
          {"transport", r.transport},
          {"schedule", r.schedule},
          {"warmup", r.warmup},
          {"iterations", iterations},
          {"total_seconds", r.totalSeconds()},
          {"goodput_bytes_per_s", r.goodput()}};
}

}  // namespace poseidon::tools
