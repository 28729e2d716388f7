#include "model/zoo.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace poseidon::model {

namespace {

struct ZooEntry {
  const char* name;
  Model (*build)();
};

const ZooEntry kZoo[] = {
    {"alexnet", alexnet},
    {"alexnet-torchvision", alexnetTorchvision},
    {"vgg19", [] { return vgg19(); }},
    {"vgg19-22k", vgg19_22k},
    {"googlenet", [] { return googlenet(false); }},
    {"googlenet-aux", [] { return googlenet(true); }},
    {"resnet50", resnet50},
    {"inception-v3", [] { return inceptionV3(true); }},
    {"inception-v3-noaux", [] { return inceptionV3(false); }},
};

}  // namespace

std::vector<std::string> zooNames() {
  std::vector<std::string> names;
  for (const ZooEntry& entry : kZoo) names.emplace_back(entry.name);
  return names;
}

Result<Model> zooModel(std::string_view name) {
  for (const ZooEntry& entry : kZoo) {
    if (name == entry.name) return entry.build();
  }
  return makeStatus(StatusCode::kInvalidArgument, "model '{}' is not in the zoo ({})", name,
                    fmt::join(zooNames(), ", "));
}

}  // namespace poseidon::model
