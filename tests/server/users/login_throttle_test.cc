// Covers LoginThrottle: a lockout after failures_max failures from one address, for the
// lockout's length only, per address; attempts in flight count against the limit; a success
// clears only its own username's failures; a full table evicts the oldest address (unlocked
// ones before lockouts); 0 turns it off.
#include "hark/server/users/login_throttle.h"

#include <string>

#include <gtest/gtest.h>

namespace hark::server {
namespace {

using namespace std::chrono_literals;
using Outcome = LoginThrottle::Outcome;

// One whole login: reserve, then finish with `outcome`. False if the reservation was refused;
// `locked_now` says whether it started a lockout.
bool attempt(LoginThrottle& throttle, std::string_view address, std::string_view username,
             Outcome outcome, Instant now, bool* locked_now = nullptr) {
  if (!throttle.reserve(address, now)) return false;
  const bool locked = throttle.finish(address, username, outcome, now);
  if (locked_now != nullptr) *locked_now = locked;
  return true;
}

TEST(LoginThrottle, LocksAnAddressOutAfterFailuresMaxFailures) {
  LoginThrottle throttle(3, 10s);
  const Instant start{};
  bool locked = false;
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start, &locked));
  EXPECT_FALSE(locked);
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start, &locked));
  EXPECT_FALSE(locked);
  EXPECT_TRUE(throttle.allowed("10.0.0.1", start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start, &locked));
  EXPECT_TRUE(locked) << "the third failure starts a lockout";
  EXPECT_FALSE(throttle.allowed("10.0.0.1", start + 9s));
  EXPECT_FALSE(throttle.reserve("10.0.0.1", start + 9s));
  EXPECT_TRUE(throttle.allowed("10.0.0.2", start)) << "per address";
  EXPECT_TRUE(throttle.allowed("10.0.0.1", start + 10s));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start + 10s, &locked));
  EXPECT_FALSE(locked) << "counting starts over";
}

TEST(LoginThrottle, AttemptsInFlightCountAgainstTheLimit) {
  LoginThrottle throttle(3, 10s);
  const Instant start{};
  // 300 logins at once: only failures_max are let through to the hash.
  int reserved = 0;
  for (int i = 0; i < 300; i++) reserved += throttle.reserve("10.0.0.1", start) ? 1 : 0;
  EXPECT_EQ(reserved, 3);
  EXPECT_FALSE(throttle.finish("10.0.0.1", "root", Outcome::failure, start));
  EXPECT_FALSE(throttle.reserve("10.0.0.1", start)) << "1 failure + 2 in flight";
  EXPECT_FALSE(throttle.finish("10.0.0.1", "root", Outcome::failure, start));
  EXPECT_TRUE(throttle.finish("10.0.0.1", "root", Outcome::failure, start));
  EXPECT_FALSE(throttle.reserve("10.0.0.1", start)) << "locked out";
}

TEST(LoginThrottle, ASuccessInFlightFreesItsSlot) {
  LoginThrottle throttle(2, 10s);
  const Instant start{};
  ASSERT_TRUE(throttle.reserve("10.0.0.1", start));
  ASSERT_TRUE(throttle.reserve("10.0.0.1", start));
  EXPECT_FALSE(throttle.reserve("10.0.0.1", start));
  EXPECT_FALSE(throttle.finish("10.0.0.1", "alice", Outcome::success, start));
  EXPECT_TRUE(throttle.reserve("10.0.0.1", start));
  EXPECT_FALSE(throttle.finish("10.0.0.1", "alice", Outcome::other, start));
  EXPECT_FALSE(throttle.finish("10.0.0.1", "alice", Outcome::success, start));
  EXPECT_EQ(throttle.addresses_count(), 0u) << "an address with nothing to remember is dropped";
}

TEST(LoginThrottle, ASuccessClearsOnlyItsOwnUsernamesFailures) {
  LoginThrottle throttle(3, 10s);
  const Instant start{};
  bool locked = false;
  // Guesses at root interleaved with valid logins as alice: alice's logins do not reset them.
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "alice", Outcome::success, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "alice", Outcome::success, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start, &locked));
  EXPECT_TRUE(locked);
  EXPECT_FALSE(throttle.allowed("10.0.0.1", start));
}

