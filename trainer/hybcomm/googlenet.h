// GoogLeNet (Szegedy et al., "Going deeper with convolutions", 2014, Table 1) as layer shapes.
//
// One entry per row of that table: conv1, conv2 (3x3 reduce + 3x3), the nine inception modules
// (six conv layers each: they all go PS, so keeping a module as one entry changes no decision),
// and the only fully-connected layer of the published network, the 1024 -> 1000 classifier.
// Parameter counts are computed from the table's channel columns (weights + biases). The table's
// own "params" column disagrees with its channel columns for several rows (e.g. 4c: 463K printed,
// 498K computed), so the channel columns are what is transcribed.
#pragma once

#include <vector>

#include "trainer/hybcomm/layer_shape.h"

namespace poseidon::trainer {

// With `auxiliary_classifiers`, the two training-time heads (after 4a and 4d: 1x1 conv to 128
// channels, FC 2048 -> 1024, FC 1024 -> 1000), which Caffe's bvlc_googlenet - what [Poseidon 2015] and
// 004 trained - also synchronises.
std::vector<LayerShape> googlenetLayers(bool auxiliary_classifiers = false);

}  // namespace poseidon::trainer
