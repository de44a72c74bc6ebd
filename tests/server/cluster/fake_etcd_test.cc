// FakeEtcd, the in-memory etcd every deterministic cluster test stands on: revisions and
// per-key versions, transactions with each compare target, leases on a ManualClock (expiry
// deletes their keys, keep-alive renews), watches from a revision, compaction, and
// PrefixMirror's re-read after a compaction. The same semantics are checked against a real
// etcd in tests/e2e/etcd_gateway_test.cc.
#include "hark/server/cluster/fake_etcd.h"

#include <chrono>

#include <gtest/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/server/cluster/prefix_mirror.h"

namespace hark::server::cluster {
namespace {

using std::chrono::seconds;

struct FakeEtcdTest : ::testing::Test {
  ManualClock clock;
  FakeEtcd etcd{clock};
  std::unique_ptr<Coordinator> client = etcd.client();
};

TEST_F(FakeEtcdTest, RevisionsAndVersionsFollowEtcd) {
  const int64_t first = *client->put("/a", "1", 0);
  const int64_t second = *client->put("/a", "2", 0);
  EXPECT_EQ(second, first + 1);
  RangeResult read = *client->range("/a", false);
  ASSERT_EQ(read.kvs.size(), 1u);
  EXPECT_EQ(read.kvs[0].value, "2");
  EXPECT_EQ(read.kvs[0].create_revision, first);
  EXPECT_EQ(read.kvs[0].mod_revision, second);
  EXPECT_EQ(read.kvs[0].version, 2);
  EXPECT_EQ(read.revision, second);
  EXPECT_EQ(*client->erase("/a", false), second + 1);
  EXPECT_TRUE(client->range("/a", false)->kvs.empty());
  // Recreated: a new create_revision and version 1.
  const int64_t third = *client->put("/a", "3", 0);
  read = *client->range("/a", false);
  EXPECT_EQ(read.kvs[0].create_revision, third);
  EXPECT_EQ(read.kvs[0].version, 1);
}

TEST_F(FakeEtcdTest, PrefixRangeAndEraseCoverOnlyThePrefix) {
  (void)*client->put("/p/1", "a", 0);
  (void)*client->put("/p/2", "b", 0);
  (void)*client->put("/q", "c", 0);
  EXPECT_EQ(client->range("/p/", true)->kvs.size(), 2u);
  (void)*client->erase("/p/", true);
  EXPECT_TRUE(client->range("/p/", true)->kvs.empty());
  EXPECT_EQ(client->range("/q", false)->kvs.size(), 1u);
}

TEST_F(FakeEtcdTest, TxnComparesEveryTarget) {
  const int64_t created = *client->put("/k", "v", 0);
  const auto run = [&](Compare compare) {
    compare.key = "/k";
    Txn txn;
    txn.compare.push_back(compare);
    txn.failure.push_back(TxnOp::range("/k"));
    return *client->txn(txn);
  };
  using T = Compare::Target;
  using O = Compare::Op;
  EXPECT_TRUE(run({.target = T::value, .op = O::equal, .value = "v"}).succeeded);
  EXPECT_FALSE(run({.target = T::value, .op = O::equal, .value = "w"}).succeeded);
  EXPECT_TRUE(run({.target = T::create_revision, .op = O::equal, .number = created}).succeeded);
  EXPECT_TRUE(run({.target = T::mod_revision, .op = O::less, .number = created + 1}).succeeded);
  EXPECT_TRUE(run({.target = T::version, .op = O::greater, .number = 0}).succeeded);
  const TxnResult failed = run({.target = T::version, .op = O::not_equal, .number = 1});
  EXPECT_FALSE(failed.succeeded);
  ASSERT_EQ(failed.ranges.size(), 1u);
  EXPECT_EQ(failed.ranges[0].kvs.at(0).value, "v");
  // An absent key: create_revision 0, and a value compare fails.
  Txn absent;
  absent.compare.push_back({.key = "/none", .target = T::create_revision, .number = 0});
  absent.success.push_back(TxnOp::put("/none", "x"));
  EXPECT_TRUE(client->txn(absent)->succeeded);
  EXPECT_FALSE(client->txn(absent)->succeeded);  // Now it exists.
}

TEST_F(FakeEtcdTest, LeaseExpiryDeletesItsKeysAndKeepAliveRenews) {
  const Lease lease = *client->lease_grant(5);
  (void)*client->put("/node", "n", lease.id);
  clock.advance(seconds(4));
  EXPECT_EQ(*client->lease_keep_alive(lease.id), 5);
  clock.advance(seconds(4));
  EXPECT_EQ(client->range("/node", false)->kvs.size(), 1u);  // Renewed 4 s ago.
  EXPECT_EQ(*client->lease_time_to_live(lease.id), 1);
  const int64_t before = etcd.revision();
  clock.advance(seconds(1));
  EXPECT_TRUE(client->range("/node", false)->kvs.empty());
  EXPECT_EQ(client->lease_keep_alive(lease.id).error(), Error::resource_not_found);
  EXPECT_EQ(client->lease_time_to_live(lease.id).error(), Error::resource_not_found);
  const WatchBatch batch = *client->watch("/node", false, before + 1, Duration(0));
  ASSERT_EQ(batch.events.size(), 1u);
  EXPECT_EQ(batch.events[0].type, WatchEvent::Type::erase);
  // A put on a lease that is gone is refused as a whole.
  EXPECT_EQ(client->put("/node", "n", lease.id).error(), Error::resource_not_found);
}

TEST_F(FakeEtcdTest, RevokeDeletesAtOnce) {
  const Lease lease = *client->lease_grant(60);
  (void)*client->put("/a", "1", lease.id);
  ASSERT_TRUE(client->lease_revoke(lease.id).ok());
  EXPECT_TRUE(client->range("/a", false)->kvs.empty());
  EXPECT_EQ(client->lease_revoke(lease.id).error(), Error::resource_not_found);
}

TEST_F(FakeEtcdTest, WatchReplaysFromARevisionUntilCompacted) {
  const int64_t first = *client->put("/w/a", "1", 0);
  (void)*client->put("/other", "x", 0);
  (void)*client->erase("/w/a", false);
  WatchBatch batch = *client->watch("/w/", true, first, Duration(0));
  ASSERT_EQ(batch.events.size(), 2u);
  EXPECT_EQ(batch.events[0].type, WatchEvent::Type::put);
  EXPECT_EQ(batch.events[1].type, WatchEvent::Type::erase);
  EXPECT_FALSE(batch.compacted);
  etcd.compact(first + 1);
  batch = *client->watch("/w/", true, first, Duration(0));
  EXPECT_TRUE(batch.compacted);
  EXPECT_EQ(batch.compact_revision, first + 1);
}

TEST_F(FakeEtcdTest, MirrorRereadsAfterCompactionAndSeesDeletesItMissed) {
  (void)*client->put("/m/a", "1", 0);
  (void)*client->put("/m/b", "2", 0);
  PrefixMirror mirror("/m/");
  ASSERT_TRUE(*mirror.sync(*client, Duration(0)));
  EXPECT_EQ(mirror.entries().size(), 2u);
  (void)*client->erase("/m/a", false);
  (void)*client->put("/m/c", "3", 0);
  etcd.compact(etcd.revision());
  ASSERT_TRUE(*mirror.sync(*client, Duration(0)));
  EXPECT_EQ(mirror.reloads(), 2u);
  EXPECT_FALSE(mirror.entries().contains("/m/a"));
  EXPECT_TRUE(mirror.entries().contains("/m/c"));
  // And watches again from there.
  (void)*client->put("/m/d", "4", 0);
  ASSERT_TRUE(*mirror.sync(*client, Duration(0)));
  EXPECT_EQ(mirror.reloads(), 2u);
  EXPECT_EQ(mirror.entries().size(), 3u);
}

// A node's own write at the next revision goes into its mirror at once, exactly as the watch
// would bring it (so its next watch starts current); one that is not next is left to the watch.
TEST_F(FakeEtcdTest, MirrorTakesItsOwnNextWriteAsTheWatchWould) {
  (void)*client->put("/m/a", "1", 0);
  PrefixMirror mirror("/m/");
  PrefixMirror watched("/m/");
  ASSERT_TRUE(mirror.sync(*client, Duration(0)).ok());
  ASSERT_TRUE(watched.sync(*client, Duration(0)).ok());
  const std::vector<TxnOp> ops = {TxnOp::put("/m/a", "2"), TxnOp::put("/m/b", "3")};
  Txn txn;
  txn.success = ops;
  const TxnResult result = *client->txn(txn);
  EXPECT_TRUE(mirror.apply_own(ops, result.revision));
  ASSERT_TRUE(watched.sync(*client, Duration(0)).ok());
  EXPECT_EQ(mirror.entries(), watched.entries());
  EXPECT_EQ(mirror.revision(), watched.revision());
  // Someone else wrote in between: not the next revision, nothing applied.
  (void)*client->put("/m/other", "x", 0);
  const int64_t mine = *client->put("/m/a", "4", 0);
  EXPECT_FALSE(mirror.apply_own({TxnOp::put("/m/a", "4")}, mine));
  EXPECT_EQ(mirror.entries().at("/m/a").value, "2");
}

TEST_F(FakeEtcdTest, UnreachableRefusesEveryCall) {
  etcd.set_reachable(false);
  EXPECT_EQ(client->range("/a", false).error(), Error::cannot_establish_connection);
  EXPECT_EQ(client->lease_grant(5).error(), Error::cannot_establish_connection);
  etcd.set_reachable(true);
  EXPECT_TRUE(client->range("/a", false).ok());
}

TEST(PrefixEnd, IncrementsTheLastByteBelow0xff) {
  EXPECT_EQ(prefix_end("/a/"), "/a0");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff", 1)), std::string(1, '\0'));
}

}  // namespace
}  // namespace hark::server::cluster
