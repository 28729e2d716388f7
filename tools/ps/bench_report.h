// What poseidon-ps-bench prints: a perftest-style header block and one row per measured
// iteration (time, bytes this worker pushed and pulled, goodput), a summary row, and the same as
// JSON. Units as perftest: MB/sec is MiB/s, Gb/sec is 10^9 bits/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace poseidon::tools {

struct BenchIteration {
  double seconds = 0;
  // Until the last push was acknowledged (under BSP: aggregated): how much of the iteration the
  // pushes took, the pulls finishing the rest.
  double push_seconds = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_pulled = 0;

  double goodput() const { return seconds > 0 ? static_cast<double>(bytes_pushed + bytes_pulled) / seconds : 0; }
};

struct BenchReport {
  // The header block.
  int worker = 0;
  int rank = 0;
  int size = 0;
  int workers = 0;
  int servers = 0;
  std::string model_spec;
  size_t tensors = 0;
  uint64_t model_bytes = 0;
  uint64_t chunk_bytes = 0;
  size_t chunks = 0;
  std::string consistency;
  std::string optimizer;
  std::string transport;  // "tcp 10.0.0.1:4000, 1 stream"
  std::string schedule;   // BenchSchedule::describe()
  uint64_t warmup = 0;
  uint64_t planned = 0;  // measured iterations asked for
  // The measurement.
  std::vector<BenchIteration> iterations;

  double totalSeconds() const;
  // Bytes pushed + pulled over all measured iterations / their time, bytes per second.
  double goodput() const;
};

std::string benchHeader(const BenchReport& report);
// The table: its header, one row per iteration and the summary (average, min, max time).
std::string benchTable(const BenchReport& report);
nlohmann::json benchToJson(const BenchReport& report);

}  // namespace poseidon::tools
