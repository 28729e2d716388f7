#include "tools/ps/job_options.h"

#include <fmt/format.h>

#include <limits>

#include "model/spec.h"
#include "ps/imm_code.h"
#include "tools/cli/readable_range.h"

namespace poseidon::tools {

void addJobOptions(CLI::App& app, JobOptions& o) {
  app.add_option("--model", o.model_spec,
                 "The model (model/spec.h): a zoo name (vgg19, vgg19-22k, resnet50, ...), uniform:<tensors>x<floats> "
                 "(float32; uniform:25x1048576 is 100 MiB), tensors:<name>=<floats>,... or fc:/conv:/other: sections")
      ->type_name("SPEC")
      ->required();
  app.add_option("--workers", o.workers, "Worker ranks P1 (ranks 0..P1-1; default: the job's size minus --servers)")
      ->type_name("N")
      ->check(CLI::Range(1, static_cast<int>(ps::kMaxWorkers)));
  app.add_option("--servers", o.servers, "Server ranks P2 (ranks P1..P1+P2-1; default 1)")
      ->type_name("N")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--chunk-bytes", o.chunk_bytes, "Chunk size: a multiple of 4 bytes (default 2M; K, M suffixes)")
      ->type_name("BYTES")
      ->transform(CLI::AsSizeValue(false))
      // transform() puts its validator first, so this runs before the size transform, which
      // would read "-8" as 2^64 - 8.
      ->transform(CLI::Validator(
          [](std::string& text) {
            return text.find('-') == std::string::npos ? std::string()
                                                       : fmt::format("'{}': expected a positive size in bytes", text);
          },
          "POSITIVE"));
  app.add_option("--consistency", o.consistency_spec,
                 "bsp (default), ssp:<staleness>, async or async:push=<n>,fetch=<n>")
      ->type_name("MODEL");
  app.add_option(
         "--optimizer", o.optimizer_spec,
         "sgd (default), sgd:lr=0.1,momentum=0.9,wd=5e-4, adagrad:lr=..., adam:lr=... (see kernels/optimizer_config.h)")
      ->type_name("SPEC");
  app.add_option("--backend", o.backend, "Transport backend: tcp (default) or verbs")
      ->type_name("NAME")
      ->check(CLI::IsMember({"tcp", "verbs"}));
  app.add_option("--address", o.address,
                 "Local address the transport listens on and advertises (default: this host's address on the route "
                 "to rank 0's store)")
      ->type_name("ADDRESS");
  app.add_option("--streams", o.streams, "tcp: parallel connections per pair (default 1)")
      ->type_name("N")
      ->check(CLI::Range(1, kMaxStreams));
  app.add_option("--progress", o.progress,
                 "Who drives the transport while a thread waits: waiters (default: the waiting thread reads its "
                 "sockets itself) or engine (only the progress engine's thread, handing each completion over)")
      ->type_name("MODE")
      ->check(CLI::IsMember({"waiters", "engine"}));
  app.add_option("--secret", o.secret, "The job's shared secret (default: $POSEIDON_SECRET)")->type_name("SECRET");
  app.add_option("--timeout", o.timeout_s,
                 fmt::format("Seconds any one wait for a peer may take: start-up, each iteration, the end (default {})",
                             kDefaultTimeoutSeconds))
      ->type_name("SECONDS")
      ->check(CLI::Range(1, kMaxTimeoutSeconds));
  app.add_option("--rank", o.rank, "This process's rank (with --size; overrides POSEIDON_RANK, mpirun, srun)")
      ->type_name("RANK")
      ->check(readableRange(0, std::numeric_limits<int>::max() - 1));
  app.add_option("--size", o.size, "Ranks in the job, workers + servers (with --rank)")
      ->type_name("N")
      ->check(readableRange(1, std::numeric_limits<int>::max()));
  app.add_option("--root", o.root, "host:port of rank 0's store (overrides POSEIDON_ROOT)")->type_name("HOST:PORT");
  app.add_option("--job-name", o.job_name, "Prefix of the job's keys in the store (default ps)")->type_name("NAME");
}

std::string checkJobOptions(JobOptions& o, const char* environment_secret) {
  auto model = model::parseModelSpec(o.model_spec);
  if (!model) return fmt::format("--model: {}", model.status().message());
  o.model = std::move(*model);
  o.model_bytes = o.model.totalParams() * sizeof(float);  // a parsed model has at most 2^53 floats
  if (o.chunk_bytes == 0 || o.chunk_bytes % sizeof(float) != 0 || o.chunk_bytes > kMaxChunkBytes) {
    return fmt::format("--chunk-bytes {}: expected a positive multiple of 4 bytes up to {}", o.chunk_bytes,
                       kMaxChunkBytes);
  }
  // The protocol numbers a server's chunks in 14 bits (ps/imm_code.h); checked here so a model too
  // big for the job fails before anything is allocated for it.
  const uint64_t chunks = (o.model_bytes + o.chunk_bytes - 1) / o.chunk_bytes;
  const uint64_t per_server = (chunks + static_cast<uint64_t>(o.servers) - 1) / static_cast<uint64_t>(o.servers);
  if (per_server > ps::kMaxChunksPerServer) {
    return fmt::format(
        "--model '{}' ({} bytes) is {} chunks of {} bytes, {} per server on {} servers: expected at "
        "most {} per server (use bigger --chunk-bytes or more --servers)",
        o.model_spec, o.model_bytes, chunks, o.chunk_bytes, per_server, o.servers, ps::kMaxChunksPerServer);
  }
  auto consistency = ps::parseConsistency(o.consistency_spec);
  if (!consistency) return fmt::format("--consistency: {}", consistency.status().message());
  o.consistency = *consistency;
  auto optimizer = kernels::parseOptimizer(o.optimizer_spec);
  if (!optimizer) return fmt::format("--optimizer: {}", optimizer.status().message());
  o.optimizer = *optimizer;
  if ((o.rank >= 0) != (o.size >= 0)) {
    return o.rank >= 0 ? fmt::format("--rank {} needs --size too (or neither: the launch environment)", o.rank)
                       : fmt::format("--size {} needs --rank too (or neither: the launch environment)", o.size);
  }
  if (o.rank >= o.size) return fmt::format("--rank {}: expected a rank in [0, {}) (--size {})", o.rank, o.size, o.size);
  if (o.job_name.empty()) return "--job-name '': expected a non-empty prefix";
  if (o.secret.empty() && environment_secret != nullptr) o.secret = environment_secret;
  return {};
}

void warnIfNoSecret(const JobOptions& options, const char* program) {
  if (!options.secret.empty()) return;
  fmt::print(stderr,
             "{}: warning: no secret (--secret or POSEIDON_SECRET): any process that reaches the data port "
             "may join\n",
             program);
}

std::optional<int> parseCommandLine(CLI::App& app, int argc, const char* const* argv,
                                    const std::function<std::string()>& check) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {}\nRun with --help for the options.\n", app.get_name(), e.what());
    return 2;
  }
  if (const std::string error = check(); !error.empty()) {
    fmt::print(stderr, "{}: {}\nRun with --help for the options.\n", app.get_name(), error);
    return 2;
  }
  return std::nullopt;
}

std::optional<int> parseCommandLine(const char* program, const std::string& description, int argc,
                                    const char* const* argv, const std::function<void(CLI::App&)>& add_options,
                                    const std::function<std::string()>& check) {
  CLI::App app{description, program};
  add_options(app);
  return parseCommandLine(app, argc, argv, check);
}

}  // namespace poseidon::tools
