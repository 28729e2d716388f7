// parseOptimizer(): "name[:key=value,...]" into an OptimizerConfig (grammar in kernels/optimizer_config.h).
//
// A spec comes from a command line or a job file, so every mistake is a Status naming the key
// and the value; a key that does not apply to the chosen optimizer or schedule is refused rather
// than silently ignored (a "momentum" given to adam would otherwise do nothing).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "common/text.h"
#include "kernels/optimizer_config.h"

namespace poseidon::kernels {

namespace {

using Kind = LrSchedule::Kind;

constexpr unsigned bit(OptimizerKind k) { return 1u << static_cast<unsigned>(k); }
constexpr unsigned bit(Kind k) { return 1u << static_cast<unsigned>(k); }
constexpr unsigned kAllOptimizers = bit(OptimizerKind::kSgd) | bit(OptimizerKind::kAdagrad) | bit(OptimizerKind::kAdam);
constexpr unsigned kAllSchedules = bit(Kind::kConstant) | bit(Kind::kStep) | bit(Kind::kPoly) | bit(Kind::kCosine);

// True when all of `text` is one T (from_chars: no sign for unsigned, no leading '+' or spaces).
template <typename T>
bool parseAll(std::string_view text, T& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// A numeric field: a count from a whole number; a double or float from a decimal number (a float
// parsed in double and rounded once; validate() catches what float cannot hold).
template <typename Field>
Status setNumber(Field& field, std::string_view key, std::string_view text) {
  if constexpr (std::is_same_v<Field, uint64_t>) {
    uint64_t value = 0;
    if (!parseAll(text, value)) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "optimizer option '{}' value '{}' is not a whole number in [0, 2^64)", key, text);
    }
    field = value;
  } else {
    double value = 0;
    if (!parseAll(text, value)) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer option '{}' value '{}' is not a number", key, text);
    }
    field = static_cast<Field>(value);
  }
  return Status::ok();
}

Status setBool(bool& field, std::string_view key, std::string_view text) {
  if (text == "1" || text == "true") {
    field = true;
  } else if (text == "0" || text == "false") {
    field = false;
  } else {
    return makeStatus(StatusCode::kInvalidArgument, "optimizer option '{}' value '{}' is not 0, 1, true or false", key,
                      text);
  }
  return Status::ok();
}

Result<Kind> scheduleKind(std::string_view text) {
  for (Kind kind : {Kind::kConstant, Kind::kStep, Kind::kPoly, Kind::kCosine}) {
    if (text == scheduleName(kind)) return kind;
  }
  return makeStatus(StatusCode::kInvalidArgument,
                    "optimizer option 'schedule' value '{}' is not constant, step, poly or cosine", text);
}

// One key of the grammar: where it applies and how its value is stored.
struct KeySpec {
  std::string_view key;
  unsigned optimizers;  // bit(OptimizerKind) set for each optimizer that uses it
  unsigned schedules;   // bit(Kind) set for each schedule that uses it
  Status (*set)(OptimizerConfig& config, std::string_view key, std::string_view value);
};

// "schedule" itself is read first (the schedule keys depend on it), so it is not in this table.
const std::array<KeySpec, 13> kKeys = {{
    {"lr", kAllOptimizers, kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.lr.base_lr, k, v); }},
    {"wd", kAllOptimizers, kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.weight_decay, k, v); }},
    {"momentum", bit(OptimizerKind::kSgd), kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.momentum, k, v); }},
    {"nesterov", bit(OptimizerKind::kSgd), kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setBool(c.nesterov, k, v); }},
    {"init", bit(OptimizerKind::kAdagrad), kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.initial_accumulator, k, v); }},
    {"eps", bit(OptimizerKind::kAdagrad) | bit(OptimizerKind::kAdam), kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.eps, k, v); }},
    {"beta1", bit(OptimizerKind::kAdam), kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.beta1, k, v); }},
    {"beta2", bit(OptimizerKind::kAdam), kAllSchedules,
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.beta2, k, v); }},
    {"step_size", kAllOptimizers, bit(Kind::kStep),
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.lr.step_size, k, v); }},
    {"gamma", kAllOptimizers, bit(Kind::kStep),
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.lr.gamma, k, v); }},
    {"max_steps", kAllOptimizers, bit(Kind::kPoly) | bit(Kind::kCosine),
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.lr.max_steps, k, v); }},
    {"power", kAllOptimizers, bit(Kind::kPoly),
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.lr.power, k, v); }},
    {"min_lr", kAllOptimizers, bit(Kind::kCosine),
     [](OptimizerConfig& c, auto k, auto v) { return setNumber(c.lr.min_lr, k, v); }},
}};

