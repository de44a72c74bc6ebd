// Covers the Inbox (single-threaded behaviour here; concurrent use is in
// wake_concurrency_test.cc): FIFO order, chains pushed with one exchange, emptiness.
#include "hark/io/inbox.h"

#include <vector>

#include <gtest/gtest.h>

namespace hark::io {
namespace {

struct Item : InboxNode {
  int value = 0;
};

std::vector<int> drain(Inbox& inbox) {
  std::vector<int> values;
  while (InboxNode* node = inbox.pop()) values.push_back(static_cast<Item*>(node)->value);
  return values;
}

TEST(Inbox, PopsInPushOrder) {
  Inbox inbox;
  std::vector<Item> items(5);
  EXPECT_TRUE(inbox.empty());
  for (int i = 0; i < 5; i++) {
    items[static_cast<size_t>(i)].value = i;
    inbox.push(items[static_cast<size_t>(i)]);
  }
  EXPECT_FALSE(inbox.empty());
  EXPECT_EQ(drain(inbox), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(inbox.empty());
  EXPECT_EQ(inbox.pop(), nullptr);
}

TEST(Inbox, ChainsArriveWholeAndInOrder) {
  Inbox inbox;
  std::vector<Item> items(6);
  for (int i = 0; i < 6; i++) items[static_cast<size_t>(i)].value = i;
  inbox.push(items[0]);
  Inbox::link(items[1], items[2]);
  Inbox::link(items[2], items[3]);
  inbox.push_chain(items[1], items[3]);
  inbox.push(items[4]);
  EXPECT_EQ(drain(inbox), (std::vector<int>{0, 1, 2, 3, 4}));
  inbox.push(items[5]);
  EXPECT_EQ(drain(inbox), (std::vector<int>{5}));
}

TEST(Inbox, NodesCanBeReusedAfterPopping) {
  Inbox inbox;
  Item item;
  for (int round = 0; round < 100; round++) {
    item.value = round;
    inbox.push(item);
    EXPECT_EQ(drain(inbox), (std::vector<int>{round}));
  }
}

}  // namespace
}  // namespace hark::io
