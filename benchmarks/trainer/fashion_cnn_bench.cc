// Forward + backward of the Fashion-MNIST CNN for one batch (64 by default), on one OpenBLAS
// thread unless --threads says otherwise, with and without the local optimizer step.
// Counters: images/s, and FLOP/s counting a step as 3x the forward FLOPs (forward, dX, dW).
//
//   fashion_cnn_bench [--benchmark_repetitions=5] [--benchmark_min_time=2s]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "benchmarks/trainer/bench_flags.h"
#include "benchmarks/trainer/random_batch.h"
#include "kernels/optimizer_config.h"
#include "trainer/reference/blas.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/local_optimizer.h"

namespace poseidon::trainer::reference {
namespace {

struct Fixture {
  explicit Fixture(size_t batch) : network(buildFashionCnn(batch, 1).value()), data(batch) {}
  Network network;
  RandomBatch data;
};

void setCounters(benchmark::State& state, size_t batch) {
  const double images = static_cast<double>(state.iterations()) * static_cast<double>(batch);
  state.counters["images/s"] = benchmark::Counter(images, benchmark::Counter::kIsRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(images * 3.0 * fashionCnnModel(batch).forwardFlops(), benchmark::Counter::kIsRate);
}

void forwardBackward(benchmark::State& state) {
  const auto batch = static_cast<size_t>(state.range(0));
  Fixture fixture(batch);
  for (auto _ : state) {
    if (!fixture.network.forward(fixture.data.images, fixture.data.labels).isOk() ||
        !fixture.network.backward().isOk()) {
      state.SkipWithError("the step failed");
      break;
    }
  }
  setCounters(state, batch);
}

void forwardBackwardStep(benchmark::State& state) {
  const auto batch = static_cast<size_t>(state.range(0));
  Fixture fixture(batch);
  LocalOptimizer optimizer =
      LocalOptimizer::create(fixture.network, kernels::parseOptimizer("sgd:lr=0.01,momentum=0.9").value()).value();
  for (auto _ : state) {
    if (!fixture.network.forward(fixture.data.images, fixture.data.labels).isOk() ||
        !fixture.network.backward().isOk() || !optimizer.step(fixture.network).isOk()) {
      state.SkipWithError("the step failed");
      break;
    }
  }
  setCounters(state, batch);
}

BENCHMARK(forwardBackward)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(forwardBackwardStep)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace poseidon::trainer::reference

int main(int argc, char** argv) {
  // --threads=N: OpenBLAS threads (default 1, as the library's workers run).
  poseidon::bench::BenchFlags flags(argc, argv, {{"threads", 1}});
  if (!flags.error().empty()) {
    std::fprintf(stderr, "fashion_cnn_bench: %s\n", flags.error().c_str());
    return 1;
  }
  poseidon::trainer::reference::setBlasThreads(static_cast<int>(flags.value("threads")));
  int count = flags.restCount();
  benchmark::Initialize(&count, flags.rest());
  if (benchmark::ReportUnrecognizedArguments(count, flags.rest())) return 1;
  benchmark::AddCustomContext("blas_threads", std::to_string(poseidon::trainer::reference::blasThreads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
