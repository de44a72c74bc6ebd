// Covers the strong id and offset types: they compare and hash by value, and offsets do the
// arithmetic offsets need (plus a count, difference as a count).
#include "hark/core/base/units.h"

#include <type_traits>
#include <unordered_set>

#include <gtest/gtest.h>

namespace hark {
namespace {

TEST(StrongId, DistinctTypesDoNotMix) {
  static_assert(!std::is_convertible_v<StreamId, TopicId>);
  static_assert(!std::is_convertible_v<uint32_t, StreamId>);
  static_assert(sizeof(PartitionId) == 4);
  EXPECT_LT(StreamId(1), StreamId(2));
  std::unordered_set<StreamId> ids{StreamId(1), StreamId(1), StreamId(7)};
  EXPECT_EQ(ids.size(), 2u);
}

TEST(Offset, CountsMessages) {
  const Offset first(10);
  const Offset end = first + 5;
  EXPECT_EQ(end.value(), 15u);
  EXPECT_EQ(end - first, 5u);
  EXPECT_GT(end, first);
}

}  // namespace
}  // namespace hark
