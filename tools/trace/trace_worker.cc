#include "tools/trace/trace_worker.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace poseidon::tools {

namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// One layer's memory, the scaled shape's: made once, reused every iteration.
struct LayerBuffers {
  std::vector<float> params, input, output_gradient, gradient;
};

// Any fixed values: small, so the updates stay finite over any number of iterations.
void fill(std::vector<float>& values, size_t count, size_t salt) {
  values.resize(count);
  for (size_t i = 0; i < count; ++i) values[i] = 1e-3f * static_cast<float>(static_cast<int>((i + salt) % 17) - 8);
}

Status registerLayers(trainer::Session& session, const trainer::trace::TraceModel& trace,
                      std::vector<LayerBuffers>& buffers) {
  buffers.resize(trace.layers.size());
  const size_t k = trace.scaled_batch;
  for (size_t l = 0; l < trace.layers.size(); ++l) {
    const model::Layer& layer = trace.layers[l].scaled;
    LayerBuffers& b = buffers[l];
    fill(b.params, layer.params(), l);
    trainer::LayerRegistration registration{
        .name = layer.name(), .kind = layer.kind(), .fc = layer.fc(), .conv = layer.conv(), .params = b.params};
    if (layer.isFullyConnected()) {
      // The factors of batch K (at the scale): X is K x N, dY is K x M.
      fill(b.input, k * layer.fc().cols, l + 1);
      fill(b.output_gradient, k * layer.fc().rows, l + 2);
      registration.input = b.input;
      registration.output_gradient = b.output_gradient;
    } else {
      fill(b.gradient, layer.params(), l + 3);
      registration.gradient = b.gradient;
    }
    if (auto index = session.addLayer(registration); !index) return index.status();
  }
  return Status::ok();
}

// Sleeps through `seconds` of compute counted from `from` (a run of steps with no wait between
// them sleeps to one running target, so the oversleep of each step does not add up); returns
// the end of the step and adds the time slept to `compute`.
Clock::time_point computeUntil(Clock::time_point from, double seconds, double& compute) {
  const auto target = from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto before = Clock::now();
  if (target > before) std::this_thread::sleep_until(target);
  const auto after = Clock::now();
  compute += secondsBetween(before, after);
  return std::max(target, after);
}

}  // namespace

double TraceIteration::idleShare() const {
  if (seconds <= 0) return 0;
  return std::clamp(1 - compute_seconds / seconds, 0.0, 1.0);
}

void SchemeTraffic::add(const trainer::SyncRecord& record) {
  if (record.iteration < first_measured_) return;
  std::lock_guard lock(mutex_);
  Totals& t = totals_[static_cast<size_t>(record.scheme)];
  t.sent += record.bytes_sent;
  t.received += record.bytes_received;
  ++t.syncs;
  if (records_.size() < records_.capacity()) records_.push_back(record);
}

std::vector<trainer::SyncRecord> SchemeTraffic::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

SchemeTraffic::Totals SchemeTraffic::totals(scheme::Scheme s) const {
  std::lock_guard lock(mutex_);
  return totals_[static_cast<size_t>(s)];
}

Result<std::vector<TraceIteration>> runTraceWorker(trainer::Session& session, const TraceCommandLine& c) {
  const trainer::trace::TraceModel& trace = c.trace;
  std::vector<LayerBuffers> buffers;
  POSEIDON_RETURN_IF_ERROR(registerLayers(session, trace, buffers));
  POSEIDON_RETURN_IF_ERROR(session.start());
  const size_t layers = trace.layers.size();
  std::vector<TraceIteration> measured;
  measured.reserve(c.iterations);
  TraceIteration current;
  Clock::time_point iteration_start{};
  const uint64_t total = c.warmup + c.iterations;
  for (uint64_t it = 0; it <= total; ++it) {
    // Forward: each layer waits for its own update only, then computes.
    Clock::time_point begin = Clock::now();
    if (it > c.warmup) {  // the previous iteration ends where this one's first wait begins
      current.seconds = secondsBetween(iteration_start, begin);
      measured.push_back(current);
    }
    iteration_start = begin;
    current = {};
    if (it == total) break;
    if (c.schedule == TraceSchedule::kNoOverlap) {  // the next forward pass starts once every layer is updated
      for (size_t l = 0; l < layers; ++l) POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
      current.wait_seconds += secondsBetween(begin, Clock::now());
    }
    Clock::time_point step_end = Clock::now();
    for (size_t l = 0; l < layers; ++l) {
      const auto wait_begin = Clock::now();
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
      const auto wait_end = Clock::now();
      current.wait_seconds += secondsBetween(wait_begin, wait_end);
      // No wait held this layer up: its compute follows the previous layer's back to back.
      const auto from = wait_end - wait_begin > std::chrono::microseconds(50) ? wait_end : step_end;
      step_end = computeUntil(from, trace.layers[l].forward_s, current.compute_seconds);
    }
    // Backward, top layer first; WFBP hands each layer's sync over as its step ends.
    for (size_t l = layers; l-- > 0;) {
      step_end = computeUntil(step_end, trace.layers[l].backward_s, current.compute_seconds);
      if (c.schedule == TraceSchedule::kWfbp) POSEIDON_RETURN_IF_ERROR(session.gradientReady(l));
    }
    if (c.schedule == TraceSchedule::kNoOverlap) {
      for (size_t l = layers; l-- > 0;) POSEIDON_RETURN_IF_ERROR(session.gradientReady(l));
    }
    POSEIDON_RETURN_IF_ERROR(session.endIteration());
    if (it + 1 == total) {  // the last measured iteration ends once every layer is updated
      const auto wait_begin = Clock::now();
      for (size_t l = 0; l < layers; ++l) POSEIDON_RETURN_IF_ERROR(session.waitForParameters(l));
      current.wait_seconds += secondsBetween(wait_begin, Clock::now());
    }
  }
  POSEIDON_RETURN_IF_ERROR(session.finish());
  return measured;
}

}  // namespace poseidon::tools
