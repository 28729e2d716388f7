// The model spec: how a command line names a model, so every process of a job (servers,
// workers, benchmarks) builds the same one from the same words. One language for the parameter
// server's tensor lists and HybComm's layer lists; everything either used to accept still parses.
//
//   <zoo name>[;batch=K][;input=CxHxW]     a zoo model (model/zoo.h: vgg19, vgg19-22k, resnet50, ...)
//   or sections separated by ';', layers kept in the order written (forward order):
//   uniform:<tensors>x<floats>             equal layers t0, t1, ... of one tensor each
//   tensors:<name>=<floats>,...            layers of one tensor each, named as written
//   other:<name>=<floats>,...              the same; or <name>=<weight>+<bias> (tensors
//                                          <name>.weight and <name>.bias, a batch norm's), or
//                                          <name>=<tensor>:<floats>+<tensor>:<floats>+... (any)
//   fc:<name>=<M>x<N>[+bias],...           M outputs, N inputs; M bias floats with +bias
//   conv:<name>=<out>x<in>x<kh>x<kw>[/<groups>][s<stride>]@<H>x<W>[+bias],...
//                                          in = input channels per group, H x W the output map
//   batch=K                                samples per worker per iteration (default 1)
//   input=CxHxW                            one sample's input
//
// FC and conv tensors are "<name>.weight" then "<name>.bias". Names may not hold , ; = : + or
// white space. A parsed model is named as its zoo model or "custom"; formatModelSpec gives a
// spec that parses to the same model (the name kept for zoo models only).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "model/model.h"

namespace poseidon::model {

// Errors name the spec and the part that does not parse ("model 'fc:a=3y4': 'a=3y4' is not
// <name>=<M>x<N>[+bias]"), or the layer that is invalid.
Result<Model> parseModelSpec(std::string_view spec);

// A zoo model as its name (and the batch or input where they differ from the zoo's); any other
// as sections, one per run of layers of one kind.
std::string formatModelSpec(const Model& model);

// A layer as its spec section and item: "fc:fc6=4096x25088+bias", "conv:c=64x3x3x3@224x224",
// "other:bn1=64+64". Reports and the start-up agreement name layers so.
std::string layerSpecItem(const Layer& layer);

}  // namespace poseidon::model
