// Inside the pack / unpack CPU twin (kernels/cpu/pack.cc): the conversion loops, written once
// and compiled for each instruction set by [[gnu::target]] wrappers there.
#pragma once

#include <cstddef>

#include "kernels/pack_element.h"

namespace poseidon::kernels::cpu {

template <PackedType T>
using Storage = typename PackedElement<T>::Storage;

// Always inlined, so each wrapper's target decides the vector width. The element functions are
// selects and integer operations (kernels/convert_element.h) that vectorise on any of them.
template <PackedType T>
[[gnu::always_inline]] inline void packBody(size_t count, const float* __restrict__ tensor,
                                            Storage<T>* __restrict__ packed, float scale) {
  for (size_t i = 0; i < count; ++i) packed[i] = packElement<T>(tensor[i], scale);
}

template <PackedType T>
[[gnu::always_inline]] inline void unpackBody(size_t count, const Storage<T>* __restrict__ packed,
                                              float* __restrict__ tensor, float scale) {
  for (size_t i = 0; i < count; ++i) tensor[i] = unpackElement<T>(packed[i], scale);
}

}  // namespace poseidon::kernels::cpu
