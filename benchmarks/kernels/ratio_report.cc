#include "benchmarks/kernels/ratio_report.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

namespace poseidon::bench {
namespace {

// The console table as usual, and every repetition's counters kept by benchmark name.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type == Run::RT_Aggregate) continue;
      for (const auto& [counter, value] : run.counters) values_[run.run_name.str()][counter].push_back(value.value);
    }
  }

  // The counter's values over the repetitions of a benchmark; empty if it did not run.
  std::vector<double> values(const std::string& name, const std::string& counter) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return {};
    const auto c = it->second.find(counter);
    return c == it->second.end() ? std::vector<double>{} : c->second;
  }

 private:
  std::map<std::string, std::map<std::string, std::vector<double>>> values_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// 1.23e10 -> "12.3 G"
std::string scaled(double v) {
  if (v >= 1e9) return fmt::format("{:.1f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f} M", v / 1e6);
  return fmt::format("{:.1f} ", v);
}

}  // namespace

int runWithRatios(int argc, char** argv, const std::vector<Ratio>& ratios) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  fmt::print("\nRatios, same run: median over repetitions (best of each side):\n");
  for (const Ratio& r : ratios) {
    const std::vector<double> kernel = reporter.values(r.kernel, r.counter);
    const std::vector<double> baseline = reporter.values(r.baseline, r.counter);
    if (kernel.empty() || baseline.empty()) {
      fmt::print("  {} / {}: not both measured (filtered out?)\n", r.kernel, r.baseline);
      continue;
    }
    const double km = median(kernel), bm = median(baseline);
    const double kb = *std::max_element(kernel.begin(), kernel.end());
    const double bb = *std::max_element(baseline.begin(), baseline.end());
    const std::string target = r.target > 0 ? fmt::format("  (target >= {})", r.target) : "";
    const std::string& unit = r.counter;
    fmt::print("  {} / {}: {}{} / {}{} = {:.2f} (best {}{} / {}{} = {:.2f}){}\n", r.kernel, r.baseline, scaled(km),
               unit, scaled(bm), unit, km / bm, scaled(kb), unit, scaled(bb), unit, kb / bb, target);
  }
  return 0;
}

}  // namespace poseidon::bench
