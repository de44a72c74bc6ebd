// Covers IntrusiveList against a std::deque model with random operations (rapidcheck), plus
// the O(1) splice and removal during iteration that timers and connections rely on.
#include "hark/core/base/intrusive_list.h"

#include <algorithm>
#include <deque>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace hark {
namespace {

struct Item : ListHook<> {
  int value = 0;
};

std::vector<int> values(IntrusiveList<Item>& list) {
  std::vector<int> out;
  list.for_each([&](Item& item) { out.push_back(item.value); });
  return out;
}

RC_GTEST_PROP(IntrusiveList, BehavesLikeADeque, ()) {
  std::vector<Item> items(64);
  for (size_t i = 0; i < items.size(); i++) items[i].value = static_cast<int>(i);
  IntrusiveList<Item> list;
  std::deque<int> model;
  const auto operations = *rc::gen::container<std::vector<std::pair<int, int>>>(
      rc::gen::pair(rc::gen::inRange(0, 4), rc::gen::inRange(0, 64)));
  for (const auto& [operation, index] : operations) {
    Item& item = items[static_cast<size_t>(index)];
    switch (operation) {
      case 0:
        if (!item.linked()) {
          list.push_back(item);
          model.push_back(index);
        }
        break;
      case 1:
        if (!item.linked()) {
          list.push_front(item);
          model.push_front(index);
        }
        break;
      case 2:
        if (item.linked()) {
          list.remove(item);
          model.erase(std::find(model.begin(), model.end(), index));
        }
        break;
      default:
        if (Item* popped = list.pop_front(); popped != nullptr) {
          RC_ASSERT(popped->value == model.front());
          model.pop_front();
        }
    }
    RC_ASSERT(list.size() == model.size());
  }
  RC_ASSERT(values(list) == std::vector<int>(model.begin(), model.end()));
  while (list.pop_front() != nullptr) {
  }
}

TEST(IntrusiveList, SpliceMovesEverythingInOrder) {
  Item a, b, c;
  a.value = 1;
  b.value = 2;
  c.value = 3;
  IntrusiveList<Item> left, right;
  left.push_back(a);
  right.push_back(b);
  right.push_back(c);
  left.splice_back(right);
  EXPECT_TRUE(right.empty());
  EXPECT_EQ(left.size(), 3u);
  EXPECT_EQ(values(left), (std::vector<int>{1, 2, 3}));
  while (left.pop_front() != nullptr) {
  }
}

TEST(IntrusiveList, ForEachMayRemoveTheCurrentItem) {
  std::vector<Item> items(5);
  IntrusiveList<Item> list;
  for (int i = 0; i < 5; i++) {
    items[static_cast<size_t>(i)].value = i;
    list.push_back(items[static_cast<size_t>(i)]);
  }
  list.for_each([&](Item& item) {
    if (item.value % 2 == 0) list.remove(item);
  });
  EXPECT_EQ(values(list), (std::vector<int>{1, 3}));
  while (list.pop_front() != nullptr) {
  }
}

struct TwoLists : ListHook<struct TagA>, ListHook<struct TagB> {};

TEST(IntrusiveList, AnObjectCanSitInOneListPerTag) {
  TwoLists item;
  IntrusiveList<TwoLists, TagA> a;
  IntrusiveList<TwoLists, TagB> b;
  a.push_back(item);
  b.push_back(item);
  EXPECT_EQ(&a.front(), &item);
  EXPECT_EQ(&b.front(), &item);
  a.remove(item);
  EXPECT_TRUE(static_cast<ListHook<TagB>&>(item).linked());
  b.remove(item);
}

}  // namespace
}  // namespace hark
