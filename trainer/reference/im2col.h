// im2col and col2im over a whole batch, for a stride-1 convolution with zero padding.
//
// The column matrix is (C * kh * kw) x (K * P) row-major, P = out_h * out_w: row (c, i, j) holds,
// for every sample k and output pixel (oh, ow), the input x[k][c][oh + i - pad][ow + j - pad]
// (zero outside the image). One sgemm of the (out x C*kh*kw) weight with it then yields every
// sample's output at once: out x (K * P).
#pragma once

#include <cstddef>
#include <span>

namespace poseidon::trainer::reference {

struct ConvGeometry {
  size_t batch = 0;     // K
  size_t channels = 0;  // C, the input's
  size_t height = 0;
  size_t width = 0;
  size_t kernel_h = 0;
  size_t kernel_w = 0;
  size_t pad_h = 0;
  size_t pad_w = 0;

  size_t outHeight() const { return height + 2 * pad_h - kernel_h + 1; }
  size_t outWidth() const { return width + 2 * pad_w - kernel_w + 1; }
  size_t outPlane() const { return outHeight() * outWidth(); }
  size_t columnRows() const { return channels * kernel_h * kernel_w; }
  size_t columnCols() const { return batch * outPlane(); }
};

// columns = im2col(x); x is K x C x H x W.
void im2col(const ConvGeometry& g, std::span<const float> x, std::span<float> columns);
// dx = col2im(columns): every column entry added back to the input pixel it was read from
// (dx is overwritten; the additions run in one fixed order).
void col2im(const ConvGeometry& g, std::span<const float> columns, std::span<float> dx);

}  // namespace poseidon::trainer::reference
