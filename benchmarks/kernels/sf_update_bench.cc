// The fused SF reconstruction + update's CPU twin against OpenBLAS sgemm on the same shapes: W is
// 4096 x 4096, P = 4 peers, depth K * P = 32, 256, 1024. sgemm computes C = U V^T (beta 0) with
// U = [U_0 .. U_3] (4096 x KP) and V likewise; the SF update does the same multiply-adds and also
// applies SGD with momentum to W (read and written once, with its velocity). Both count
// 2 * 4096 * 4096 * KP flops and run on one core (OpenBLAS is set to one thread; the kernels are
// single-threaded by design: the trainer owns the threads). Target: >= 0.8 of sgemm's FLOP/s for
// the exact method (bit-identical to the CUDA kernel) and, for comparison, the kBlas method. If
// OpenBLAS picked kernels weaker than the CPU, the program reruns itself with OPENBLAS_CORETYPE.
//
//   build/benchmarks/kernels/sf_update_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmarks/kernels/bench_buffers.h"
#include "benchmarks/kernels/ratio_report.h"
#include "kernels/sf_update.h"

namespace poseidon::bench {
namespace {

using kernels::SfMethod;

constexpr size_t kSide = 4096;
constexpr size_t kPeers = 4;

double flops(size_t depth) { return 2.0 * kSide * kSide * static_cast<double>(depth); }

void sgemm(benchmark::State& state, size_t depth) {
  const Floats u = randomFloats(kSide * depth, -1, 1, 1), v = randomFloats(kSide * depth, -1, 1, 2);
  const Floats c = randomFloats(kSide * kSide, -1, 1, 3);
  const int n = static_cast<int>(kSide), k = static_cast<int>(depth);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, k, 1.0f, u.get(), k, v.get(), k, 0.0f, c.get(), n);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(flops(depth), benchmark::Counter::kIsIterationInvariantRate);
}

void sfUpdate(benchmark::State& state, size_t depth, SfMethod method, kernels::OptimizerKind kind, float momentum) {
  const size_t rank = depth / kPeers;
  std::vector<Floats> factors;
  std::vector<const float*> u, v;
  for (size_t p = 0; p < kPeers; ++p) {
    factors.push_back(randomFloats(kSide * rank, -1, 1, 10 + static_cast<unsigned>(p)));
    u.push_back(factors.back().get());
    factors.push_back(randomFloats(kSide * rank, -1, 1, 20 + static_cast<unsigned>(p)));
    v.push_back(factors.back().get());
  }
  const Floats params = randomFloats(kSide * kSide, -1, 1, 4), velocity = randomFloats(kSide * kSide, -1, 1, 5);
  kernels::SfUpdate update;
  update.params = params.get();
  update.state0 = velocity.get();
  update.rows = update.cols = kSide;
  update.rank = rank;
  update.u = u;
  update.v = v;
  update.step.kind = kind;
  update.step.lr = 1e-6f;
  update.step.grad_scale = 1.0f / kPeers;
  update.step.weight_decay = 1e-4f;
  update.step.momentum = momentum;
  update.method = method;
  for (auto _ : state) {
    kernels::sfUpdateCpu(update);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(flops(depth), benchmark::Counter::kIsIterationInvariantRate);
}

// Debian's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels from a table of CPU models and falls
// back to its generic Prescott (SSE3) kernels on a model newer than the table: this machine's
// Xeon (family 6, model 207) gets ~30 GFLOP/s instead of ~140. A baseline that slow proves
// nothing, so when the kernel OpenBLAS chose is weaker than the CPU, this program runs itself
// again with OPENBLAS_CORETYPE naming the right one (read when the library loads) and says so.
void useTheBestOpenBlasKernel(char** argv) {
  std::string core = openblas_get_corename();
  for (char& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const char* want = nullptr;
  if (__builtin_cpu_supports("avx512f")) {
    if (core != "skylakex" && core != "cooperlake" && core != "sapphirerapids") want = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    if (core == "prescott" || core == "core2" || core == "nehalem" || core == "sandybridge") want = "Haswell";
  }
  if (want != nullptr && std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    std::fprintf(stderr, "OpenBLAS chose its %s kernels for this CPU; running again with OPENBLAS_CORETYPE=%s\n",
                 openblas_get_corename(), want);
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
    std::perror("execv /proc/self/exe");  // carry on with the weak baseline, having said so
  }
  std::printf("sgemm baseline: %s, %s kernels, 1 thread\n", openblas_get_config(), openblas_get_corename());
}

}  // namespace
}  // namespace poseidon::bench

int main(int argc, char** argv) {
  using namespace poseidon::bench;
  using poseidon::kernels::OptimizerKind;
  useTheBestOpenBlasKernel(argv);
  openblas_set_num_threads(1);
  std::vector<Ratio> ratios;
  for (size_t depth : {32, 256, 1024}) {
    const std::string kp = "/kp" + std::to_string(depth);
    benchmark::RegisterBenchmark(("sgemm" + kp).c_str(), [depth](benchmark::State& s) { sgemm(s, depth); });
    benchmark::RegisterBenchmark(("sf_exact/momentum" + kp).c_str(), [depth](benchmark::State& s) {
      sfUpdate(s, depth, SfMethod::kExact, OptimizerKind::kSgd, 0.9f);
    });
    benchmark::RegisterBenchmark(("sf_blas/momentum" + kp).c_str(), [depth](benchmark::State& s) {
      sfUpdate(s, depth, SfMethod::kBlas, OptimizerKind::kSgd, 0.9f);
    });
    ratios.push_back({"sf_exact/momentum" + kp, "sgemm" + kp, "FLOP/s", 0.8});
    ratios.push_back({"sf_blas/momentum" + kp, "sgemm" + kp, "FLOP/s", 0.8});
  }
  // Plain SGD (no velocity) at the shallowest depth, where W's traffic weighs most.
  benchmark::RegisterBenchmark(
      "sf_exact/sgd/kp32", [](benchmark::State& s) { sfUpdate(s, 32, SfMethod::kExact, OptimizerKind::kSgd, 0.0f); });
  ratios.push_back({"sf_exact/sgd/kp32", "sgemm/kp32", "FLOP/s", 0.8});
  return runWithRatios(argc, argv, ratios);
}
