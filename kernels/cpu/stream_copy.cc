#include "kernels/cpu/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace poseidon::kernels::cpu {
namespace {

// Copies the bytes before `dst` reaches a multiple of `width`; returns how many.
size_t copyHead(const unsigned char* src, unsigned char* dst, size_t bytes, size_t width) {
  const size_t head = std::min(bytes, (width - reinterpret_cast<uintptr_t>(dst) % width) % width);
  std::memcpy(dst, src, head);
  return head;
}

#if defined(__x86_64__)
[[gnu::target("avx512f")]] void copy64(const unsigned char* src, unsigned char* dst, size_t bytes) {
  size_t done = copyHead(src, dst, bytes, 64);
  for (; done + 64 <= bytes; done += 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + done), _mm512_loadu_si512(src + done));
  }
  std::memcpy(dst + done, src + done, bytes - done);
}

[[gnu::target("avx")]] void copy32(const unsigned char* src, unsigned char* dst, size_t bytes) {
  size_t done = copyHead(src, dst, bytes, 32);
  for (; done + 32 <= bytes; done += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + done),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + done)));
  }
  std::memcpy(dst + done, src + done, bytes - done);
}

void copy16(const unsigned char* src, unsigned char* dst, size_t bytes) {
  size_t done = copyHead(src, dst, bytes, 16);
  for (; done + 16 <= bytes; done += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + done),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + done)));
  }
  std::memcpy(dst + done, src + done, bytes - done);
}

using Copy = void (*)(const unsigned char*, unsigned char*, size_t);

Copy widest() {
  if (__builtin_cpu_supports("avx512f")) return copy64;
  if (__builtin_cpu_supports("avx")) return copy32;
  return copy16;
}
#endif

}  // namespace

void streamCopy(const void* from, void* to, size_t bytes) {
#if defined(__x86_64__)
  static const Copy copy = widest();
  copy(static_cast<const unsigned char*>(from), static_cast<unsigned char*>(to), bytes);
#else
  std::memcpy(to, from, bytes);
#endif
}

void streamFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace poseidon::kernels::cpu
