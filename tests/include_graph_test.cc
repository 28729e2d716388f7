// The include graph: every `#include "folder/..."` in the repository follows the module map of
// docs/DESIGN.md (its ```deps block), and every folder holding sources is in that map. The first
// cases pin the checker itself on small maps, so a forbidden edge is known to be caught.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/include_rules.h"

namespace poseidon::testing {
namespace {

constexpr const char* kRules = R"(# a comment line
common:
transport: common   # a trailing comment
kernels: common
ps: transport kernels common
sfb: transport kernels common
tools: ps sfb transport kernels common
tests: *
separate: transport/tcp transport/verbs
)";

IncludeMap smallMap() {
  auto map = IncludeMap::parse(kRules);
  EXPECT_TRUE(map.isOk()) << map.status().toString();
  return *map;
}

TEST(IncludeMap, ParsesFoldersAndComments) {
  IncludeMap map = smallMap();
  EXPECT_TRUE(map.knows("common"));
  EXPECT_TRUE(map.knows("tests"));
  EXPECT_FALSE(map.knows("trainer"));
  EXPECT_FALSE(map.knows("separate"));
}

TEST(IncludeMap, RejectsBadRules) {
  auto no_colon = IncludeMap::parse("common\n");
  ASSERT_FALSE(no_colon.isOk());
  EXPECT_NE(no_colon.status().message().find("deps line 1 'common'"), std::string::npos) << no_colon.status().message();
  auto twice = IncludeMap::parse("common:\ncommon:\n");
  ASSERT_FALSE(twice.isOk());
  EXPECT_NE(twice.status().message().find("'common' has a rule already"), std::string::npos);
  auto unknown = IncludeMap::parse("common:\nps: comon\n");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("deps line 2: 'comon' is not a folder"), std::string::npos);
  auto lone = IncludeMap::parse("transport:\nseparate: transport/tcp\n");
  EXPECT_FALSE(lone.isOk());
  EXPECT_FALSE(IncludeMap::parse("# only a comment\n").isOk());
}

TEST(IncludeMap, FindsTheDepsBlockInMarkdown) {
  auto map = IncludeMap::fromMarkdown("# Title\n\ntext\n\n```\nnot: this\n```\n\n```deps\ncommon:\nps: common\n```\n");
  ASSERT_TRUE(map.isOk()) << map.status().toString();
  EXPECT_TRUE(map->knows("ps"));
  EXPECT_FALSE(map->knows("not"));
  EXPECT_FALSE(IncludeMap::fromMarkdown("# Title\nno block\n").isOk());
  EXPECT_FALSE(IncludeMap::fromMarkdown("x\n```deps\ncommon:\n").isOk());  // never closed
  EXPECT_FALSE(IncludeMap::fromMarkdown("x\n```deps\n```\n").isOk());      // empty
}

TEST(IncludeMap, AllowsArrowsDownAndWithinAFolder) {
  IncludeMap map = smallMap();
  EXPECT_EQ(map.checkEdge("ps/server.cc", "transport/pair.h"), "");
  EXPECT_EQ(map.checkEdge("ps/server.cc", "common/status.h"), "");
  EXPECT_EQ(map.checkEdge("ps/server.cc", "ps/chunk_layout.h"), "");
  EXPECT_EQ(map.checkEdge("tools/hybcomm/main.cc", "tools/ps/job_options.h"), "");
  EXPECT_EQ(map.checkEdge("tests/ps/bsp_test.cc", "tests/support/mesh.h"), "");
  EXPECT_EQ(map.checkEdge("tests/perf/options_test.cc", "tools/perf/options.h"), "");  // tests: *
  EXPECT_EQ(map.checkEdge("transport/tcp/pair.cc", "transport/pair_base.h"), "");
}

TEST(IncludeMap, IgnoresIncludesOutsideTheMap) {
  IncludeMap map = smallMap();
  EXPECT_EQ(map.checkEdge("transport/socket.cc", "fmt/format.h"), "");
  EXPECT_EQ(map.checkEdge("transport/socket.cc", "socket.h"), "");
  EXPECT_EQ(map.checkEdge("transport/socket.cc", "trainer/hybcomm.h"), "");  // no such folder in this map
}

