// The list splitting and blank trimming every option and store-value parser goes through.
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "common/text.h"

namespace poseidon {
namespace {

using Items = std::vector<std::string_view>;

TEST(SplitList, KeepsEveryItemEmptyOnesIncluded) {
  EXPECT_EQ(splitList("a,bc,d"), (Items{"a", "bc", "d"}));
  EXPECT_EQ(splitList("a"), (Items{"a"}));
  EXPECT_EQ(splitList(""), (Items{""}));
  EXPECT_EQ(splitList(","), (Items{"", ""}));
  EXPECT_EQ(splitList("a,,b"), (Items{"a", "", "b"}));
  EXPECT_EQ(splitList("a,"), (Items{"a", ""}));
  EXPECT_EQ(splitList(",a"), (Items{"", "a"}));
  EXPECT_EQ(splitList(" a , b "), (Items{" a ", " b "}));
}

TEST(SplitListOrNone, GivesNoItemForEmptyTextAndEveryItemOtherwise) {
  EXPECT_EQ(splitListOrNone(""), Items{});
  EXPECT_EQ(splitListOrNone(","), (Items{"", ""}));
  EXPECT_EQ(splitListOrNone("a,,b"), (Items{"a", "", "b"}));
  EXPECT_EQ(splitListOrNone("a,"), (Items{"a", ""}));
  EXPECT_EQ(splitListOrNone(" "), (Items{" "}));
  EXPECT_EQ(splitListOrNone("1;2", ';'), (Items{"1", "2"}));
}

TEST(SplitList, TakesAnySeparator) { EXPECT_EQ(splitList("1;2,3;", ';'), (Items{"1", "2,3", ""})); }

TEST(SplitList, ItemsPointIntoTheText) {
  const std::string_view text = "xy,z";
  const Items items = splitList(text);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].data(), text.data());
  EXPECT_EQ(items[1].data(), text.data() + 3);
}

TEST(TrimBlanks, DropsSpacesAndTabsAtBothEndsOnly) {
  EXPECT_EQ(trimBlanks("  a b\t"), "a b");
  EXPECT_EQ(trimBlanks("\t\t"), "");
  EXPECT_EQ(trimBlanks(""), "");
  EXPECT_EQ(trimBlanks("a"), "a");
  EXPECT_EQ(trimBlanks("\na\n"), "\na\n");  // only blanks: a newline is not one
}

}  // namespace
}  // namespace poseidon
