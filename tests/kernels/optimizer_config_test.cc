// OptimizerConfig: learning-rate schedules, validation messages, the spec parser, the kernel
// scalars of a step, and canonical() as the checkpoint's compatibility key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <set>
#include <vector>

#include "kernels/chunk_update.h"
#include "kernels/optimizer_config.h"

namespace poseidon::kernels {
namespace {

TEST(OptimizerSchedule, ConstantAndStep) {
  LrSchedule s;
  s.base_lr = 0.1;
  EXPECT_EQ(s.at(0), 0.1);
  EXPECT_EQ(s.at(1'000'000), 0.1);
  s.kind = LrSchedule::Kind::kStep;
  s.step_size = 30;
  s.gamma = 0.5;
  EXPECT_EQ(s.at(0), 0.1);
  EXPECT_EQ(s.at(29), 0.1);
  EXPECT_EQ(s.at(30), 0.05);
  EXPECT_EQ(s.at(59), 0.05);
  EXPECT_EQ(s.at(60), 0.025);
  EXPECT_EQ(s.at(95), 0.0125);
}

LrSchedule decaying(LrSchedule::Kind kind, double base_lr, uint64_t max_steps) {
  LrSchedule s;
  s.kind = kind;
  s.base_lr = base_lr;
  s.max_steps = max_steps;
  return s;
}

TEST(OptimizerSchedule, PolyDecaysToZeroAndHolds) {
  LrSchedule s = decaying(LrSchedule::Kind::kPoly, 0.2, 100);
  s.power = 2.0;
  EXPECT_DOUBLE_EQ(s.at(0), 0.2);
  EXPECT_DOUBLE_EQ(s.at(50), 0.2 * 0.25);
  EXPECT_NEAR(s.at(90), 0.2 * 0.01, 1e-15);
  EXPECT_EQ(s.at(100), 0.0);
  EXPECT_EQ(s.at(1000), 0.0);
  s.power = 1.0;
  EXPECT_DOUBLE_EQ(s.at(25), 0.15);
}

TEST(OptimizerSchedule, CosineFromBaseToMinAndHolds) {
  LrSchedule s = decaying(LrSchedule::Kind::kCosine, 1.0, 1000);
  s.min_lr = 0.1;
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(500), 0.55);
  EXPECT_DOUBLE_EQ(s.at(250), 0.1 + 0.9 * (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.1);
  EXPECT_DOUBLE_EQ(s.at(5000), 0.1);
}

// validate() fails naming the field, the value and the accepted range.
void expectInvalid(const OptimizerConfig& config, const std::string& message) {
  const Status status = config.validate();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
  EXPECT_EQ(status.message(), message);
}

TEST(OptimizerValidate, DefaultsAreValid) { EXPECT_TRUE(OptimizerConfig().validate().isOk()); }

TEST(OptimizerValidate, MessagesNameFieldValueAndRange) {
  using Change = std::function<void(OptimizerConfig&)>;
  const std::vector<std::pair<Change, std::string>> cases = {
      {[](auto& c) { c.lr.base_lr = -0.1; }, "optimizer lr -0.1 is not a finite value >= 0"},
      {[](auto& c) { c.lr.base_lr = INFINITY; }, "optimizer lr inf is not a finite value >= 0"},
      {[](auto& c) { c.momentum = 1.0f; }, "optimizer momentum 1 is not in [0, 1)"},
      {[](auto& c) { c.momentum = -0.5f; }, "optimizer momentum -0.5 is not in [0, 1)"},
      {[](auto& c) { c.beta1 = 1.0f; }, "optimizer beta1 1 is not in [0, 1)"},
      {[](auto& c) { c.beta2 = NAN; }, "optimizer beta2 nan is not in [0, 1)"},
      {[](auto& c) { c.eps = 0; }, "optimizer eps 0 is not a finite value > 0"},
      {[](auto& c) { c.weight_decay = -1e-4f; }, "optimizer wd -9.99999975e-05 is not a finite value >= 0"},
      {[](auto& c) { c.grad_scale = 0; }, "optimizer grad_scale 0 is not a finite value > 0"},
      {[](auto& c) { c.initial_accumulator = -1; }, "optimizer init -1 is not a finite value >= 0"},
      {[](auto& c) { c.nesterov = true; },
       "optimizer nesterov needs sgd with momentum in (0, 1), not sgd with momentum 0"},
      {[](auto& c) {
         c.kind = OptimizerKind::kAdam;
         c.momentum = 0.9f;
         c.nesterov = true;
       },
       "optimizer nesterov needs sgd with momentum in (0, 1), not adam with momentum 0.899999976"},
      {[](auto& c) { c.kind = static_cast<OptimizerKind>(9); },
       "optimizer kind 9 is not sgd (1), adagrad (2) or adam (3)"},
  };
  for (const auto& [change, message] : cases) {
    OptimizerConfig c;
    change(c);
    expectInvalid(c, message);
  }
}

TEST(OptimizerValidate, ScheduleFields) {
  OptimizerConfig c;
  c.lr.kind = LrSchedule::Kind::kStep;
  expectInvalid(c, "optimizer step_size 0 is not > 0 (needed by schedule=step)");
  c.lr.step_size = 10;
  c.lr.gamma = 1.5;
  expectInvalid(c, "optimizer gamma 1.5 is not in (0, 1]");
  c.lr.gamma = 0.1;
  EXPECT_TRUE(c.validate().isOk());
  c = {};
  c.lr.kind = LrSchedule::Kind::kPoly;
  expectInvalid(c, "optimizer max_steps 0 is not > 0 (needed by schedule=poly)");
  c.lr.max_steps = 100;
  c.lr.power = 0;
  expectInvalid(c, "optimizer power 0 is not a finite value > 0");
  c = {};
  c.lr.kind = LrSchedule::Kind::kCosine;
  c.lr.max_steps = 100;
  c.lr.min_lr = 0.5;
  expectInvalid(c, "optimizer min_lr 0.5 is not in [0, lr = 0.01]");
}

TEST(OptimizerParse, GoodSpecs) {
  auto sgd = parseOptimizer("sgd");
  ASSERT_TRUE(sgd.isOk()) << sgd.status().toString();
  EXPECT_EQ(sgd->kind, OptimizerKind::kSgd);
  EXPECT_EQ(sgd->canonical(), OptimizerConfig().canonical());

  auto momentum = parseOptimizer("sgd:lr=0.1,momentum=0.9,wd=5e-4,nesterov=1");
  ASSERT_TRUE(momentum.isOk()) << momentum.status().toString();
  EXPECT_EQ(momentum->lr.base_lr, 0.1);
  EXPECT_EQ(momentum->momentum, 0.9f);
  EXPECT_EQ(momentum->weight_decay, 5e-4f);
  EXPECT_TRUE(momentum->nesterov);

  auto adagrad = parseOptimizer("adagrad:lr=0.01,init=0.1");
  ASSERT_TRUE(adagrad.isOk()) << adagrad.status().toString();
  EXPECT_EQ(adagrad->kind, OptimizerKind::kAdagrad);
  EXPECT_EQ(adagrad->initial_accumulator, 0.1f);
  EXPECT_EQ(adagrad->stateWords(), 1);
  EXPECT_EQ(adagrad->stateInitialValue(0), 0.1f);

  auto adam = parseOptimizer(" adam : lr=0.001, beta1=0.8 ,beta2=0.99,eps=1e-7 ");
  ASSERT_TRUE(adam.isOk()) << adam.status().toString();
  EXPECT_EQ(adam->kind, OptimizerKind::kAdam);
  EXPECT_EQ(adam->beta1, 0.8f);
  EXPECT_EQ(adam->beta2, 0.99f);
  EXPECT_EQ(adam->eps, 1e-7f);

  auto step = parseOptimizer("sgd:step_size=30,schedule=step,gamma=0.1");  // keys in any order
  ASSERT_TRUE(step.isOk()) << step.status().toString();
  EXPECT_EQ(step->lr.kind, LrSchedule::Kind::kStep);
  EXPECT_EQ(step->lr.step_size, 30u);
  auto poly = parseOptimizer("sgd:schedule=poly,max_steps=1000,power=0.9");
  ASSERT_TRUE(poly.isOk()) << poly.status().toString();
  EXPECT_EQ(poly->lr.max_steps, 1000u);
  EXPECT_EQ(poly->lr.power, 0.9);
  auto cosine = parseOptimizer("adam:schedule=cosine,max_steps=1000,min_lr=0");
  ASSERT_TRUE(cosine.isOk()) << cosine.status().toString();
  EXPECT_EQ(cosine->lr.kind, LrSchedule::Kind::kCosine);
}

void expectParseError(std::string_view spec, const std::string& message) {
  auto parsed = parseOptimizer(spec);
  ASSERT_FALSE(parsed.isOk()) << spec;
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), message) << spec;
}

