// Covers LoginThrottle: a lockout after failures_max failures in a row from one address, for
// the lockout's length only, per address; a success resets the count; 0 turns it off.
#include "server/login_throttle.h"

#include <gtest/gtest.h>

namespace hark::server {
namespace {

using namespace std::chrono_literals;

TEST(LoginThrottle, LocksAnAddressOutAfterFailuresInARow) {
  LoginThrottle throttle(3, 10s);
  const Instant start{};
  EXPECT_FALSE(throttle.failed("10.0.0.1", start));
  EXPECT_FALSE(throttle.failed("10.0.0.1", start));
  EXPECT_TRUE(throttle.allowed("10.0.0.1", start));
  EXPECT_TRUE(throttle.failed("10.0.0.1", start)) << "the third failure starts a lockout";
  EXPECT_FALSE(throttle.allowed("10.0.0.1", start + 9s));
  EXPECT_TRUE(throttle.allowed("10.0.0.2", start)) << "per address";
  EXPECT_TRUE(throttle.allowed("10.0.0.1", start + 10s));
  EXPECT_FALSE(throttle.failed("10.0.0.1", start + 10s)) << "counting starts over";
}

TEST(LoginThrottle, ASuccessResetsTheCount) {
  LoginThrottle throttle(2, 10s);
  const Instant start{};
  EXPECT_FALSE(throttle.failed("10.0.0.1", start));
  throttle.succeeded("10.0.0.1");
  EXPECT_FALSE(throttle.failed("10.0.0.1", start));
  EXPECT_TRUE(throttle.allowed("10.0.0.1", start));
}

TEST(LoginThrottle, ZeroFailuresMaxTurnsItOff) {
  LoginThrottle throttle(0, 10s);
  for (int i = 0; i < 100; i++) EXPECT_FALSE(throttle.failed("10.0.0.1", Instant{}));
  EXPECT_TRUE(throttle.allowed("10.0.0.1", Instant{}));
}

TEST(HostOf, DropsThePort) {
  EXPECT_EQ(host_of("127.0.0.1:5000"), "127.0.0.1");
  EXPECT_EQ(host_of("[::1]:5000"), "::1");
  EXPECT_EQ(host_of("unix"), "unix");
}

}  // namespace
}  // namespace hark::server
