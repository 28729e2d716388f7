// The dispatch layer: check once (the same check both twins make), open the NVTX range, run the
// CPU twin or enqueue the CUDA kernel, and turn any failure into a message naming the call and
// the device.
#include "kernels/dispatch.h"

#include <fmt/format.h>

#include "kernels/chunk_update_check.h"
#include "kernels/dispatch_cuda.h"
#include "kernels/nvtx_range.h"
#include "kernels/pack_check.h"
#include "kernels/sf_update_check.h"

namespace poseidon::kernels {
namespace {

// NVTX range names: static strings, one per call and device.
struct Names {
  const char* cpu;
  const char* cuda;
};

template <typename Cpu, typename Cuda>
Status run(const char* call, Names names, Place place, const std::string& problem, Cpu&& on_cpu, Cuda&& on_cuda) {
  const char* device = place.device == Device::kCpu ? "cpu" : place.device == Device::kCuda ? "cuda" : nullptr;
  if (device == nullptr) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: device {} is not cpu (1) or cuda (2)", call,
                      static_cast<int>(place.device));
  }
  if (!problem.empty()) return makeStatus(StatusCode::kInvalidArgument, "{} on {}: {}", call, device, problem);
  NvtxRange range(place.device == Device::kCpu ? names.cpu : names.cuda);
  std::string error;
  if (place.device == Device::kCpu) {
    on_cpu();  // checked above: the CPU twins' own checks pass
  } else {
    error = on_cuda();
  }
  if (error.empty()) return Status::ok();
  // No CUDA in this build, no device or a failing launch: the caller cannot fix the arguments.
  return makeStatus(StatusCode::kUnavailable, "{} on {}: {}", call, device, error);
}

}  // namespace

Status chunkUpdate(const ChunkUpdate& update, Place place) {
  return run(
      "chunkUpdate", {"chunkUpdate cpu", "chunkUpdate cuda"}, place, chunkUpdateProblem(update),
      [&] { chunkUpdateCpu(update); }, [&] { return dispatch_detail::chunkUpdateOnCuda(update, place.stream); });
}

Status sfUpdate(const SfUpdate& update, Place place) {
  const std::string problem = place.device == Device::kCpu ? sfUpdateCpuProblem(update) : sfUpdateProblem(update);
  return run(
      "sfUpdate", {"sfUpdate cpu", "sfUpdate cuda"}, place, problem, [&] { sfUpdateCpu(update); },
      [&] { return dispatch_detail::sfUpdateOnCuda(update, place.stream); });
}

Status pack(const PackJob& job, Place place) {
  return run(
      "pack", {"pack cpu", "pack cuda"}, place, packProblem(job, place.device == Device::kCpu), [&] { packCpu(job); },
      [&] { return dispatch_detail::packOnCuda(job, place.stream); });
}

Status unpack(const PackJob& job, Place place) {
  return run(
      "unpack", {"unpack cpu", "unpack cuda"}, place, packProblem(job, place.device == Device::kCpu),
      [&] { unpackCpu(job); }, [&] { return dispatch_detail::unpackOnCuda(job, place.stream); });
}

}  // namespace poseidon::kernels