TEST(IncludeMap, CatchesAnArrowUp) {
  IncludeMap map = smallMap();
  EXPECT_EQ(map.checkEdge("transport/pair.h", "ps/client.h"),
            "transport -> ps is not an arrow of the map (transport may include: common)");
  EXPECT_EQ(map.checkEdge("common/status.h", "transport/pair.h"),
            "common -> transport is not an arrow of the map (common may include: nothing else)");
}

TEST(IncludeMap, CatchesASchemeIncludingAnother) {
  IncludeMap map = smallMap();
  EXPECT_EQ(map.checkEdge("sfb/hybrid.cc", "ps/client.h"),
            "sfb -> ps is not an arrow of the map (sfb may include: common kernels transport)");
}

TEST(IncludeMap, CatchesIncludesOfToolsAndTests) {
  IncludeMap map = smallMap();
  EXPECT_NE(map.checkEdge("ps/server.cc", "tools/ps/job_options.h"), "");
  EXPECT_NE(map.checkEdge("tools/ps/server_main.cc", "tests/support/mesh.h"), "");
}

TEST(IncludeMap, KeepsSeparateFoldersApart) {
  IncludeMap map = smallMap();
  EXPECT_EQ(map.checkEdge("transport/tcp/pair.cc", "transport/verbs/pair.h"),
            "transport/tcp -> transport/verbs: kept separate");
  EXPECT_EQ(map.checkEdge("transport/verbs/pair.cc", "transport/tcp/stream.h"),
            "transport/verbs -> transport/tcp: kept separate");
  EXPECT_EQ(map.checkEdge("transport/device.cc", "transport/tcp/device.h"), "");
  EXPECT_EQ(map.checkEdge("transport/tcpx/a.cc", "transport/verbs/pair.h"), "");  // a prefix is not a folder
}

TEST(IncludeMap, FindsQuotedIncludesWithTheirLines) {
  auto found =
      quotedIncludes("// \"x/y.h\" in a comment\n#include <vector>\n#include \"ps/a.h\"\n  #  include  \"b.h\"\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].line, 3);
  EXPECT_EQ(found[0].path, "ps/a.h");
  EXPECT_EQ(found[1].line, 4);
  EXPECT_EQ(found[1].path, "b.h");
}

TEST(IncludeMap, ChecksAFileLineByLine) {
  IncludeMap map = smallMap();
  auto found = checkFile(map, "kernels/update.cc", "#include \"common/status.h\"\n#include \"ps/optimizer.h\"\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].toString(),
            "kernels/update.cc:2: #include \"ps/optimizer.h\": kernels -> ps is not an arrow of the map "
            "(kernels may include: common)");
}

TEST(IncludeMap, CatchesAFolderTheMapDoesNotKnow) {
  IncludeMap map = smallMap();
  auto found = checkTree(map, "/nonexistent", {"newmodule/a.cc", "newmodule/b.h", "CMakeLists.txt.h"});
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].toString(),
            "newmodule/: folder with 2 source files (first: newmodule/a.cc) is not in the map: add a rule for it");
}

// The repository itself. On failure, every offending file:line and edge is listed.
TEST(IncludeGraph, RepositoryFollowsTheMap) {
  const std::string root = POSEIDON_SOURCE_DIR;
  std::ifstream design(root + "/docs/DESIGN.md");
  ASSERT_TRUE(design) << "cannot read " << root << "/docs/DESIGN.md";
  std::ostringstream text;
  text << design.rdbuf();
  auto map = IncludeMap::fromMarkdown(text.str());
  ASSERT_TRUE(map.isOk()) << "docs/DESIGN.md: " << map.status().toString();

  auto files = sourceFiles(root);
  ASSERT_TRUE(files.isOk()) << files.status().toString();
  // A listing that found next to nothing would make the check vacuous.
  ASSERT_GT(files->size(), 100u) << "only " << files->size() << " source files under " << root;

  auto violations = checkTree(*map, root, *files);
  ASSERT_TRUE(violations.isOk()) << violations.status().toString();
  std::string report;
  for (const IncludeViolation& v : *violations) report += v.toString() + "\n";
  EXPECT_TRUE(violations->empty()) << violations->size() << " includes break the map of docs/DESIGN.md ("
                                   << files->size() << " files checked):\n"
                                   << report;
}

}  // namespace
}  // namespace poseidon::testing
