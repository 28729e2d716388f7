#include "scheme/start_agreement.h"

#include <fmt/format.h>

#include <algorithm>

#include "transport/bootstrap/store_view.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::scheme {
namespace {

std::vector<uint8_t> bytesOf(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<uint8_t> crcBytes(uint32_t crc) {
  std::vector<uint8_t> bytes(4);
  transport::wire::storeLe32(bytes.data(), crc);
  return bytes;
}

std::string describeRank(const AgreementGroup& group, int rank) {
  return group.describe ? group.describe(rank) : fmt::format("rank {}", rank);
}

std::string setUpOf(const AgreementGroup& group, int rank) {
  return fmt::format("{}: the set-up of {}", group.name, describeRank(group, rank));
}

Result<model::Fingerprint> fetchItems(transport::bootstrap::StoreView& view, const AgreementGroup& group, int rank,
                                      Deadline deadline) {
  auto bytes = view.get(fmt::format("{}/items", rank), deadline);
  if (!bytes) return bytes.status().withContext(setUpOf(group, rank));
  auto items =
      model::Fingerprint::decode(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!items) return makeStatus(StatusCode::kProtocolError, "{}: {}", setUpOf(group, rank), items.status().message());
  return items;
}

// Compares `mine` (published by `rank`, checksum `crc`) with every other member's.
Status compareWith(transport::bootstrap::StoreView& view, const AgreementGroup& group, int rank,
                   const model::Fingerprint& mine, uint32_t crc, Deadline deadline) {
  for (int other : group.ranks) {
    if (other == rank) continue;
    auto their_crc = view.get(fmt::format("{}/crc", other), deadline);
    if (!their_crc) return their_crc.status().withContext(setUpOf(group, other));
    if (their_crc->size() != 4) {
      return makeStatus(StatusCode::kProtocolError, "{}: a checksum of {} bytes, expected 4", setUpOf(group, other),
                        their_crc->size());
    }
    if (transport::wire::loadLe32(their_crc->data()) == crc) continue;
    auto theirs = fetchItems(view, group, other, deadline);
    if (!theirs) return theirs.status();
    const auto difference =
        model::firstDifference(mine, fmt::format("rank {}", rank), *theirs, fmt::format("rank {}", other));
    if (!difference) continue;  // a CRC32C collision of equal lists; unequal lists with equal CRCs go unseen (2^-32)
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} and {} were not started alike: {}", group.name,
                      describeRank(group, other), describeRank(group, rank), *difference);
  }
  return Status::ok();
}

}  // namespace

Status agreeOnStart(transport::bootstrap::Store& store, const AgreementGroup& group, int rank,
                    const model::Fingerprint& mine, Deadline deadline) {
  if (std::find(group.ranks.begin(), group.ranks.end(), rank) == group.ranks.end()) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} is not one of the group's {} ranks", group.name,
                      describeRank(group, rank), group.ranks.size());
  }
  transport::bootstrap::StoreView view(store, group.name);
  const std::string encoded = mine.encode();
  const uint32_t crc = transport::wire::crc32c(encoded.data(), encoded.size());
  // The items first: a rank that reads our checksum may then read them at once.
  POSEIDON_RETURN_IF_ERROR(view.set(fmt::format("{}/items", rank), bytesOf(encoded)));
  POSEIDON_RETURN_IF_ERROR(view.set(fmt::format("{}/crc", rank), crcBytes(crc)));

  return compareWith(view, group, rank, mine, crc, deadline);
}

Status observeAgreement(transport::bootstrap::Store& store, const AgreementGroup& group, Deadline deadline) {
  if (group.ranks.size() < 2) return Status::ok();
  transport::bootstrap::StoreView view(store, group.name);
  const int first = group.ranks.front();
  auto items = fetchItems(view, group, first, deadline);
  if (!items) return items.status();
  const std::string encoded = items->encode();
  return compareWith(view, group, first, *items, transport::wire::crc32c(encoded.data(), encoded.size()), deadline);
}

}  // namespace poseidon::scheme
