// The checkpoint reader (ps/checkpoint/checkpoint.h), on any file a restarted server may find in
// its directory: it loads exactly what its identity says or refuses naming why, and never writes
// past the caller's buffers.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ps/checkpoint/checkpoint.h"

using namespace poseidon::ps;

namespace {

// Made once, removed at exit (with the one file in it).
std::string scratchDirectory() {
  static char name[] = "/tmp/poseidon-fuzz-checkpoint-XXXXXX";
  if (::mkdtemp(name) == nullptr) return "/tmp";
  std::atexit([] { std::filesystem::remove_all(name); });
  return name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = scratchDirectory();
  const std::string path = checkpointPath(dir, 0, 1);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  CheckpointIdentity identity;
  identity.chunk_bytes = 64;
  identity.chunks = 2;
  identity.elements = 32;
  identity.state_words = 1;
  identity.optimizer = "sgd:lr=0.1,momentum=0.9";
  identity.consistency = "bsp";
  std::vector<float> params(identity.elements), state0(identity.elements);
  CheckpointData loaded;
  loaded.params = params;
  loaded.state0 = state0;
  (void)loadCheckpoint(dir, identity, 1, loaded);
  return 0;
}
