#include "ps/start_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "scheme/start_agreement.h"

namespace poseidon::ps {

Status agreeOnPsJob(transport::bootstrap::Store& store, const PsJob& job, int rank, const model::Model& model,
                    const ChunkLayout& layout, const Consistency& consistency, const ServerSetUp* server,
                    Deadline deadline) {
  const auto describe = [&job](int r) {
    return job.isServerRank(r) ? fmt::format("server {} (rank {})", r - job.workers, r)
                               : fmt::format("worker {} (rank {})", r, r);
  };
  model::Fingerprint job_items = model::modelFingerprint(model);
  job_items.add("ps.workers", std::to_string(job.workers));
  job_items.add("ps.servers", std::to_string(job.servers));
  job_items.add("ps.chunk_bytes", std::to_string(layout.chunkBytes()));
  job_items.add("ps.chunks", std::to_string(layout.chunks().size()));
  job_items.add("ps.bytes_per_server", fmt::format("{}", fmt::join(layout.bytesPerServer(), ",")));
  job_items.add("ps.consistency", consistency.canonical());

  scheme::AgreementGroup everyone{fmt::format("PS job '{}'/start", job.name), {}, describe};
  for (int r = 0; r < job.workers + job.servers; ++r) everyone.ranks.push_back(r);
  POSEIDON_RETURN_IF_ERROR(scheme::agreeOnStart(store, everyone, rank, job_items, deadline));

  scheme::AgreementGroup servers{fmt::format("PS job '{}'/servers", job.name), {}, describe};
  for (int s = 0; s < job.servers; ++s) servers.ranks.push_back(job.serverRank(s));
  // A worker cannot compare the optimizer (it has none) but would otherwise learn of a mismatch
  // only as a lost server: it reads the servers' comparison instead.
  if (server == nullptr) return scheme::observeAgreement(store, servers, deadline);
  model::Fingerprint server_items;
  server_items.add("ps.optimizer", server->optimizer->canonical());
  server_items.add("ps.average", server->average ? "true" : "false");
  server_items.add("ps.checkpoints", server->checkpoints);
  return scheme::agreeOnStart(store, servers, rank, server_items, deadline);
}

}  // namespace poseidon::ps
