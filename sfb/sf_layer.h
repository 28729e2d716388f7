// SfLayer: a fully-connected layer as sufficient-factor broadcasting sees it (scheme/factor_layer.h).
#pragma once

#include "scheme/factor_layer.h"

namespace poseidon::sfb {

using SfLayer = scheme::FactorLayer;

}  // namespace poseidon::sfb
