#include "kernels/cpu/pack_f16.h"

#include "kernels/convert_element.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace poseidon::kernels::cpu {

#if defined(__x86_64__)

// Eight at a time; the last few through the software conversion (the same bits).
[[gnu::target("avx,f16c")]] void packF16c(size_t count, const float* tensor, uint16_t* packed, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(tensor + i), s);
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + i), h);
  }
  for (; i < count; ++i) packed[i] = floatToHalfBits(tensor[i] * scale);
}

[[gnu::target("avx,f16c")]] void unpackF16c(size_t count, const uint16_t* packed, float* tensor, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + i)));
    _mm256_storeu_ps(tensor + i, _mm256_mul_ps(x, s));
  }
  for (; i < count; ++i) tensor[i] = halfBitsToFloat(packed[i]) * scale;
}

#else

void packF16c(size_t, const float*, uint16_t*, float) {}
void unpackF16c(size_t, const uint16_t*, float*, float) {}

#endif

}  // namespace poseidon::kernels::cpu