TEST(OptimizerParse, BadSpecsNameTheKeyAndValue) {
  expectParseError("adamw", "unknown optimizer 'adamw' (expected sgd, adagrad, adam or sum)");
  expectParseError("", "unknown optimizer '' (expected sgd, adagrad, adam or sum)");
  expectParseError("sgd:lr=abc", "optimizer option 'lr' value 'abc' is not a number");
  expectParseError("sgd:lr=0.1x", "optimizer option 'lr' value '0.1x' is not a number");
  expectParseError("sgd:lr=", "optimizer option 'lr' value '' is not a number");
  expectParseError("sgd:lr", "optimizer option 'lr' has no value (expected lr=value)");
  expectParseError("sgd:lr=0.1,,momentum=0.9", "optimizer spec has an empty option (expected key=value,...)");
  expectParseError("sgd:lr=0.1,", "optimizer spec has an empty option (expected key=value,...)");
  expectParseError("sgd:,lr=0.1", "optimizer spec has an empty option (expected key=value,...)");
  expectParseError("sgd:lr=0.1,lr=0.2", "optimizer option 'lr' is given twice");
  expectParseError("sgd:nesterov=yes", "optimizer option 'nesterov' value 'yes' is not 0, 1, true or false");
  expectParseError("sgd:schedule=exp", "optimizer option 'schedule' value 'exp' is not constant, step, poly or cosine");
  expectParseError("sgd:schedule=step,step_size=1.5",
                   "optimizer option 'step_size' value '1.5' is not a whole number in [0, 2^64)");
  expectParseError("sgd:schedule=step,step_size=-3",
                   "optimizer option 'step_size' value '-3' is not a whole number in [0, 2^64)");
  expectParseError("adam:momentum=0.9", "optimizer option 'momentum' does not apply to adam");
  expectParseError("sgd:beta1=0.9", "optimizer option 'beta1' does not apply to sgd");
  expectParseError("sgd:init=0.1", "optimizer option 'init' does not apply to sgd");
  expectParseError("sgd:max_steps=10",
                   "optimizer option 'max_steps' needs schedule=poly or schedule=cosine, not "
                   "schedule=constant");
  expectParseError("sgd:schedule=poly,max_steps=10,min_lr=0",
                   "optimizer option 'min_lr' needs schedule=cosine, not schedule=poly");
  expectParseError("sgd:foo=1",
                   "unknown optimizer option 'foo' for sgd (expected lr, wd, momentum, nesterov, "
                   "schedule, step_size, gamma, max_steps, power, min_lr)");
  expectParseError("adam:lr=1,bar=2",
                   "unknown optimizer option 'bar' for adam (expected lr, wd, eps, beta1, beta2, "
                   "schedule, step_size, gamma, max_steps, power, min_lr)");
  // Values that parse but are out of range get validate()'s message.
  expectParseError("sgd:momentum=1.5", "optimizer momentum 1.5 is not in [0, 1)");
  expectParseError("sgd:lr=nan", "optimizer lr nan is not a finite value >= 0");
  expectParseError("sgd:nesterov=1", "optimizer nesterov needs sgd with momentum in (0, 1), not sgd with momentum 0");
  expectParseError("sgd:schedule=step", "optimizer step_size 0 is not > 0 (needed by schedule=step)");
  expectParseError("sum:lr=0.1", "optimizer sum takes no options, got 'lr=0.1'");
}

