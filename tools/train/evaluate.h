// The test set's accuracy under a network's current parameters: forward passes only, in batches
// of the network's K (the last one filled up with the set's first images, which are not
// counted), the prediction being the first largest logit.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "trainer/data/image_set.h"
#include "trainer/reference/network.h"

namespace poseidon::tools {

struct Accuracy {
  uint64_t correct = 0;
  uint64_t total = 0;
};

// Clears the network's hooks first (no sync is waited for): the caller sets its own again.
Result<Accuracy> evaluate(trainer::reference::Network& network, const trainer::data::ImageSet& set);

}  // namespace poseidon::tools