TEST(LoginThrottle, ASuccessClearsItsUsernamesFailures) {
  LoginThrottle throttle(3, 10s);
  const Instant start{};
  bool locked = false;
  for (int round = 0; round < 3; round++) {
    EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start, &locked));
    EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, start, &locked));
    EXPECT_FALSE(locked);
    EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::success, start));
  }
  // Failures against other usernames stay: 2 at bob, then root's success, then 1 at carol.
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "bob", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "bob", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::success, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "carol", Outcome::failure, start, &locked));
  EXPECT_TRUE(locked);
}

TEST(LoginThrottle, FailuresPastTheRememberedUsernamesAreNeverCleared) {
  LoginThrottle throttle(LoginThrottle::usernames_max + 2, 10s);
  const Instant start{};
  bool locked = false;
  for (size_t i = 0; i < LoginThrottle::usernames_max + 1; i++) {
    ASSERT_TRUE(attempt(throttle, "10.0.0.1", "user" + std::to_string(i), Outcome::failure, start));
  }
  // The last username was past the remembered ones: its own success does not clear it.
  const std::string last = "user" + std::to_string(LoginThrottle::usernames_max);
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", last, Outcome::success, start));
  EXPECT_TRUE(attempt(throttle, "10.0.0.1", "other", Outcome::failure, start, &locked));
  EXPECT_TRUE(locked);
}

TEST(LoginThrottle, AFullTableEvictsTheOldestUnlockedAddressFirst) {
  LoginThrottle throttle(2, 10s, 3);
  const Instant start{};
  bool locked = false;
  // a: locked out; b, c: one failure each, b the older.
  EXPECT_TRUE(attempt(throttle, "a", "root", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "a", "root", Outcome::failure, start, &locked));
  ASSERT_TRUE(locked);
  EXPECT_TRUE(attempt(throttle, "b", "root", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "c", "root", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "b", "root", Outcome::other, start)) << "b is now newer than c";
  EXPECT_EQ(throttle.addresses_count(), 3u);
  // d is new: c (the oldest unlocked) goes, not a's lockout, not b.
  EXPECT_TRUE(attempt(throttle, "d", "root", Outcome::failure, start));
  EXPECT_EQ(throttle.addresses_count(), 3u);
  EXPECT_FALSE(throttle.allowed("a", start)) << "the lockout survives";
  EXPECT_TRUE(attempt(throttle, "c", "root", Outcome::failure, start, &locked));
  EXPECT_FALSE(locked) << "c's failure was forgotten";
  EXPECT_TRUE(attempt(throttle, "d", "root", Outcome::failure, start, &locked));
  EXPECT_TRUE(locked) << "d was kept";
  // Now only c is unlocked (c evicted b when it came back): e evicts c and is locked out;
  // with only lockouts left, f evicts the one that ends first (a's).
  EXPECT_TRUE(attempt(throttle, "e", "root", Outcome::failure, start));
  EXPECT_TRUE(attempt(throttle, "e", "root", Outcome::failure, start, &locked));
  EXPECT_TRUE(locked);
  EXPECT_FALSE(throttle.allowed("a", start));
  EXPECT_TRUE(attempt(throttle, "f", "root", Outcome::failure, start));
  EXPECT_TRUE(throttle.allowed("a", start)) << "a's lockout, the oldest, was evicted";
  EXPECT_FALSE(throttle.allowed("d", start));
  EXPECT_FALSE(throttle.allowed("e", start));
  EXPECT_EQ(throttle.addresses_count(), 3u);
}

TEST(LoginThrottle, ZeroFailuresMaxTurnsItOff) {
  LoginThrottle throttle(0, 10s);
  for (int i = 0; i < 100; i++) {
    EXPECT_TRUE(attempt(throttle, "10.0.0.1", "root", Outcome::failure, Instant{}));
  }
  EXPECT_TRUE(throttle.allowed("10.0.0.1", Instant{}));
  EXPECT_EQ(throttle.addresses_count(), 0u);
}

TEST(HostOf, DropsThePort) {
  EXPECT_EQ(host_of("127.0.0.1:5000"), "127.0.0.1");
  EXPECT_EQ(host_of("[::1]:5000"), "::1");
  EXPECT_EQ(host_of("unix"), "unix");
}

}  // namespace
}  // namespace hark::server
