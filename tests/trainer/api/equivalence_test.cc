// Training through the Session equals one process that does the workers' arithmetic itself.
//
// 4 workers of batch K train a small CNN on Fashion-MNIST for kSteps (200) under BSP, each worker on
// its own shard, through the embedding API (wait-free backprop: every layer's sync started from
// the backward pass, waited for before its next forward). One process then computes the same 4
// shards' gradients and combines them as each scheme does (reference_combiner.h): the workers'
// parameters must equal its parameters bit for bit, for the PS, SFB, the ring and HybComm's
// closed-form mix. And each step of it must agree with plain training on the batch of 4K within
// the rounding bound derived at planStepTolerance below. With MG-WFBP merging (a CNN of two
// adjacent convolutions synced as one message) the one process combines the merged unit as the
// scheme does: one tensor of both layers' gradients (the ring's segments are the unit's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/sanitizers.h"
#include "tests/trainer/api/reference_combiner.h"
#include "tests/trainer/api/session_job.h"
#include "tests/trainer/api/tiny_cnn.h"
#include "tools/train/batch_reader.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/hybcomm/hybcomm.h"
#include "trainer/reference/network_session.h"
#include "trainer/wfbp/merge_options.h"

namespace poseidon::testing {
namespace {

using trainer::reference::Network;

constexpr int kWorkers = 4;
constexpr size_t kBatch = 8;
// Sanitizer builds look for memory errors and races, which the first steps meet as well as the
// last: 50 steps there (ASan ran the 200 in 52 s, 3x the plain build), 200 in the plain build,
// which is what checks that nothing drifts.
#if POSEIDON_UNDER_TSAN || POSEIDON_UNDER_ASAN
constexpr uint64_t kSteps = 50;
#else
constexpr uint64_t kSteps = 200;
#endif
constexpr uint64_t kDataSeed = 7;
constexpr uint64_t kWorker0Seed = 100;
constexpr float kLr = 0.05f;
const char* const kOptimizer = "sgd:lr=0.05";

using Params = std::vector<std::vector<float>>;  // per layer

struct Case {
  const char* name;
  trainer::HybCommOptions hybcomm;
  const char* merge = "off";  // MergeOptions' text (merge_options.h)
  bool two_convs = false;     // tinyCnnTwoConvs instead of tinyCnn
  bool priority = false;      // SessionOptions::push.priority, with a window of one chunk
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

Result<Network> network(const Case& c, size_t batch, uint64_t seed) {
  return c.two_convs ? tinyCnnTwoConvs(batch, seed) : tinyCnn(batch, seed);
}

trainer::MergeOptions mergeOptions(const Case& c) { return trainer::parseMergeMode(c.merge).value(); }

trainer::SessionOptions sessionOptions(const Case& c) {
  trainer::SessionOptions options;
  options.job = "equivalence";
  options.layout = {kWorkers, 2, 0};
  options.batch = kBatch;
  options.optimizer = kernels::parseOptimizer(kOptimizer).value();
  options.hybcomm = c.hybcomm;
  options.merge = mergeOptions(c);
  options.chunk_bytes = 64 << 10;
  options.push.priority = c.priority;
  if (c.priority) options.push.window_bytes = options.chunk_bytes;  // the others' chunks wait: reordered
  options.sync_timeout = std::chrono::seconds(60);
  return options;
}

// Every worker's parameters after kSteps through the library.
std::vector<Params> trainThroughLibrary(const Case& c) {
  std::vector<Params> finals(kWorkers);
  const std::vector<Status> statuses = runSessionJob(sessionOptions(c), [&](trainer::Session& session, int w) {
    // Different seeds: worker 0's parameters must reach every worker at start().
    auto network = testing::network(c, kBatch, kWorker0Seed + static_cast<uint64_t>(w));
    if (!network) return network.status();
    POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
    POSEIDON_RETURN_IF_ERROR(session.start());
    network->setHooks(trainer::reference::sessionHooks(session));
    auto reader = tools::BatchReader::create(
        fashionTrainSet(), {kDataSeed, kWorkers, static_cast<uint32_t>(w), static_cast<uint32_t>(kBatch)});
    if (!reader) return reader.status();
    trainer::data::Position position;
    for (uint64_t s = 0; s < kSteps; ++s) POSEIDON_RETURN_IF_ERROR(trainStep(*network, session, *reader, position));
    Params& mine = finals[static_cast<size_t>(w)];
    for (size_t l = 0; l < network->parametricCount(); ++l) {
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
      mine.emplace_back(network->params(l).begin(), network->params(l).end());
    }
    return session.finish();
  });
  EXPECT_EQ(failures(statuses), "");
  return finals;
}

// dst (cols x rows) = src (rows x cols)^T: the batch-major factors as the schemes send them.
void transpose(std::span<const float> src, size_t rows, size_t cols, std::span<float> dst) {
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
  }
}

// The largest |a - b| allowed between the library's step and plain batch-4K training's from the
// same parameters, element by element. Both compute the mean gradient as a sum of the same n real
// terms t = dy * x (the per-sample loss gradients are the same floats: the worker's 1/K and the
// library's 1/P multiply to plain training's 1/(PK), powers of two), in different orders and
// groupings. Any order of a floating-point dot product of n terms is within gamma_n * sum |t| of
// the exact value, gamma_n = n u / (1 - n u), u = 2^-24; two orders are within twice that. SGD
// then scales by lr, and each side rounds w - lr g once more (u |w'|). For a weight sum|t| is
// at most sum_samples,positions |dy| * max |x| (per output channel or row), which is what is
// computed; for a bias, sum |dy|.
std::vector<double> planStepTolerance(const Network& plain, size_t l, std::span<const float> after) {
  const auto& layer = plain.parametric(l);
  const model::Layer shape = *layer.describe();
  std::span<const float> x = plain.parametricInput(l), dy = plain.parametricOutputGradient(l);
  double max_x = 0;
  for (float v : x) max_x = std::max(max_x, std::abs(static_cast<double>(v)));
  const size_t outputs = shape.isFullyConnected() ? shape.fc().rows : shape.conv().out_channels;
  // dy is K x outputs x (positions): the sum of |dy| per output.
  const size_t per_sample = dy.size() / plain.batch(), positions = per_sample / outputs;
  std::vector<double> abs_dy(outputs, 0.0);
  for (size_t s = 0; s < plain.batch(); ++s) {
    for (size_t o = 0; o < outputs; ++o) {
      for (size_t q = 0; q < positions; ++q)
        abs_dy[o] += std::abs(static_cast<double>(dy[s * per_sample + o * positions + q]));
    }
  }
  const double u = std::ldexp(1.0, -24);
  const double n = static_cast<double>(plain.batch() * positions) *
                   (shape.isFullyConnected() ? 1.0 : static_cast<double>(shape.conv().in_channels * 25));
  const double gamma = n * u / (1 - n * u);
  const size_t weights = shape.tensors()[0].floats;
  const size_t per_output = weights / outputs;
  std::vector<double> tolerance(after.size());
  for (size_t i = 0; i < after.size(); ++i) {
    const bool bias = i >= weights;
    const size_t o = bias ? i - weights : i / per_output;
    const double terms = bias ? abs_dy[o] : abs_dy[o] * max_x;
    tolerance[i] = kLr * 2 * gamma * terms * (1 + u) + 2 * u * std::abs(static_cast<double>(after[i])) + 1e-30;
  }
  return tolerance;
}

struct Reference {
  Params params;           // after kSteps
  double worst_ratio = 0;  // the largest |library step - plain step| / tolerance seen
  size_t worst_layer = 0;
};

// The layer's part of its unit in a replica of the units' model.
std::span<float> layerParams(trainer::Replica& replica, const trainer::SyncUnits& units, size_t l) {
  return replica.params(units.unitOf(l)).subspan(units.offsetInUnit(l), units.floats(l));
}

// One process: the 4 shards' gradients combined as `schemes` (per unit) do, every step; and
// each step compared with plain training on the global batch from the same parameters.
Reference trainInOneProcess(const Case& c, const trainer::SyncUnits& units,
                            const std::vector<scheme::Scheme>& schemes) {
  Reference out;
  std::vector<Network> workers;
  for (int p = 0; p < kWorkers; ++p) {
    auto network = testing::network(c, kBatch, kWorker0Seed);
    EXPECT_TRUE(network.isOk());
    workers.push_back(std::move(*network));
    for (size_t l = 0; l < workers.back().parametricCount(); ++l) {
      if (workers.back().parametric(l).describe()->isFullyConnected()) (void)workers.back().setFactorsOnly(l, true);
    }
  }
  auto plain = testing::network(c, kBatch * kWorkers, kWorker0Seed);
  EXPECT_TRUE(plain.isOk());
  const model::Model model = workers[0].describe();
  ReferenceCombiner combiner(units.unitModel(), kernels::parseOptimizer(kOptimizer).value(), kWorkers);
  const size_t layers = model.layers().size();
  for (size_t l = 0; l < layers; ++l) {
    std::span<float> p = workers[0].params(l);
    std::copy(p.begin(), p.end(), layerParams(combiner.result(), units, l).begin());
  }
  std::vector<tools::BatchReader> readers;
  for (int p = 0; p < kWorkers; ++p) {
    readers.push_back(*tools::BatchReader::create(
        fashionTrainSet(), {kDataSeed, kWorkers, static_cast<uint32_t>(p), static_cast<uint32_t>(kBatch)}));
  }
  auto global =
      *tools::BatchReader::create(fashionTrainSet(), {kDataSeed, 1, 0, static_cast<uint32_t>(kBatch * kWorkers)});
  trainer::data::Position position;
  for (uint64_t s = 0; s < kSteps; ++s) {
    for (size_t l = 0; l < layers; ++l) {
      std::span<const float> now = layerParams(combiner.result(), units, l);
      for (Network& w : workers) std::copy(now.begin(), now.end(), w.params(l).begin());
      std::copy(now.begin(), now.end(), plain->params(l).begin());
    }
    for (int p = 0; p < kWorkers; ++p) {
      Network& w = workers[static_cast<size_t>(p)];
      EXPECT_TRUE(readers[static_cast<size_t>(p)].read(position).isOk());
      EXPECT_TRUE(w.forward(readers[static_cast<size_t>(p)].images(), readers[static_cast<size_t>(p)].labels()).isOk());
      EXPECT_TRUE(w.backward().isOk());
      trainer::Replica& in = combiner.worker(p);
      for (size_t l = 0; l < layers; ++l) {
        const model::Layer& shape = model.layers()[l];
        const size_t unit = units.unitOf(l);
        if (!shape.isFullyConnected()) {
          std::copy(w.grads(l).begin(), w.grads(l).end(), in.gradient(unit).begin() + units.offsetInUnit(l));
          continue;
        }
        const auto factors = *w.factors(l);  // an FC layer is a unit alone
        transpose(factors.output_gradient, kBatch, shape.fc().rows, in.u(unit));
        transpose(factors.input, kBatch, shape.fc().cols, in.v(unit));
      }
    }
    for (size_t u = 0; u < units.unitCount(); ++u) EXPECT_TRUE(combiner.step(u, schemes[u], s).isOk());
    // Plain batch-4K training from the same parameters: one SGD step.
    EXPECT_TRUE(global.read(position).isOk());
    EXPECT_TRUE(plain->forward(global.images(), global.labels()).isOk());
    EXPECT_TRUE(plain->backward().isOk());
    for (size_t l = 0; l < layers; ++l) {
      std::span<const float> after = layerParams(combiner.result(), units, l);
      const std::vector<double> tolerance = planStepTolerance(*plain, l, after);
      for (size_t i = 0; i < after.size(); ++i) {
        const double expected =
            static_cast<double>(plain->params(l)[i]) - kLr * static_cast<double>(plain->grads(l)[i]);
        const double ratio = std::abs(after[i] - expected) / tolerance[i];
        if (ratio > out.worst_ratio) {
          out.worst_ratio = ratio;
          out.worst_layer = l;
        }
      }
    }
    position = global.sharder().next(position);
  }
  for (size_t l = 0; l < layers; ++l) {
    std::span<const float> p = layerParams(combiner.result(), units, l);
    out.params.emplace_back(p.begin(), p.end());
  }
  return out;
}

// The units the Session syncs (merged or not) and the scheme HybComm gives each.
std::pair<trainer::SyncUnits, std::vector<scheme::Scheme>> unitsAndSchemes(const Case& c) {
  auto network = testing::network(c, kBatch, kWorker0Seed);
  auto planned = trainer::planMergeUnits(network->describe(), mergeOptions(c));
  EXPECT_TRUE(planned.isOk()) << planned.status().toString();
  const model::Model& units = planned->units.unitModel();
  auto decided = trainer::HybComm::create(units.layers(), {kWorkers, 2, static_cast<int64_t>(kBatch)}, c.hybcomm);
  EXPECT_TRUE(decided.isOk()) << decided.status().toString();
  std::vector<scheme::Scheme> schemes;
  for (size_t u = 0; u < units.layers().size(); ++u) schemes.push_back(decided->scheme(u));
  return {std::move(planned->units), std::move(schemes)};
}

class SessionEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(SessionEquivalence, FourWorkersEqualOneProcessBitForBit) {
  const Case& c = GetParam();
  const auto [units, schemes] = unitsAndSchemes(c);
  const std::vector<Params> library = trainThroughLibrary(c);
  const Reference reference = trainInOneProcess(c, units, schemes);
  ASSERT_EQ(library.size(), static_cast<size_t>(kWorkers));
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_EQ(library[static_cast<size_t>(w)].size(), reference.params.size()) << "worker " << w;
    for (size_t l = 0; l < reference.params.size(); ++l) {
      const auto& mine = library[static_cast<size_t>(w)][l];
      ASSERT_EQ(mine.size(), reference.params[l].size());
      size_t differ = 0;
      for (size_t i = 0; i < mine.size(); ++i)
        differ += std::memcmp(&mine[i], &reference.params[l][i], sizeof(float)) != 0;
      EXPECT_EQ(differ, 0u) << "worker " << w << " layer " << l << " (" << scheme::schemeName(schemes[units.unitOf(l)])
                            << "): " << differ << " of " << mine.size() << " parameters differ";
    }
  }
  // The bound assumes the batch-4K network computes each sample's activations with the same floats
  // as a batch-K worker. One convolution below the FC layers keeps that (measured: it holds); a
  // second one does not: OpenBLAS takes other kernel paths for the wider im2col sgemm of batch 4K,
  // so the FC layers' inputs already differ in the last bit (fc1 measured at 1.5 x the bound).
  // The merged cases check what merging changes, the bits against the one-process combiner.
  if (c.two_convs) return;
  EXPECT_LE(reference.worst_ratio, 1.0) << "a step of layer " << reference.worst_layer
                                        << " left the rounding bound of plain batch-4K training";
  EXPECT_GT(reference.worst_ratio, 0.0) << "the schemes never differed from plain training: is the check alive?";
}

trainer::HybCommOptions fixed(scheme::Scheme s) {
  trainer::HybCommOptions options;
  options.mode = trainer::HybCommMode::kFixed;
  options.fixed = s;
  return options;
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, SessionEquivalence,
    ::testing::Values(Case{"ps", fixed(scheme::Scheme::kPs)}, Case{"sfb", fixed(scheme::Scheme::kSfb)},
                      Case{"ring", fixed(scheme::Scheme::kRing)}, Case{"closed_form", trainer::HybCommOptions{}},
                      // MG-WFBP: positions from the output (0 fc2, 1 fc1, 2 conv2, 3 conv1), the
                      // two convolutions one message; on the ring their segments are the unit's.
                      Case{"ps_merged", fixed(scheme::Scheme::kPs), "fixed:0,1,2-3", true},
                      Case{"ring_merged", fixed(scheme::Scheme::kRing), "fixed:0,1,2-3", true},
                      // Priority reorders the PS's pushes; the sums, and so the bits, stay.
                      Case{"ps_priority", fixed(scheme::Scheme::kPs), "off", true, true}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace poseidon::testing
