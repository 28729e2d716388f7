#include "trainer/data/gzip_file.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace poseidon::trainer::data {
namespace {

Result<std::vector<uint8_t>> readRawFile(const std::string& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: a directory, expected a gzip file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return errnoStatus(StatusCode::kIoError, path + ": cannot open");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0 || !in) return errnoStatus(StatusCode::kIoError, path + ": cannot find its size");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (in.gcount() != size) {
    return makeStatus(StatusCode::kIoError, "{}: read {} of its {} bytes", path, in.gcount(), size);
  }
  return bytes;
}

// One inflate pass over a complete gzip member; `out` grows as needed up to max_bytes.
Status inflateGzip(const std::string& path, const std::vector<uint8_t>& in, size_t max_bytes,
                   std::vector<uint8_t>& out) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) {  // 15 + 16: a gzip wrapper only, no raw zlib
    return makeStatus(StatusCode::kInternal, "{}: inflateInit2 failed", path);
  }
  stream.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct
  stream.avail_in = static_cast<uInt>(in.size());
  // The gzip trailer's ISIZE (length mod 2^32) is a hint for the first allocation only.
  size_t hint = in.size() >= 4 ? (size_t{in[in.size() - 4]} | size_t{in[in.size() - 3]} << 8 |
                                  size_t{in[in.size() - 2]} << 16 | size_t{in[in.size() - 1]} << 24)
                               : 0;
  out.resize(std::clamp<size_t>(hint, 1024, max_bytes) + 1);
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (stream.total_out == out.size()) {
      if (out.size() > max_bytes) break;
      out.resize(std::min(out.size() * 2, max_bytes + 1));
    }
    stream.next_out = out.data() + stream.total_out;
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - stream.total_out, 1u << 30));
    rc = inflate(&stream, Z_NO_FLUSH);
  }
  const size_t produced = stream.total_out;
  const size_t left_over = stream.avail_in;
  const std::string zlib_message = stream.msg != nullptr ? stream.msg : "";
  inflateEnd(&stream);
  if (produced > max_bytes) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: decompresses to more than {} bytes, the limit", path,
                      max_bytes);
  }
  if (rc == Z_BUF_ERROR) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}: truncated gzip stream ({} compressed bytes end before the stream does)", path, in.size());
  }
  if (rc != Z_STREAM_END) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: corrupt gzip stream: {} (zlib code {})", path,
                      zlib_message.empty() ? "no message" : zlib_message, rc);
  }
  if (left_over != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} bytes after the end of the gzip stream, expected none",
                      path, left_over);
  }
  out.resize(produced);
  return Status::ok();
}

}  // namespace

Result<std::vector<uint8_t>> readGzipFile(const std::string& path, size_t max_bytes) {
  Result<std::vector<uint8_t>> raw = readRawFile(path);
  if (!raw) return raw.status();
  if (raw->size() < 2) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: not a gzip file ({} bytes, shorter than the 1f 8b magic)",
                      path, raw->size());
  }
  if ((*raw)[0] != 0x1f || (*raw)[1] != 0x8b) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: not a gzip file (first bytes {:02x} {:02x}, expected 1f 8b)",
                      path, (*raw)[0], (*raw)[1]);
  }
  std::vector<uint8_t> out;
  POSEIDON_RETURN_IF_ERROR(inflateGzip(path, *raw, max_bytes, out));
  return out;
}

}  // namespace poseidon::trainer::data
