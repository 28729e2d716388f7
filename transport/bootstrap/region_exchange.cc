#include "transport/bootstrap/region_exchange.h"

#include <fmt/format.h>

#include <utility>

#include "transport/wire/little_endian.h"

namespace poseidon::transport::bootstrap {

namespace {
constexpr uint32_t kMagic = 0x58525350;  // "PSRX" read as little-endian bytes
constexpr size_t kHeaderBytes = 16;
constexpr size_t kDescriptorBytes = RemoteDescriptor::kEncodedSize;
}  // namespace

std::vector<uint8_t> encodeRegions(uint32_t fingerprint, std::span<const RemoteDescriptor> descriptors,
                                   std::span<const uint8_t> extra) {
  std::vector<uint8_t> out(kHeaderBytes);
  wire::storeLe32(out.data(), kMagic);
  wire::storeLe32(out.data() + 4, fingerprint);
  wire::storeLe32(out.data() + 8, static_cast<uint32_t>(descriptors.size()));
  wire::storeLe32(out.data() + 12, static_cast<uint32_t>(extra.size()));
  for (const RemoteDescriptor& d : descriptors) {
    const auto bytes = d.serialize();
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

RegionExchange::RegionExchange(StoreView view, RegionExchangeNames names)
    : view_(std::move(view)), names_(std::move(names)) {}

std::string RegionExchange::key(int member) const { return view_.key(std::to_string(member)); }

std::string RegionExchange::who(int member) const { return fmt::format("{} {}", names_.member, member); }

Status RegionExchange::publish(int member, uint32_t fingerprint, std::span<const RemoteDescriptor> descriptors,
                               std::span<const uint8_t> extra) {
  return view_.set(std::to_string(member), encodeRegions(fingerprint, descriptors, extra))
      .withContext(fmt::format("publishing the {} of {}", names_.what, who(member)));
}

Result<PublishedRegions> RegionExchange::fetch(int member, const RegionNeeds& needs, Deadline deadline) {
  auto value = view_.get(std::to_string(member), deadline);
  if (!value) return value.status().withContext(fmt::format("the {} of {}", names_.what, who(member)));
  return parse(member, *value, needs);
}

Result<std::vector<PublishedRegions>> RegionExchange::fetchAll(std::span<const int> members,
                                                               const std::function<RegionNeeds(int)>& needs,
                                                               Deadline deadline) {
  std::vector<PublishedRegions> out;
  out.reserve(members.size());
  for (int member : members) {
    auto one = fetch(member, needs(member), deadline);
    if (!one) return one.status();
    out.push_back(std::move(*one));
  }
  return out;
}

Result<PublishedRegions> RegionExchange::parse(int member, const std::vector<uint8_t>& value,
                                               const RegionNeeds& needs) const {
  const std::string where = fmt::format("store key {} ({} of {})", describeKey(key(member)), names_.what, who(member));
  auto malformed = [&](const std::string& what) {
    return makeStatus(StatusCode::kProtocolError, "{}: {}", where, what);
  };
  if (value.size() < kHeaderBytes) {
    return malformed(fmt::format("holds {} bytes, fewer than the {}-byte header", value.size(), kHeaderBytes));
  }
  const uint32_t magic = wire::loadLe32(value.data());
  if (magic != kMagic) {
    return malformed(fmt::format("starts with {:#010x}, expected region magic {:#010x}", magic, kMagic));
  }
  const uint32_t fingerprint = wire::loadLe32(value.data() + 4);
  const uint64_t count = wire::loadLe32(value.data() + 8);
  const uint64_t extra = wire::loadLe32(value.data() + 12);
  const uint64_t expected_size = kHeaderBytes + count * kDescriptorBytes + extra;
  if (value.size() != expected_size) {
    return malformed(fmt::format("holds {} bytes; its header announces {} descriptors and {} extra bytes ({} bytes)",
                                 value.size(), count, extra, expected_size));
  }
  if (fingerprint != needs.fingerprint) {
    if (needs.explain_mismatch) {
      Status why = needs.explain_mismatch(std::span<const uint8_t>(value).last(static_cast<size_t>(extra)));
      if (!why.isOk()) {
        return makeStatus(why.code(), "{} was given other {} than this side: {} ({})", who(member),
                          names_.fingerprint_covers, why.message(), where);
      }
    }
    return makeStatus(StatusCode::kInvalidArgument,
                      "{} was given other {} than this side (fingerprint {:#010x}, expected {:#010x}; {})", who(member),
                      names_.fingerprint_covers, fingerprint, needs.fingerprint, where);
  }
  if (count != needs.min_bytes.size()) {
    return malformed(fmt::format("holds {} descriptors, expected {}", count, needs.min_bytes.size()));
  }
  PublishedRegions out;
  const uint8_t* next = value.data() + kHeaderBytes;
  for (size_t i = 0; i < count; ++i, next += kDescriptorBytes) {
    auto descriptor = RemoteDescriptor::parse(std::span<const uint8_t>(next, kDescriptorBytes));
    if (!descriptor) return malformed(fmt::format("region {}: {}", i, descriptor.status().message()));
    if (descriptor->length < needs.min_bytes[i]) {
      return malformed(
          fmt::format("region {} is {} bytes; this side needs at least {}", i, descriptor->length, needs.min_bytes[i]));
    }
    out.descriptors.push_back(*descriptor);
  }
  out.extra.assign(next, next + extra);
  return out;
}

}  // namespace poseidon::transport::bootstrap
