// StoreView: every key under its prefix, views nest, and a view is a Store (barrier works on it).
#include "transport/bootstrap/store_view.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/support/memory_store.h"

namespace poseidon::transport::bootstrap {
namespace {

using namespace std::chrono_literals;
using poseidon::testing::MemoryStore;

std::vector<uint8_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

TEST(StoreView, KeysLiveUnderThePrefix) {
  MemoryStore store;
  StoreView view(store, "job");
  ASSERT_TRUE(view.set("a", bytes("1")).isOk());
  EXPECT_EQ(store.keys(), std::vector<std::string>{"job/a"});
  EXPECT_EQ(view.key("a"), "job/a");
  auto value = store.get("job/a", Deadline::after(1s));
  ASSERT_TRUE(value.isOk()) << value.status().toString();
  EXPECT_EQ(*value, bytes("1"));
  auto back = view.get("a", Deadline::after(1s));
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, bytes("1"));
}

TEST(StoreView, ChildrenAndViewsOfViewsNest) {
  MemoryStore store;
  StoreView job(store, "job");
  StoreView sfb = job.child("sfb");
  EXPECT_EQ(sfb.prefix(), "job/sfb");
  ASSERT_TRUE(sfb.child("3").set("slots", bytes("x")).isOk());
  StoreView wrapped(job, "ring");  // a view given a view: the prefixes join
  ASSERT_TRUE(wrapped.set("0", bytes("y")).isOk());
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"job/ring/0", "job/sfb/3/slots"}));
}

TEST(StoreView, AnEmptyPrefixAddsNothing) {
  MemoryStore store;
  StoreView root(store, "");
  ASSERT_TRUE(root.set("k", bytes("v")).isOk());
  ASSERT_TRUE(root.child("c").set("k", bytes("v")).isOk());
  StoreView c = root.child("c");
  ASSERT_TRUE(StoreView(c, "").set("j", bytes("v")).isOk());
  EXPECT_EQ(store.keys(), (std::vector<std::string>{"c/j", "c/k", "k"}));
}

TEST(StoreView, AddAndBarrierGoThroughTheView) {
  MemoryStore store;
  StoreView a(store, "group-a");
  StoreView b(store, "group-b");
  auto n = a.add("count", 2);
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 2);
  auto m = b.add("count", 1);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(*m, 1) << "two views must not share a counter";
  std::thread other([&] { EXPECT_TRUE(barrier(a, "start", 2, Deadline::after(5s)).isOk()); });
  EXPECT_TRUE(barrier(a, "start", 2, Deadline::after(5s)).isOk());
  other.join();
  auto done = store.get("group-a/start/done", Deadline::after(1s));
  EXPECT_TRUE(done.isOk()) << "the barrier's keys live under the view";
}

TEST(StoreView, AMissingKeyTimesOutNamingTheFullKey) {
  MemoryStore store;
  StoreView view = StoreView(store, "job").child("sfb");
  auto value = view.get("7", Deadline::after(20ms));
  ASSERT_FALSE(value.isOk());
  EXPECT_EQ(value.status().code(), StatusCode::kTimeout);
  EXPECT_NE(value.status().message().find("job/sfb/7"), std::string::npos) << value.status().toString();
}

}  // namespace
}  // namespace poseidon::transport::bootstrap