// "sum": a summation server; its step turns a zeroed chunk into the scaled sum, exactly.
TEST(OptimizerParse, SumIsASummationServer) {
  auto sum = parseOptimizer("sum");
  ASSERT_TRUE(sum.isOk()) << sum.status().toString();
  EXPECT_TRUE(sum->sum_only);
  EXPECT_EQ(sum->stateWords(), 0);
  EXPECT_EQ(sum->canonical(), "optimizer=sum grad_scale=1");
  OptimizerConfig momentum = *sum;
  momentum.momentum = 0.9f;
  EXPECT_NE(momentum.validate().message().find("optimizer sum takes no optimizer settings"), std::string::npos)
      << momentum.validate().toString();
  // 0 - (-1 * g) == g for awkward values (subnormal, negative zero, the largest float).
  const std::vector<float> gradient = {1.0f / 3, -7.5e-39f, -0.0f, 3.4028235e38f, 1e-45f};
  std::vector<float> params(gradient.size(), 123.0f);
  std::fill(params.begin(), params.end(), 0.0f);
  const float* g = gradient.data();
  kernels::ChunkUpdate update{params.data(),  nullptr, nullptr, params.size(), std::span<const float* const>(&g, 1),
                              sum->stepFor(5)};
  kernels::chunkUpdateCpu(update);
  for (size_t i = 0; i < gradient.size(); ++i) {
    EXPECT_EQ(params[i], gradient[i]) << i;
  }
}

