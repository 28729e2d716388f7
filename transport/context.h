// Context: a group of ranks that talk to each other through one Device, one Pair per peer.
#pragma once

#include <memory>
#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/memory.h"
#include "transport/pair.h"

namespace poseidon::transport {

namespace bootstrap {
class Store;
}

class Context {
 public:
  virtual ~Context() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }

  // Registers [data, data + length) for sends, receives and peers' one-sided writes.
  virtual Result<std::unique_ptr<MemoryRegion>> registerMemory(void* data, size_t length) = 0;

  // Exchanges addresses through the store and connects a full mesh of pairs. Fails, naming the
  // missing peers, if the mesh is not complete by the deadline.
  virtual Status connect(bootstrap::Store& store, Deadline deadline) = 0;

  // The pair to `peer` (!= rank()); valid after connect() succeeded.
  virtual Pair& pair(int peer) = 0;

 protected:
  Context(int rank, int size, std::string name) : rank_(rank), size_(size), name_(std::move(name)) {}

 private:
  int rank_;
  int size_;
  std::string name_;
};

}  // namespace poseidon::transport
