#include "benchmarks/kernels/ratio_report.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <map>

namespace poseidon::bench {
namespace {

// The console table as usual, and each run's counters kept by name: a single run's, or the
// median of repetitions (which then replaces the single ones).
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const std::string name = run.run_name.str();
      if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name == "median") medians_[name] = run.counters;
      } else {
        singles_[name] = run.counters;
      }
    }
  }

  // The counter's value for a benchmark, or a negative number if it did not run.
  double value(const std::string& name, const std::string& counter) const {
    const auto* runs = &medians_;
    auto it = runs->find(name);
    if (it == runs->end()) {
      runs = &singles_;
      it = runs->find(name);
      if (it == runs->end()) return -1;
    }
    const auto c = it->second.find(counter);
    return c == it->second.end() ? -1 : c->second.value;
  }

 private:
  std::map<std::string, benchmark::UserCounters> medians_, singles_;
};

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
  fmt::print("\nRatios (same run; medians when repeated):\n");
  for (const Ratio& r : ratios) {
    const double kernel = reporter.value(r.kernel, r.counter), baseline = reporter.value(r.baseline, r.counter);
    if (kernel < 0 || baseline <= 0) {
      fmt::print("  {} / {}: not both measured (filtered out?)\n", r.kernel, r.baseline);
      continue;
    }
    const std::string target = r.target > 0 ? fmt::format(" (target >= {})", r.target) : "";
    fmt::print("  {} / {}: {}{} / {}{} = {:.2f}{}\n", r.kernel, r.baseline, scaled(kernel), r.counter,
               scaled(baseline), r.counter, kernel / baseline, target);
  }
  return 0;
}

}  // namespace poseidon::bench
