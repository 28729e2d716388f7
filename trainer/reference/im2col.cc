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

// Calls visit(column, input_row, valid, offset) for every stretch of out_w entries of the column
// matrix that one row of one input plane feeds: `column` indexes the entry (c, i, j; k, oh, 0),
// `input_row` the start of x's row (k, c, ih) with ih = oh + i - pad, or is -1 where ih falls in
// the padding; entry ow reads x[input_row + ow + offset] for ow in `valid`, and 0 elsewhere. The
// order of the calls is fixed, so col2im's additions are too.
template <typename Visit>
void forEachStretch(const ConvGeometry& g, Visit visit) {
  const size_t out_h = g.outHeight();
  const size_t out_w = g.outWidth();
  size_t row = 0;
  for (size_t c = 0; c < g.channels; ++c) {
    for (size_t i = 0; i < g.kernel_h; ++i) {
      for (size_t j = 0; j < g.kernel_w; ++j, ++row) {
        const ptrdiff_t offset = static_cast<ptrdiff_t>(j) - static_cast<ptrdiff_t>(g.pad_w);
        const ValidRange valid = validColumns(offset, g.width, out_w);
        for (size_t k = 0; k < g.batch; ++k) {
          for (size_t oh = 0; oh < out_h; ++oh) {
            const ptrdiff_t ih = static_cast<ptrdiff_t>(oh + i) - static_cast<ptrdiff_t>(g.pad_h);
            const bool inside = ih >= 0 && ih < static_cast<ptrdiff_t>(g.height);
            const ptrdiff_t input_row =
                inside ? static_cast<ptrdiff_t>(((k * g.channels + c) * g.height + static_cast<size_t>(ih)) * g.width)
                       : -1;
            visit(row * g.columnCols() + (k * out_h + oh) * out_w, input_row, valid, offset);
          }
        }
      }
    }
  }
}

}  // namespace

void im2col(const ConvGeometry& g, std::span<const float> x, std::span<float> columns) {
  const size_t out_w = g.outWidth();
  forEachStretch(g, [&](size_t column, ptrdiff_t input_row, ValidRange valid, ptrdiff_t offset) {
    float* out = columns.data() + column;
    if (input_row < 0) {
      std::fill(out, out + out_w, 0.0f);
      return;
    }
    const float* in = x.data() + input_row;
    std::fill(out, out + valid.begin, 0.0f);
    for (size_t ow = valid.begin; ow < valid.end; ++ow) out[ow] = in[static_cast<ptrdiff_t>(ow) + offset];
    std::fill(out + valid.end, out + out_w, 0.0f);
  });
}

void col2im(const ConvGeometry& g, std::span<const float> columns, std::span<float> dx) {
  std::fill(dx.begin(), dx.end(), 0.0f);
  forEachStretch(g, [&](size_t column, ptrdiff_t input_row, ValidRange valid, ptrdiff_t offset) {
    if (input_row < 0) return;
    const float* in = columns.data() + column;
    float* out = dx.data() + input_row;
    for (size_t ow = valid.begin; ow < valid.end; ++ow) out[static_cast<ptrdiff_t>(ow) + offset] += in[ow];
  });
}

}  // namespace poseidon::trainer::reference
