// poseidon-hybcomm-bench as a user meets it: its --layers model spec parses the VGG19-22K default and
// names the bad part of a bad one; bad command lines exit 2 naming the option and the value; a
// rank in the wrong role or a job of the wrong size exits 1 naming the job's layout. Nothing here
// reaches the network.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/spec.h"
#include "tests/support/process.h"
#include "tools/hybcomm/bench_options.h"

namespace poseidon::tools {
namespace {

using poseidon::testing::ProcessResult;
using poseidon::testing::run_process;

ProcessResult runBench(std::vector<std::string> args) {
  args.insert(args.begin(), POSEIDON_HYBCOMM_BENCH_BINARY);
  return run_process(args, std::chrono::seconds(20));
}

// Two workers, one PS server; the store's port is never reached.
std::vector<std::string> job(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--workers", "2", "--ps-servers", "1", "--root", "127.0.0.1:1", "--secret", "s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// --layers is a model spec (model/spec.h); the language itself is tested in tests/model.
TEST(HybCommLayerSpec, DefaultIsVgg19_22kFcOverFour) {
  auto model = model::parseModelSpec(kDefaultLayerSpec);
  ASSERT_TRUE(model) << model.status().toString();
  ASSERT_EQ(model->layers().size(), 3u);
  const uint64_t expected[3][2] = {{1024, 6272}, {1024, 1024}, {5460, 1024}};
  const char* names[3] = {"fc6", "fc7", "fc8"};
  for (size_t l = 0; l < 3; ++l) {
    const model::Layer& layer = model->layers()[l];
    EXPECT_EQ(layer.name(), names[l]);
    EXPECT_TRUE(layer.isFullyConnected());
    EXPECT_EQ(layer.fc(), (model::FcShape{expected[l][0], expected[l][1], false}));
  }
  EXPECT_EQ(model->batch(), 1u);  // none set: the benchmark's K is then --batch's default
}

TEST(HybCommLayerSpec, SectionsKeepTheOrderWritten) {
  auto model = model::parseModelSpec("other:conv=1000;fc:a=3x4;other:bn=7");
  ASSERT_TRUE(model) << model.status().toString();
  const auto& layers = model->layers();
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].name(), "conv");
  EXPECT_FALSE(layers[0].isFullyConnected());
  EXPECT_EQ(layers[0].params(), 1000u);
  EXPECT_EQ(layers[1].denseFloats(), 12u);
  EXPECT_EQ(layers[2].params(), 7u);
}

TEST(HybCommLayerSpec, ErrorsNameTheBadPart) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "names no layer"},
      {"fc:a=3y4", "'a=3y4' is not <name>=<M>x<N>[+bias]"},
      {"fc:a=3x0", "'0' is not a positive integer"},
      {"other:b=x", "'x' is not a positive integer"},
      {"fc:", "section 'fc:' lists no layers"},
      {"fc:a=2x2;other:a=3", "layer 'a' is named twice"},
      {"fc:a=99999999999x99999999999", "exceeds 2^53"},
  };
  for (const auto& [spec, expected] : cases) {
    auto model = model::parseModelSpec(spec);
    ASSERT_FALSE(model) << spec;
    EXPECT_NE(model.status().message().find(expected), std::string::npos)
        << "expected '" << expected << "' in: " << model.status().message();
  }
}

TEST(HybCommBenchCli, HelpExitsZero) {
  const ProcessResult r = runBench({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* option : {"--layers", "--mode", "--ps-servers", "--adam-servers", "--drift-margin"}) {
    EXPECT_NE(r.output.find(option), std::string::npos) << option << " missing in: " << r.output;
  }
  EXPECT_EQ(r.output.find("--model"), std::string::npos) << r.output;
}

TEST(HybCommBenchCli, BadValuesExitTwoNamingTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--rank", "0", "--size", "3"}, "--workers"},  // required
      {job({"--rank", "0", "--size", "3", "--layers", "fc:a=3y4"}), "--layers: model 'fc:a=3y4'"},
      {job({"--rank", "0", "--size", "3", "--mode", "fastest"}), "fastest"},
      {job({"--rank", "0", "--size", "3", "--mode", "adam", "--adam-servers", "0"}), "--mode adam needs"},
      {job({"--rank", "0", "--size", "3", "--mode", "sfb", "--layers", "other:a=10"}), "applies to none"},
      {job({"--rank", "0", "--size", "3", "--batch", "0"}), "--batch"},
      // Without --batch, K is the spec's own batch: checked against the same limit.
      {job({"--rank", "0", "--size", "3", "--layers", "fc:a=3x4;batch=2000000"}),
       "batch K = 2000000 of model 'fc:a=3x4;batch=2000000' exceeds 1048576"},
      {job({"--rank", "0", "--size", "3", "--optimizer", "sum"}), "--optimizer sum"},
      {job({"--rank", "0", "--size", "3", "--role", "chief"}), "chief"},
      {job({"--rank", "0", "--size", "3", "--drift-margin", "0"}), "--drift-margin"},
      {job({"--rank", "0", "--size", "3", "--cost-link-bps", "-1e9"}), "--cost-link-bps"},
      {job({"--rank", "0", "--size", "3", "--event-iteration", "3"}), "expected both or neither"},
      {job({"--rank", "0", "--size", "3", "--event-iteration", "13", "--event-command", "true"}),
       "--event-iteration 13: expected at most --warmup + --iterations = 12"},
      {job({"--rank", "0", "--size", "3", "--cost-latency-us", "fast"}), "--cost-latency-us"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = runBench(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << r.output;
  }
}

TEST(HybCommBenchCli, WrongRoleOrSizeExitsOneNamingTheLayout) {
  // Mode ps has no Adam server: 2 workers + 1 PS server.
  const ProcessResult role = runBench(job({"--rank", "2", "--size", "3", "--mode", "ps", "--role", "worker"}));
  EXPECT_EQ(role.exit_code, 1) << role.output;
  EXPECT_NE(role.output.find("--role worker: rank 2 is a ps-server rank of this job (workers on ranks 0..1, PS "
                             "servers on rank 2, no Adam server"),
            std::string::npos)
      << role.output;
  // Mode adam adds the Adam server: 4 ranks.
  const ProcessResult size = runBench(job({"--rank", "0", "--size", "3", "--mode", "adam"}));
  EXPECT_EQ(size.exit_code, 1) << size.output;
  EXPECT_NE(size.output.find("this job has 4 ranks (workers on ranks 0..1, PS servers on rank 2, Adam server on "
                             "rank 3)"),
            std::string::npos)
      << size.output;
}

}  // namespace
}  // namespace poseidon::tools
