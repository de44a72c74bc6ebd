// Covers Result<T> and the HARK_TRY propagation macros: values and errors travel unchanged,
// moves keep ownership single, and a failed step stops the function at that step.
#include "hark/core/base/result.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace hark {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) return Error::invalid_format;
  return value;
}

Result<int> doubled(int value, int& steps) {
  HARK_TRY_ASSIGN(const int checked, parse_positive(value));
  steps++;
  return checked * 2;
}

Status check_both(int a, int b, int& steps) {
  HARK_TRY(parse_positive(a));
  steps++;
  HARK_TRY(parse_positive(b));
  steps++;
  return ok_status();
}

TEST(Result, HoldsValueOrError) {
  const Result<int> good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  EXPECT_EQ(good.error(), Error::ok);

  const Result<int> bad = parse_positive(-1);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), Error::invalid_format);
}

TEST(Result, TryAssignStopsAtFirstError) {
  int steps = 0;
  EXPECT_EQ(*doubled(4, steps), 8);
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(doubled(0, steps).error(), Error::invalid_format);
  EXPECT_EQ(steps, 1);
}

TEST(Result, TryPropagatesTheFailingStepsError) {
  int steps = 0;
  EXPECT_TRUE(check_both(1, 2, steps).ok());
  EXPECT_EQ(steps, 2);
  steps = 0;
  EXPECT_EQ(check_both(1, -2, steps).error(), Error::invalid_format);
  EXPECT_EQ(steps, 1);
}

TEST(Result, MoveOnlyValuesMoveOut) {
  Result<std::unique_ptr<std::string>> result = std::make_unique<std::string>("payload");
  Result<std::unique_ptr<std::string>> moved = std::move(result);
  ASSERT_TRUE(moved.ok());
  std::unique_ptr<std::string> owned = std::move(moved).value();
  EXPECT_EQ(*owned, "payload");
}

TEST(Result, CopyAndAssignKeepStateAndValue) {
  Result<std::string> a = std::string("left");
  Result<std::string> b = Error::stream_id_not_found;
  b = a;
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, "left");
  a = Result<std::string>(Error::topic_id_not_found);
  EXPECT_EQ(a.error(), Error::topic_id_not_found);
  EXPECT_EQ(*b, "left");
}

TEST(ResultDeathTest, ReadingTheValueOfAnErrorAborts) {
  const Result<int> bad = Error::invalid_command;
  EXPECT_DEATH((void)bad.value(), "assertion failed");
}

}  // namespace
}  // namespace hark
