#include "trainer/reference/im2col.h"

#include <algorithm>
#include <cstddef>

namespace poseidon::trainer::reference {

namespace {

// The output columns [begin, end) of one row of the image whose input pixel ow + offset lies
// inside [0, width); the others read the zero padding.
struct ValidRange {
  size_t begin;
  size_t end;
};

ValidRange validColumns(ptrdiff_t offset, size_t width, size_t out_width) {
  const ptrdiff_t lo = std::max<ptrdiff_t>(0, -offset);
  const ptrdiff_t hi = std::min<ptrdiff_t>(static_cast<ptrdiff_t>(out_width), static_cast<ptrdiff_t>(width) - offset);
  if (hi <= lo) return {0, 0};
  return {static_cast<size_t>(lo), static_cast<size_t>(hi)};
}

// Calls visit(k, ih, out_row, row_offset) for each sample k and each output row whose input row
// ih = oh + i - pad lies inside the image (out_row: the index of (k, oh, 0) in a column row),
// and fill(out_row) for the rows that fall in the padding.
template <typename Visit, typename Fill>
void forEachOutputRow(const ConvGeometry& g, size_t i, Visit visit, Fill fill) {
  const size_t out_h = g.outHeight();
  const size_t out_w = g.outWidth();
  for (size_t k = 0; k < g.batch; ++k) {
    for (size_t oh = 0; oh < out_h; ++oh) {
      const size_t out_row = (k * out_h + oh) * out_w;
      const ptrdiff_t ih = static_cast<ptrdiff_t>(oh + i) - static_cast<ptrdiff_t>(g.pad_h);
      if (ih < 0 || ih >= static_cast<ptrdiff_t>(g.height)) {
        fill(out_row);
      } else {
        visit(k, static_cast<size_t>(ih), out_row);
      }
    }
  }
}

}  // namespace

void im2col(const ConvGeometry& g, std::span<const float> x, std::span<float> columns) {
  const size_t out_w = g.outWidth();
  const size_t cols = g.columnCols();
  float* row = columns.data();
  for (size_t c = 0; c < g.channels; ++c) {
    for (size_t i = 0; i < g.kernel_h; ++i) {
      for (size_t j = 0; j < g.kernel_w; ++j, row += cols) {
        const ptrdiff_t offset = static_cast<ptrdiff_t>(j) - static_cast<ptrdiff_t>(g.pad_w);
        const ValidRange valid = validColumns(offset, g.width, out_w);
        forEachOutputRow(
            g, i,
            [&](size_t k, size_t ih, size_t out_row) {
              float* out = row + out_row;
              const float* in = x.data() + ((k * g.channels + c) * g.height + ih) * g.width;
              std::fill(out, out + valid.begin, 0.0f);
              for (size_t ow = valid.begin; ow < valid.end; ++ow) {
                out[ow] = in[static_cast<ptrdiff_t>(ow) + offset];
              }
              std::fill(out + valid.end, out + out_w, 0.0f);
            },
            [&](size_t out_row) { std::fill(row + out_row, row + out_row + out_w, 0.0f); });
      }
    }
  }
}

void col2im(const ConvGeometry& g, std::span<const float> columns, std::span<float> dx) {
  std::fill(dx.begin(), dx.end(), 0.0f);
  const size_t out_w = g.outWidth();
  const size_t cols = g.columnCols();
  const float* row = columns.data();
  for (size_t c = 0; c < g.channels; ++c) {
    for (size_t i = 0; i < g.kernel_h; ++i) {
      for (size_t j = 0; j < g.kernel_w; ++j, row += cols) {
        const ptrdiff_t offset = static_cast<ptrdiff_t>(j) - static_cast<ptrdiff_t>(g.pad_w);
        const ValidRange valid = validColumns(offset, g.width, out_w);
        forEachOutputRow(
            g, i,
            [&](size_t k, size_t ih, size_t out_row) {
              const float* in = row + out_row;
              float* out = dx.data() + ((k * g.channels + c) * g.height + ih) * g.width;
              for (size_t ow = valid.begin; ow < valid.end; ++ow) out[static_cast<ptrdiff_t>(ow) + offset] += in[ow];
            },
            [](size_t) {});
      }
    }
  }
}

}  // namespace poseidon::trainer::reference
