#include "trainer/timeline/interval.h"

#include <numeric>

namespace poseidon::trainer::timeline {

const char* categoryName(Category category) {
  switch (category) {
    case Category::kForward: return "forward";
    case Category::kBackward: return "backward";
    case Category::kSync: return "sync";
    case Category::kWait: return "wait";
    case Category::kOther: return "other";
  }
  return "other";
}

const std::string& Trace::nameOf(const Interval& interval) const {
  static const std::string unknown = "?";
  return interval.name < names.size() ? names[interval.name] : unknown;
}

uint64_t Trace::droppedTotal() const { return std::accumulate(dropped.begin(), dropped.end(), uint64_t{0}); }

}  // namespace poseidon::trainer::timeline
