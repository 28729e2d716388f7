#include "trainer/wfbp/link_probe.h"

#include <fmt/format.h>

#include <algorithm>

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
    for (int r = 0; r <= options.repetitions; ++r) {  // exchange 0 warms the path up, untimed
      const auto began = Clock::now();
      // The receive is posted before anything is sent, so neither side's message waits for room.
      transport::RequestPtr received = pair.recv(kProbeTag, **in_region, 0, size);
      if (initiator) {
        POSEIDON_RETURN_IF_ERROR(pair.send(kProbeTag, **out_region, 0, size)->wait(deadline));
        POSEIDON_RETURN_IF_ERROR(received->wait(deadline));
      } else {
        POSEIDON_RETURN_IF_ERROR(received->wait(deadline));
        POSEIDON_RETURN_IF_ERROR(pair.send(kProbeTag, **out_region, 0, size)->wait(deadline));
      }
      if (received->bytes() != size) {
        return makeStatus(StatusCode::kProtocolError, "link probe: {} sent {} bytes, expected {}", pair.peerName(),
                          received->bytes(), size);
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
