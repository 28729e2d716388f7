#include "transport/bootstrap/store_view.h"

#include <utility>

namespace poseidon::transport::bootstrap {

namespace {
std::string joined(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  if (name.empty()) return std::string(prefix);
  std::string out;
  out.reserve(prefix.size() + 1 + name.size());
  out.append(prefix).append("/").append(name);
  return out;
}
}  // namespace

StoreView::StoreView(Store& store, std::string prefix) : store_(&store), prefix_(std::move(prefix)) {
  // A view of a view writes straight to the underlying store, with the prefixes joined.
  if (auto* inner = dynamic_cast<StoreView*>(&store)) {
    store_ = inner->store_;
    prefix_ = joined(inner->prefix_, prefix_);
  }
}

StoreView StoreView::child(std::string_view name) const { return StoreView(*store_, joined(prefix_, name)); }

std::string StoreView::key(std::string_view key) const { return joined(prefix_, key); }

Status StoreView::set(const std::string& key, const std::vector<uint8_t>& value) {
  return store_->set(this->key(key), value);
}

Result<std::vector<uint8_t>> StoreView::get(const std::string& key, Deadline deadline) {
  return store_->get(this->key(key), deadline);
}

Result<int64_t> StoreView::add(const std::string& key, int64_t delta) { return store_->add(this->key(key), delta); }

}  // namespace poseidon::transport::bootstrap
