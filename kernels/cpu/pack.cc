// CPU twin of pack / unpack: one vectorised loop per piece, the packed type a template parameter
// so the conversion's selects become blends, compiled for AVX-512, AVX2 and the baseline and
// chosen by what the CPU has; binary16 uses the F16C instructions where they exist
// (kernels/cpu/pack_f16.h). Every choice gives the same bits (integer and IEEE operations; F16C
// is checked against the software conversion on every input). -O3 for the same reason as the
// chunk update (kernels/CMakeLists.txt).
//
// A piece whose output passes kStreamBytes is converted a block at a time into an L1 buffer and
// streamed out (kernels/cpu/stream_copy.h): large outputs are then written once, not read first,
// as memcpy does for large copies. Smaller ones stay in cache for whoever reads them next.
#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/pack_f16.h"
#include "kernels/cpu/pack_loops.h"
#include "kernels/cpu/stream_copy.h"
#include "kernels/cpu_isa.h"
#include "kernels/pack.h"
#include "kernels/pack_check.h"

namespace poseidon::kernels {
namespace {

using cpu::Storage;

constexpr size_t kStreamBytes = size_t{4} << 20;
constexpr size_t kBlock = 2048;  // elements per streamed block: 8 KiB of floats, in L1
constexpr size_t kAheadBlocks = 2;

template <PackedType T>
[[gnu::noinline]] void packGeneric(size_t n, const float* __restrict__ in, Storage<T>* __restrict__ out, float s) {
  cpu::packBody<T>(n, in, out, s);
}
template <PackedType T>
[[gnu::noinline]] void unpackGeneric(size_t n, const Storage<T>* __restrict__ in, float* __restrict__ out, float s) {
  cpu::unpackBody<T>(n, in, out, s);
}

#if defined(__x86_64__)
template <PackedType T>
[[gnu::noinline, gnu::target("avx2")]] void packAvx2(size_t n, const float* __restrict__ in,
                                                     Storage<T>* __restrict__ out, float s) {
  cpu::packBody<T>(n, in, out, s);
}
template <PackedType T>
[[gnu::noinline, gnu::target("avx2")]] void unpackAvx2(size_t n, const Storage<T>* __restrict__ in,
                                                       float* __restrict__ out, float s) {
  cpu::unpackBody<T>(n, in, out, s);
}
template <PackedType T>
[[gnu::noinline, gnu::target("avx512f,avx512bw")]] void packAvx512(size_t n, const float* __restrict__ in,
                                                                   Storage<T>* __restrict__ out, float s) {
  cpu::packBody<T>(n, in, out, s);
}
template <PackedType T>
[[gnu::noinline, gnu::target("avx512f,avx512bw")]] void unpackAvx512(size_t n, const Storage<T>* __restrict__ in,
                                                                     float* __restrict__ out, float s) {
  cpu::unpackBody<T>(n, in, out, s);
}
#endif

template <typename From, typename To>
using Loop = void (*)(size_t, const From*, To*, float);

template <PackedType T>
Loop<float, Storage<T>> packLoop(CpuIsa isa) {
#if defined(__x86_64__)
  if constexpr (T == PackedType::kF16) {
    if (isa != CpuIsa::kGeneric && cpuHasF16c()) return cpu::packF16c;
  }
  if (isa == CpuIsa::kAvx512) return packAvx512<T>;
  if (isa == CpuIsa::kAvx2) return packAvx2<T>;
#endif
  return packGeneric<T>;
}

template <PackedType T>
Loop<Storage<T>, float> unpackLoop(CpuIsa isa) {
#if defined(__x86_64__)
  if constexpr (T == PackedType::kF16) {
    if (isa != CpuIsa::kGeneric && cpuHasF16c()) return cpu::unpackF16c;
  }
  if (isa == CpuIsa::kAvx512) return unpackAvx512<T>;
  if (isa == CpuIsa::kAvx2) return unpackAvx2<T>;
#endif
  return unpackGeneric<T>;
}

// Runs `loop` over one piece, streaming the output through an L1 block when it is large.
template <typename From, typename To>
void convert(Loop<From, To> loop, size_t count, const From* in, To* out, float scale, bool& streamed) {
  if (count * sizeof(To) < kStreamBytes) return loop(count, in, out, scale);
  alignas(64) To block[kBlock];
  for (size_t at = 0; at < count; at += kBlock) {
    const size_t len = std::min(kBlock, count - at);
    if (at + kAheadBlocks * kBlock < count) {
      const auto* next = reinterpret_cast<const char*>(in + at + kAheadBlocks * kBlock);
      for (size_t b = 0; b < kBlock * sizeof(From); b += 64) __builtin_prefetch(next + b, 0, 3);
    }
    loop(len, in + at, block, scale);
    cpu::streamCopy(block, out + at, len * sizeof(To));
  }
  streamed = true;
}

void check(const PackJob& job, const char* who) {
  if (std::string problem = packProblem(job, /*pieces_readable=*/true); !problem.empty()) {
    throw std::invalid_argument(std::string(who) + ": " + problem);
  }
}

}  // namespace

void packCpu(const PackJob& job) {
  check(job, "packCpu");
  bool streamed = false;
  withPackedType(job.type, [&](auto type) {
    constexpr PackedType T = decltype(type)::value;
    auto* packed = static_cast<Storage<T>*>(job.packed);
    const auto loop = packLoop<T>(resolveIsa(job.isa));
    for (const PackPiece& piece : job.pieces) {
      convert<float, Storage<T>>(loop, piece.count, piece.tensor, packed + piece.offset, job.scale, streamed);
    }
  });
  if (streamed) cpu::streamFence();
}

void unpackCpu(const PackJob& job) {
  check(job, "unpackCpu");
  bool streamed = false;
  withPackedType(job.type, [&](auto type) {
    constexpr PackedType T = decltype(type)::value;
    const auto* packed = static_cast<const Storage<T>*>(job.packed);
    const auto loop = unpackLoop<T>(resolveIsa(job.isa));
    for (const PackPiece& piece : job.pieces) {
      convert<Storage<T>, float>(loop, piece.count, packed + piece.offset, piece.tensor, job.scale, streamed);
    }
  });
  if (streamed) cpu::streamFence();
}

}  // namespace poseidon::kernels
