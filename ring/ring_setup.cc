#include "ring/ring_setup.h"

#include <fmt/format.h>

#include <span>

#include "transport/wire/little_endian.h"

namespace poseidon::ring {

using transport::RemoteDescriptor;

namespace {

constexpr uint32_t kMagic = 0x31474e52;  // "RNG1" read as little-endian bytes

void put32(std::vector<uint8_t>& out, uint32_t value) {
  out.resize(out.size() + 4);
  transport::wire::storeLe32(out.data() + out.size() - 4, value);
}
void put64(std::vector<uint8_t>& out, uint64_t value) {
  out.resize(out.size() + 8);
  transport::wire::storeLe64(out.data() + out.size() - 8, value);
}

// Reads fields in order; once a read ran past the end every later read fails too, and the
// first shortfall is what the error names.
class Reader {
 public:
  Reader(const std::string& key, const std::vector<uint8_t>& bytes) : key_(key), bytes_(bytes) {}

  bool u32(uint64_t& value, const char* field) {
    if (!take(4, field)) return false;
    value = transport::wire::loadLe32(bytes_.data() + at_);
    at_ += 4;
    return true;
  }
  bool u64(uint64_t& value, const char* field) {
    if (!take(8, field)) return false;
    value = transport::wire::loadLe64(bytes_.data() + at_);
    at_ += 8;
    return true;
  }
  bool descriptor(RemoteDescriptor& out, const char* field) {
    if (!take(RemoteDescriptor::kEncodedSize, field)) return false;
    auto parsed =
        RemoteDescriptor::parse(std::span<const uint8_t>(bytes_.data() + at_, RemoteDescriptor::kEncodedSize));
    if (!parsed) {
      error_ =
          parsed.status().withContext(fmt::format("store key {}: {}", transport::bootstrap::describeKey(key_), field));
      return false;
    }
    out = *parsed;
    at_ += RemoteDescriptor::kEncodedSize;
    return true;
  }
  bool text(std::string& out, size_t length, const char* field) {
    if (!take(length, field)) return false;
    out.assign(reinterpret_cast<const char*>(bytes_.data() + at_), length);
    at_ += length;
    return true;
  }
  bool fail(Status status) {
    error_ = std::move(status);
    return false;
  }
  size_t left() const { return bytes_.size() - at_; }
  const Status& error() const { return error_; }
  std::string key() const { return transport::bootstrap::describeKey(key_); }

 private:
  bool take(size_t length, const char* field) {
    if (!error_.isOk()) return false;
    if (length > bytes_.size() - at_) {
      error_ = makeStatus(StatusCode::kProtocolError, "store key {} holds {} bytes; {} needs {} more at offset {}",
                          key(), bytes_.size(), field, length, at_);
      return false;
    }
    return true;
  }

