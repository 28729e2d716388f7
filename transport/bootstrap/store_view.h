// StoreView: a Store whose every key lives under a prefix, "<prefix>/<key>".
//
// Each part of a job that rendezvouses (a context, a scheme, a group of ranks) takes a view of
// the shared store instead of formatting its own keys, so two parts never collide and a key in
// an error message says whose it is. Views nest: StoreView(store, "job").child("sfb") writes
// "job/sfb/<key>". A view is itself a Store, so anything that takes a Store (barrier(),
// Context::connect) can be given one. It refers to the underlying store, which must outlive it.
#pragma once

#include <string>
#include <string_view>

#include "transport/bootstrap/store.h"

namespace poseidon::transport::bootstrap {

class StoreView final : public Store {
 public:
  // An empty prefix is the store's own key space (the view adds nothing).
  StoreView(Store& store, std::string prefix);

  // The view of "<prefix>/<name>", over the same underlying store.
  StoreView child(std::string_view name) const;
  // The full key `key` is stored under: "<prefix>/<key>".
  std::string key(std::string_view key) const;
  const std::string& prefix() const { return prefix_; }

  Status set(const std::string& key, const std::vector<uint8_t>& value) override;
  Result<std::vector<uint8_t>> get(const std::string& key, Deadline deadline) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;

 private:
  Store* store_;  // never a view: child() and nesting flatten onto the underlying store
  std::string prefix_;
};

}  // namespace poseidon::transport::bootstrap