// The schedules a key needs, for the message when it is given under another one.
std::string scheduleList(unsigned schedules) {
  std::vector<std::string_view> names;
  for (auto [kind, name] : {std::pair{Kind::kStep, "step"}, {Kind::kPoly, "poly"}, {Kind::kCosine, "cosine"}}) {
    if (schedules & bit(kind)) names.push_back(name);
  }
  return fmt::format("schedule={}", fmt::join(names, " or schedule="));
}

// The keys an optimizer accepts, for the message about an unknown key.
std::string keysFor(OptimizerKind kind) {
  std::vector<std::string_view> names;
  for (const KeySpec& spec : kKeys) {
    if ((spec.optimizers & bit(kind)) && spec.schedules == kAllSchedules) names.push_back(spec.key);
  }
  names.push_back("schedule");
  for (const KeySpec& spec : kKeys) {
    if (spec.schedules != kAllSchedules) names.push_back(spec.key);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

struct Option {
  std::string_view key;
  std::string_view value;
};

Result<std::vector<Option>> splitOptions(std::string_view text) {
  std::vector<Option> options;
  std::set<std::string_view> seen;
  for (std::string_view untrimmed : splitListOrNone(text)) {
    const std::string_view item = trimBlanks(untrimmed);
    if (item.empty()) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer spec has an empty option (expected key=value,...)");
    }
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer option '{}' has no value (expected {}=value)", item,
                        item);
    }
    const Option option{trimBlanks(item.substr(0, eq)), trimBlanks(item.substr(eq + 1))};
    if (!seen.insert(option.key).second) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer option '{}' is given twice", option.key);
    }
    options.push_back(option);
  }
  return options;
}

}  // namespace

Result<OptimizerConfig> parseOptimizer(std::string_view spec) {
  const auto colon = spec.find(':');
  const std::string_view name = trimBlanks(spec.substr(0, colon));
  OptimizerConfig config;
  if (name == "sum") {
    if (colon != std::string_view::npos) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer sum takes no options, got '{}'",
                        spec.substr(colon + 1));
    }
    config.sum_only = true;
    return config;
  }
  const auto kinds = {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam};
  const auto kind = std::find_if(kinds.begin(), kinds.end(), [&](OptimizerKind k) { return name == optimizerName(k); });
  if (kind == kinds.end()) {
    return makeStatus(StatusCode::kInvalidArgument, "unknown optimizer '{}' (expected sgd, adagrad, adam or sum)",
                      name);
  }
  config.kind = *kind;
  auto options = splitOptions(colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1));
  if (!options) return options.status();

  for (const Option& option : *options) {
    if (option.key != "schedule") continue;
    auto schedule = scheduleKind(option.value);
    if (!schedule) return schedule.status();
    config.lr.kind = *schedule;
  }
  for (const Option& option : *options) {
    if (option.key == "schedule") continue;
    const KeySpec* spec_of_key = nullptr;
    for (const KeySpec& k : kKeys) {
      if (k.key == option.key) spec_of_key = &k;
    }
    if (spec_of_key == nullptr) {
      return makeStatus(StatusCode::kInvalidArgument, "unknown optimizer option '{}' for {} (expected {})", option.key,
                        name, keysFor(config.kind));
    }
    if (!(spec_of_key->optimizers & bit(config.kind))) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer option '{}' does not apply to {}", option.key, name);
    }
    if (!(spec_of_key->schedules & bit(config.lr.kind))) {
      return makeStatus(StatusCode::kInvalidArgument, "optimizer option '{}' needs {}, not schedule={}", option.key,
                        scheduleList(spec_of_key->schedules), scheduleName(config.lr.kind));
    }
    POSEIDON_RETURN_IF_ERROR(spec_of_key->set(config, option.key, option.value));
  }
  POSEIDON_RETURN_IF_ERROR(config.validate());
  return config;
}

}  // namespace poseidon::kernels
