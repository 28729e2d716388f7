// A custom training loop: the Fashion-MNIST CNN trained data-parallel through Poseidon's embedding
// API (trainer/api/session.h). Every process of the job runs this program; the launch environment
// says which rank it is (POSEIDON_RANK, POSEIDON_SIZE, POSEIDON_ROOT=host:port of rank 0):
// ranks 0..workers-1 train, the next `servers` ranks are the parameter-server shards.
//
//   custom_training_loop [--steps=200] [--batch=64] [--workers=2] [--servers=1] [--log-every=10] [--optimizer=SPEC]
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <string_view>

#include "trainer/api/session.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/data/shard.h"
#include "trainer/reference/fashion_cnn.h"

namespace {

using namespace poseidon;
namespace reference = poseidon::trainer::reference;
namespace data = poseidon::trainer::data;

struct Flags {
  uint32_t steps = 200, batch = 64, workers = 2, servers = 1, log_every = 10;
  std::string optimizer = "sgd:lr=0.05,momentum=0.9";
};

Result<Flags> parseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq), value = eq == arg.npos ? "" : arg.substr(eq + 1);
    if (name == "--optimizer") {
      flags.optimizer = value;
      continue;
    }
    uint32_t* field = name == "--steps"       ? &flags.steps
                      : name == "--batch"     ? &flags.batch
                      : name == "--workers"   ? &flags.workers
                      : name == "--servers"   ? &flags.servers
                      : name == "--log-every" ? &flags.log_every
                                              : nullptr;
    const char* end = value.data() + value.size();
    uint32_t n = 0;
    if (!field || std::from_chars(value.data(), end, n).ptr != end || n == 0 || n > (1u << 30)) {
      const char* expected = "--optimizer=SPEC or --steps|batch|workers|servers|log-every=N, 1 <= N <= 2^30";
      return makeStatus(StatusCode::kInvalidArgument, "argument '{}': expected {}", arg, expected);
    }
    *field = n;
  }
  return flags;
}

// One batch as the network takes it (normalised floats, int32 labels), in buffers made once.
struct Batch {
  Batch(size_t k, size_t pixels) : images(k * pixels), bytes(k), labels(k) {}
  Status read(const data::ImageSet& set, std::span<const uint32_t> indices) {
    POSEIDON_RETURN_IF_ERROR(set.gather(indices, images, bytes));
    std::copy(bytes.begin(), bytes.end(), labels.begin());
    return Status::ok();
  }
  std::vector<float> images;
  std::vector<uint8_t> bytes;
  std::vector<int32_t> labels;
};

// Hands the library each parametric layer's buffers, input to output. They are the network's
// own memory: the library reads gradients and writes parameters there, no copy on either side.
Status registerLayers(trainer::Session& session, reference::Network& net) {
  for (size_t l = 0; l < net.parametricCount(); ++l) {
    const model::Layer shape = *net.parametric(l).describe();
    // params: weight then bias, updated in place by every sync.
    trainer::LayerRegistration layer{
        .name = shape.name(), .kind = shape.kind(), .fc = shape.fc(), .conv = shape.conv(), .params = net.params(l)};
    if (shape.isFullyConnected()) {
      // FC layers give their sufficient factors X and dY instead of dW = dY^T X: SFB broadcasts
      // them as they are, and the library forms dW only when the PS carries the layer.
      POSEIDON_RETURN_IF_ERROR(net.setFactorsOnly(l, true));
      auto factors = net.factors(l);  // fixed memory, valid after each backward's report
      if (!factors) return factors.status();
      layer.input = factors->input;
      layer.output_gradient = factors->output_gradient;
    } else {
      layer.gradient = net.grads(l);  // conv layers: the gradient, in the parameters' layout
    }
    if (auto index = session.addLayer(layer); !index) return index.status();
  }
  return Status::ok();
}

// Accuracy over the whole batches of the test set (the last 10000 mod K images are left out).
Result<double> testAccuracy(reference::Network& net, const data::ImageSet& test) {
  const size_t k = net.batch();
  std::vector<uint32_t> indices(k);
  Batch batch(k, test.pixelsPerImage());
  size_t correct = 0, seen = 0;
  for (; seen + k <= test.size(); seen += k) {
    std::iota(indices.begin(), indices.end(), static_cast<uint32_t>(seen));
    POSEIDON_RETURN_IF_ERROR(batch.read(test, indices));
    auto result = net.forward(batch.images, batch.labels);
    if (!result) return result.status();
    correct += result->correct;
  }
  return static_cast<double>(correct) / static_cast<double>(seen);
}

