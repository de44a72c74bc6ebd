#include "hark/core/base/ref.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace hark {
namespace {

struct Counted final : RefCounted {
  explicit Counted(int& deleted) : deleted_(deleted) {}
  ~Counted() override { deleted_++; }
  int& deleted_;
};

TEST(Ref, DeletesWithTheLastReferenceOnly) {
  int deleted = 0;
  Ref<Counted> first = make_ref<Counted>(deleted);
  {
    Ref<Counted> copy = first;
    Ref<const Counted> as_const = std::move(copy);  // Converts, taking copy's reference.
    EXPECT_FALSE(copy);
    EXPECT_EQ(as_const.get(), first.get());
  }
  EXPECT_EQ(deleted, 0);
  Ref<Counted> moved = std::move(first);
  EXPECT_FALSE(first);
  moved.reset();
  EXPECT_EQ(deleted, 1);
  moved.reset();  // Idempotent.
  EXPECT_EQ(deleted, 1);
}

TEST(Ref, ACopiedObjectStartsItsOwnCount) {
  int deleted = 0;
  Ref<Counted> original = make_ref<Counted>(deleted);
  Ref<Counted> duplicate = make_ref<Counted>(*original);  // Copy-constructs the object.
  original.reset();
  EXPECT_EQ(deleted, 1);
  duplicate.reset();
  EXPECT_EQ(deleted, 2);
}

TEST(Ref, CopiesAndDropsFromManyThreadsDeleteExactlyOnce) {
  int deleted = 0;
  Ref<Counted> shared = make_ref<Counted>(deleted);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([copy = shared] {
      for (int i = 0; i < 10000; i++) {
        Ref<Counted> local = copy;
        local.reset();
      }
    });
  }
  shared.reset();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(deleted, 1);
}

}  // namespace
}  // namespace hark
