// The bias gradient of a fully-connected layer from its sufficient factors.
//
// With y = W x + b per sample, dL/db is the sum over the batch of dL/dy: the row sums of U
// (M x K), so a scheme that carries U carries the bias gradient for free ([Poseidon ATC'17]
// section 3.2: SFB sends no extra message for it). Over P peers, in a fixed order so that every
// replica, and a server summing the workers' own row sums in rank order, gets the same bits:
//   g_i = 0; for p ascending: { r = 0; for k ascending: r += U_p[i][k]; g_i += r }
#pragma once

#include <cstddef>
#include <span>

namespace poseidon::kernels {

// out[i] for i < rows from one U_p (rows x rank, row-major) per peer, rank order.
void sfBiasGradient(size_t rows, size_t rank, std::span<const float* const> u, float* out);

}  // namespace poseidon::kernels
