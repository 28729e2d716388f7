#include "trainer/wfbp/link_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace poseidon::trainer {

namespace {

constexpr uint32_t kProbeTag = 0x70726f62;  // "prob"

}  // namespace

Result<std::vector<ProbeSample>> probeLink(transport::Context& context, int peer, bool initiator,
                                           const LinkProbeOptions& options, Deadline deadline) {
  if (options.sizes.empty() || options.repetitions < 1) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "link probe: {} sizes and {} repetitions, expected at least one of each", options.sizes.size(),
                      options.repetitions);
  }
  const uint64_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
  std::vector<uint8_t> out(largest, 0x5a), in(largest);
  auto out_region = context.registerMemory(out.data(), out.size());
  if (!out_region) return out_region.status().withContext("link probe");
  auto in_region = context.registerMemory(in.data(), in.size());
  if (!in_region) return in_region.status().withContext("link probe");
  transport::Pair& pair = context.pair(peer);
  std::vector<ProbeSample> samples;
  std::vector<double> times;
  for (uint64_t size : options.sizes) {
    times.clear();
    const std::string what = fmt::format("link probe with {}, {} bytes", pair.peerName(), size);
    // Each side keeps its next receive posted before it sends, so no message waits for room.
    transport::RequestPtr received = pair.recv(kProbeTag, **in_region, 0, size);
    for (int r = 0; r <= options.repetitions; ++r) {  // exchange 0 warms the path up, untimed
      const auto began = Clock::now();
      transport::RequestPtr got = received;
      if (initiator) {
        POSEIDON_RETURN_IF_ERROR(pair.send(kProbeTag, **out_region, 0, size)->wait(deadline).withContext(what));
        POSEIDON_RETURN_IF_ERROR(got->wait(deadline).withContext(what));
        if (r < options.repetitions) received = pair.recv(kProbeTag, **in_region, 0, size);
      } else {
        POSEIDON_RETURN_IF_ERROR(got->wait(deadline).withContext(what));
        if (r < options.repetitions) received = pair.recv(kProbeTag, **in_region, 0, size);
        POSEIDON_RETURN_IF_ERROR(pair.send(kProbeTag, **out_region, 0, size)->wait(deadline).withContext(what));
      }
      if (got->bytes() != size) {
        return makeStatus(StatusCode::kProtocolError, "link probe: {} sent {} bytes, expected {}", pair.peerName(),
                          got->bytes(), size);
      }
      if (r > 0) times.push_back(std::chrono::duration<double>(Clock::now() - began).count() / 2);
    }
    if (!initiator) continue;
    std::sort(times.begin(), times.end());
    times.resize((times.size() + 1) / 2);
    for (double t : times) samples.push_back({size, t});
  }
  return samples;
}

}  // namespace poseidon::trainer
