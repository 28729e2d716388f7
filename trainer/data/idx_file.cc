#include "trainer/data/idx_file.h"

#include <fmt/ranges.h>

#include <cstdint>

#include "trainer/data/gzip_file.h"

namespace poseidon::trainer::data {
namespace {

uint32_t bigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

struct KindInfo {
  uint32_t magic;
  uint32_t ndims;
  const char* what;
};

KindInfo infoOf(IdxKind kind) {
  return kind == IdxKind::kImages ? KindInfo{0x00000803, 3, "an IDX image file"}
                                  : KindInfo{0x00000801, 1, "an IDX label file"};
}

}  // namespace

Result<IdxArray> parseIdx(const std::string& name, const std::vector<uint8_t>& bytes, IdxKind kind) {
  const KindInfo info = infoOf(kind);
  const size_t header = 4 + 4 * size_t{info.ndims};
  if (bytes.size() < 4) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} bytes, too short for the IDX magic (expected {})", name,
                      bytes.size(), info.what);
  }
  const uint32_t magic = bigEndian32(bytes.data());
  if (magic != info.magic) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: magic 0x{:08x}, expected 0x{:08x} ({})", name, magic,
                      info.magic, info.what);
  }
  if (bytes.size() < header) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} bytes, too short for the {}-byte header of {}", name,
                      bytes.size(), header, info.what);
  }
  IdxArray array;
  uint64_t payload = 1;  // saturates: three 32-bit dims can exceed 64 bits
  for (uint32_t d = 0; d < info.ndims; ++d) {
    const uint32_t dim = bigEndian32(bytes.data() + 4 + 4 * d);
    array.dims.push_back(dim);
    payload = (dim != 0 && payload > UINT64_MAX / dim) ? UINT64_MAX : payload * dim;
  }
  const uint64_t actual = bytes.size() - header;
  if (payload != actual) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: payload of {} bytes, expected {} for dims {} ({})", name,
                      actual, payload, fmt::join(array.dims, " x "),
                      actual < payload ? "truncated" : "trailing bytes after the payload");
  }
  array.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return array;
}

Result<IdxArray> readIdxGzFile(const std::string& path, IdxKind kind) {
  Result<std::vector<uint8_t>> bytes = readGzipFile(path);
  if (!bytes) return bytes.status();
  return parseIdx(path, *bytes, kind);
}

}  // namespace poseidon::trainer::data