TEST(OptimizerStepFor, ScheduleAndAdamBiasCorrections) {
  auto config = parseOptimizer("adam:lr=0.001,beta1=0.9,beta2=0.999,schedule=step,step_size=2,gamma=0.5");
  ASSERT_TRUE(config.isOk()) << config.status().toString();
  config->grad_scale = 0.25f;
  const kernels::OptimizerStep s0 = config->stepFor(0);
  EXPECT_EQ(s0.kind, OptimizerKind::kAdam);
  EXPECT_EQ(s0.lr, 0.001f);
  EXPECT_EQ(s0.grad_scale, 0.25f);
  EXPECT_EQ(s0.bias_correction1, static_cast<float>(1.0 - static_cast<double>(0.9f)));
  EXPECT_EQ(s0.bias_correction2, static_cast<float>(1.0 - static_cast<double>(0.999f)));
  const kernels::OptimizerStep s2 = config->stepFor(2);
  EXPECT_EQ(s2.lr, 0.0005f);
  EXPECT_EQ(s2.bias_correction1, static_cast<float>(1.0 - std::pow(static_cast<double>(0.9f), 3.0)));
  EXPECT_EQ(s2.bias_correction2, static_cast<float>(1.0 - std::pow(static_cast<double>(0.999f), 3.0)));
  // Far into training the corrections reach 1.
  EXPECT_EQ(config->stepFor(1'000'000).bias_correction2, 1.0f);

  auto sgd = parseOptimizer("sgd:lr=0.1,momentum=0.9,nesterov=true,wd=1e-4");
  ASSERT_TRUE(sgd.isOk()) << sgd.status().toString();
  const kernels::OptimizerStep s = sgd->stepFor(5);
  EXPECT_EQ(s.momentum, 0.9f);
  EXPECT_TRUE(s.nesterov);
  EXPECT_EQ(s.weight_decay, 1e-4f);
  EXPECT_EQ(s.bias_correction1, 1.0f);
  EXPECT_EQ(sgd->stateWords(), 1);
  EXPECT_EQ(sgd->stateInitialValue(0), 0.0f);
}

TEST(OptimizerCanonical, EveryFieldAppearsAndChangesIt) {
  const OptimizerConfig base;
  EXPECT_EQ(base.canonical(),
            "optimizer=sgd lr=0.01 schedule=constant step_size=0 gamma=0.10000000000000001 max_steps=0 power=1 "
            "min_lr=0 grad_scale=1 wd=0 momentum=0 nesterov=0 eps=9.99999994e-09 beta1=0.899999976 "
            "beta2=0.999000013 init=0");
  const std::vector<std::function<void(OptimizerConfig&)>> changes = {
      [](OptimizerConfig& c) { c.kind = OptimizerKind::kAdam; },
      [](OptimizerConfig& c) { c.lr.kind = LrSchedule::Kind::kCosine; },
      [](OptimizerConfig& c) { c.lr.base_lr = std::nextafter(0.01, 1.0); },
      [](OptimizerConfig& c) { c.lr.step_size = 1; },
      [](OptimizerConfig& c) { c.lr.gamma = std::nextafter(0.1, 1.0); },
      [](OptimizerConfig& c) { c.lr.max_steps = 1; },
      [](OptimizerConfig& c) { c.lr.power = 2; },
      [](OptimizerConfig& c) { c.lr.min_lr = 1e-300; },
      [](OptimizerConfig& c) { c.grad_scale = std::nextafter(1.0f, 0.0f); },
      [](OptimizerConfig& c) { c.weight_decay = 1e-45f; },
      [](OptimizerConfig& c) { c.momentum = 0.5f; },
      [](OptimizerConfig& c) { c.nesterov = true; },
      [](OptimizerConfig& c) { c.eps = std::nextafter(1e-8f, 1.0f); },
      [](OptimizerConfig& c) { c.beta1 = std::nextafter(0.9f, 1.0f); },
      [](OptimizerConfig& c) { c.beta2 = std::nextafter(0.999f, 0.0f); },
      [](OptimizerConfig& c) { c.initial_accumulator = 0.1f; },
  };
  std::set<std::string> seen = {base.canonical()};
  for (size_t i = 0; i < changes.size(); ++i) {
    OptimizerConfig changed = base;
    changes[i](changed);
    EXPECT_TRUE(seen.insert(changed.canonical()).second) << "change " << i << ": " << changed.canonical();
  }
}

TEST(OptimizerName, AllKinds) {
  EXPECT_STREQ(optimizerName(OptimizerKind::kSgd), "sgd");
  EXPECT_STREQ(optimizerName(OptimizerKind::kAdagrad), "adagrad");
  EXPECT_STREQ(optimizerName(OptimizerKind::kAdam), "adam");
  EXPECT_STREQ(scheduleName(LrSchedule::Kind::kCosine), "cosine");
}

}  // namespace
}  // namespace poseidon::kernels