  const std::string& key_;
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
  Status error_;
};

}  // namespace

std::vector<PublishedLayer> publishedLayers(const std::vector<model::Layer>& layers) {
  std::vector<PublishedLayer> published;
  for (const model::Layer& layer : layers) published.push_back({layer.name(), layer.denseFloats()});
  return published;
}

std::vector<uint8_t> RingSetup::serialize() const {
  std::vector<uint8_t> out;
  put32(out, kMagic);
  put32(out, static_cast<uint32_t>(ranks));
  put32(out, static_cast<uint32_t>(rank));
  for (const auto& d : {data, staging}) {
    const auto bytes = d.serialize();
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  put64(out, piece_bytes);
  put64(out, staging_slots);
  put64(out, layers.size());
  for (const PublishedLayer& layer : layers) {
    put64(out, layer.floats);
    put32(out, static_cast<uint32_t>(layer.name.size()));
    out.insert(out.end(), layer.name.begin(), layer.name.end());
  }
  return out;
}

Result<RingSetup> RingSetup::parse(const std::string& key, const std::vector<uint8_t>& bytes) {
  Reader in(key, bytes);
  RingSetup setup;
  uint64_t magic = 0, ranks = 0, rank = 0, count = 0;
  if (in.u32(magic, "the magic") && magic != kMagic) {
    in.fail(makeStatus(StatusCode::kProtocolError,
                       "store key {} starts with {:#010x}, expected ring set-up magic {:#010x}", in.key(), magic,
                       kMagic));
  }
  in.u32(ranks, "the rank count");
  in.u32(rank, "the rank");
  in.descriptor(setup.data, "the buffer's descriptor");
  in.descriptor(setup.staging, "the staging's descriptor");
  in.u64(setup.piece_bytes, "piece_bytes");
  in.u64(setup.staging_slots, "staging_slots");
  // Each layer takes at least 12 bytes, so a count beyond that is a lie, refused before reserving.
  if (in.u64(count, "the layer count") && count > in.left() / 12) {
    in.fail(makeStatus(StatusCode::kProtocolError, "store key {} claims {} layers in {} bytes", in.key(), count,
                       in.left()));
  }
  if (!in.error().isOk()) return in.error();
  setup.ranks = static_cast<int>(ranks);
  setup.rank = static_cast<int>(rank);
  setup.layers.resize(count);
  for (PublishedLayer& layer : setup.layers) {
    uint64_t floats = 0, name_length = 0;
    in.u64(floats, "a layer's floats");
    if (in.u32(name_length, "a layer's name length") && name_length > kMaxRingLayerNameBytes) {
      in.fail(makeStatus(StatusCode::kProtocolError, "store key {} names a layer of {} bytes, limit {}", in.key(),
                         name_length, kMaxRingLayerNameBytes));
    }
    in.text(layer.name, name_length, "a layer's name");
    layer.floats = floats;
  }
  if (!in.error().isOk()) return in.error();
  if (in.left() != 0) {
    return makeStatus(StatusCode::kProtocolError, "store key {} has {} bytes after its last layer", in.key(),
                      in.left());
  }
  return setup;
}

std::string ringSetupKey(const std::string& name, const std::string& context_name, int rank) {
  return fmt::format("{}/{}/rank/{}", name, context_name, rank);
}

Status checkSameRing(const RingSetup& mine, const RingSetup& theirs, int expected_rank, const std::string& peer,
                     const char* role) {
  auto differs = [&](const std::string& what) {
    return makeStatus(StatusCode::kInvalidArgument, "our {} {} set up a different ring: {}", role, peer, what);
  };
  if (theirs.ranks != mine.ranks || theirs.rank != expected_rank) {
    return differs(fmt::format("it is rank {} of {}; expected rank {} of {}", theirs.rank, theirs.ranks, expected_rank,
                               mine.ranks));
  }
  if (theirs.piece_bytes != mine.piece_bytes || theirs.staging_slots != mine.staging_slots) {
    return differs(fmt::format("piece_bytes {} and {} staging slots; ours are {} and {}", theirs.piece_bytes,
                               theirs.staging_slots, mine.piece_bytes, mine.staging_slots));
  }
  if (theirs.layers.size() != mine.layers.size()) {
    return differs(fmt::format("{} layers; we have {}", theirs.layers.size(), mine.layers.size()));
  }
  uint64_t total_floats = 0;
  for (size_t i = 0; i < mine.layers.size(); ++i) {
    const PublishedLayer& a = mine.layers[i];
    const PublishedLayer& b = theirs.layers[i];
    if (a.floats != b.floats || a.name != b.name) {
      return differs(fmt::format("its layer {} is '{}' of {} floats; ours is '{}' of {} floats", i, b.name, b.floats,
                                 a.name, a.floats));
    }
    total_floats += a.floats;
  }
  // Sizes are equal from here on; the regions must hold them (a descriptor is the peer's word).
  if (theirs.data.length < total_floats * sizeof(float) ||
      theirs.staging.length < mine.piece_bytes * mine.staging_slots) {
    return differs(fmt::format("its buffer of {} bytes and staging of {} bytes are smaller than {} and {}",
                               theirs.data.length, theirs.staging.length, total_floats * sizeof(float),
                               mine.piece_bytes * mine.staging_slots));
  }
  return Status::ok();
}

}  // namespace poseidon::ring
