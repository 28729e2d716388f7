// CPU twin of pack / unpack: one vectorised loop per piece, the packed type a template parameter
// so the conversion's selects become blends. -O3 for the same reason as the chunk update
// (kernels/CMakeLists.txt).
#include <stdexcept>

#include "kernels/pack.h"
#include "kernels/pack_check.h"
#include "kernels/pack_element.h"

namespace poseidon::kernels {
namespace {

template <PackedType T>
using Storage = typename PackedElement<T>::Storage;

template <PackedType T>
[[gnu::noinline]] void packLoop(size_t count, const float* __restrict__ tensor, Storage<T>* __restrict__ packed,
                                const float scale) {
  for (size_t i = 0; i < count; ++i) packed[i] = packElement<T>(tensor[i], scale);
}

template <PackedType T>
[[gnu::noinline]] void unpackLoop(size_t count, const Storage<T>* __restrict__ packed, float* __restrict__ tensor,
                                  const float scale) {
  for (size_t i = 0; i < count; ++i) tensor[i] = unpackElement<T>(packed[i], scale);
}

void check(const PackJob& job, const char* who) {
  if (std::string problem = packProblem(job, /*pieces_readable=*/true); !problem.empty()) {
    throw std::invalid_argument(std::string(who) + ": " + problem);
  }
}

}  // namespace

void packCpu(const PackJob& job) {
  check(job, "packCpu");
  withPackedType(job.type, [&](auto type) {
    constexpr PackedType T = decltype(type)::value;
    auto* packed = static_cast<Storage<T>*>(job.packed);
    for (const PackPiece& piece : job.pieces) packLoop<T>(piece.count, piece.tensor, packed + piece.offset, job.scale);
  });
}

void unpackCpu(const PackJob& job) {
  check(job, "unpackCpu");
  withPackedType(job.type, [&](auto type) {
    constexpr PackedType T = decltype(type)::value;
    const auto* packed = static_cast<const Storage<T>*>(job.packed);
    for (const PackPiece& piece : job.pieces) unpackLoop<T>(piece.count, packed + piece.offset, piece.tensor, job.scale);
  });
}

}  // namespace poseidon::kernels
