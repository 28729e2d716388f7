#include "tools/ps/bench_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace poseidon::tools {

using transport::RequestPtr;

const char* orderName(BenchSchedule::Order order) {
  return order == BenchSchedule::Order::kInterleaved ? kInterleaved : kPushThenPull;
}

std::string BenchSchedule::describe() const {
  return window == 0 ? fmt::format("{}, no window", orderName(order))
                     : fmt::format("{}, window {} layer(s)", orderName(order), window);
}

Result<Clock::time_point> exchange(ps::Client& client, const BenchSchedule& schedule, bool push, Deadline deadline) {
  const size_t layers = client.layerCount();
  const bool interleaved = schedule.order == BenchSchedule::Order::kInterleaved;
  std::vector<RequestPtr> pushes;
  std::vector<RequestPtr> pulls;
  size_t acknowledged = 0;  // pushes already waited for, oldest first
  for (size_t layer = 0; push && layer < layers; ++layer) {
    if (schedule.window > 0 && pushes.size() - acknowledged >= schedule.window) {
      POSEIDON_RETURN_IF_ERROR(client.wait(pushes[acknowledged++], deadline));
    }
    pushes.push_back(client.push(layer));
    if (interleaved) pulls.push_back(client.pull(layer));
  }
  if (!push || !interleaved) {
    for (size_t layer = 0; layer < layers; ++layer) pulls.push_back(client.pull(layer));
  }
  Clock::time_point pushed{};
  for (const RequestPtr& request : pushes) {
    POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
    pushed = std::max(pushed, request->completedAt());
  }
  for (const RequestPtr& request : pulls) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
  return pushed;
}

}  // namespace poseidon::tools