// Registers the network, trains it and, on worker 0, tests it.
Status trainNetwork(trainer::Session& session, const Flags& flags, reference::Network& net,
                    const data::ImageSet& train_set, data::EpochSharder& sharder) {
  POSEIDON_RETURN_IF_ERROR(registerLayers(session, net));
  // Sets up the schemes HybComm picked per layer; fails on every worker if they registered
  // different layers, before any training.
  POSEIDON_RETURN_IF_ERROR(session.start());
  // Wait-free backpropagation ([Poseidon 2015] Algorithm 2) through the network's two hooks.
  net.setHooks({
      // Before layer l's forward: waits for that layer's last sync alone, so the syncs of the
      // layers above still run while the layers below compute.
      .before_forward = [&session](size_t l) { return session.waitForParameters(l); },
      // Right after layer l's backward: returns at once; the sync runs while the backward pass
      // goes on with layers l-1..0.
      .gradient_ready = [&session](size_t l) { return session.gradientReady(l); },
  });
  Batch batch(flags.batch, train_set.pixelsPerImage());
  data::Position position;
  const auto begin = std::chrono::steady_clock::now();
  for (uint64_t step = 1; step <= flags.steps; ++step, position = sharder.next(position)) {
    auto indices = sharder.batch(position);
    if (!indices) return indices.status();
    POSEIDON_RETURN_IF_ERROR(batch.read(train_set, *indices));
    auto loss = net.forward(batch.images, batch.labels);  // calls before_forward(l) per layer
    if (!loss) return loss.status();
    POSEIDON_RETURN_IF_ERROR(net.backward());  // calls gradient_ready(l), top layer first
    // Every layer has reported: the library closes the iteration (BSP: the next one's syncs
    // need every worker's gradients).
    POSEIDON_RETURN_IF_ERROR(session.endIteration());
    if (step % flags.log_every == 0 || step == flags.steps) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      fmt::print("{} step {}/{} loss {:.4f} ({:.0f} ms/step)\n", session.describe(), step, flags.steps, loss->loss,
                 1000 * seconds / static_cast<double>(step));
      std::fflush(stdout);  // progress shows at once when the output goes to a file
    }
  }
  // Waits for the last syncs and tells the servers this worker is done; the parameters in the
  // network's memory are then the final ones, identical on every worker.
  POSEIDON_RETURN_IF_ERROR(session.finish());
  if (session.rank() != 0) return Status::ok();
  net.setHooks({});  // the session is over: evaluation runs on the final parameters alone
  auto test_set = data::loadFashionMnist(data::Split::kTest);
  if (!test_set) return test_set.status();
  auto accuracy = testAccuracy(net, *test_set);
  if (!accuracy) return accuracy.status();
  fmt::print("test accuracy {:.4f} after {} steps of {} workers x batch {}\n", *accuracy, flags.steps, flags.workers,
             flags.batch);
  return Status::ok();
}

Status train(trainer::Session& session, const Flags& flags) {
  auto train_set = data::loadFashionMnist(data::Split::kTrain);
  if (!train_set) return train_set.status();
  // Each worker reads its own disjoint part of every epoch's shuffle ([Poseidon ATC'17]).
  const data::ShardConfig shard{/*seed=*/7, flags.workers, static_cast<uint32_t>(session.rank()), flags.batch};
  auto sharder = data::EpochSharder::create(static_cast<uint32_t>(train_set->size()), shard);
  if (!sharder) return sharder.status();
  // Any seed will do: start() copies worker 0's parameters into every worker's.
  auto net = reference::buildFashionCnn(flags.batch, /*seed=*/1 + static_cast<uint32_t>(session.rank()));
  if (!net) return net.status();
  // Once registered, the network's buffers are the session's: a sync may still be writing into
  // them after a failure, until finish() stops it. So a failure finishes the session before the
  // network goes.
  const Status status = trainNetwork(session, flags, *net, *train_set, *sharder);
  if (!status.isOk()) (void)session.finish();
  return status;
}

Status run(const Flags& flags) {
  trainer::SessionOptions options;  // every rank gives the same options
  options.job = "custom-training-loop";
  options.layout = {.workers = static_cast<int>(flags.workers), .ps_servers = static_cast<int>(flags.servers)};
  options.batch = flags.batch;
  auto optimizer = kernels::parseOptimizer(flags.optimizer);
  if (!optimizer) return optimizer.status();
  options.optimizer = *optimizer;  // every worker applies it to the workers' mean gradient
  if (const char* secret = std::getenv("POSEIDON_SECRET")) options.device.secret = secret;
  // Rendezvous from the launch environment: worker 0 serves the store, every rank opens its device.
  auto session = trainer::Session::join(options);
  if (!session) return session.status();
  // A server rank holds its shard of the model and serves the workers until each has finished.
  if (!(*session)->isWorker()) return (*session)->serve();
  return train(**session, flags);
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = parseFlags(argc, argv);
  const Status status = flags ? run(*flags) : flags.status();
  if (!status.isOk()) {
    fmt::print(stderr, "custom_training_loop: {}\n", status.toString());
    return 1;
  }
  return 0;
}
