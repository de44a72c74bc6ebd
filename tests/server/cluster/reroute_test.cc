// The entry node's decision for a request no node ran (cluster::reroute, server/cluster/
// cluster_view.h; docs/cluster.md §Moves): on a view whose assignment moved from the node that
// refused it to another live node, a poll and a send are routed there; a poll whose view still
// names the refusing node, or no live owner, waits (never an error); a send is routed again at
// most once, else answered 11001; a poll that found no owner is routed once one is assigned,
// this node included. Label unit.
#include <gtest/gtest.h>

#include "hark/server/cluster/cluster_view.h"

namespace hark::server::cluster {
namespace {

const core::PartitionKey key{
    .stream = StreamId(1), .topic = TopicId(2), .partition = PartitionId(3)};

// Node 3's view of nodes `live`, with `key` assigned to `owner` (0: unassigned).
ClusterView view_of(std::vector<uint32_t> live, uint32_t owner) {
  ClusterView view;
  view.self = 3;
  for (const uint32_t id : live) view.nodes.push_back({.id = id});
  if (owner != 0) view.assignments[key] = {.node = owner, .epoch = 2};
  return view;
}

constexpr bool waits = true;
constexpr bool sends = false;

TEST(Reroute, AMovedPartitionIsFollowedToItsNewOwner) {
  const ClusterView moved = view_of({1, 2, 3}, 2);  // Node 1 refused: the view names node 2.
  EXPECT_EQ(reroute(moved, key, 1, waits, 0), Reroute::now);
  EXPECT_EQ(reroute(moved, key, 1, waits, 5), Reroute::now);  // A poll has no hop limit.
  EXPECT_EQ(reroute(moved, key, 1, sends, 0), Reroute::now);
  // This node refused its own local request and the view names another.
  EXPECT_EQ(reroute(moved, key, 3, waits, 0), Reroute::now);
}

TEST(Reroute, AViewThatStillNamesTheRefusingNodeMakesAPollWaitAndASendFail) {
  const ClusterView lagging = view_of({1, 2, 3}, 1);
  EXPECT_EQ(reroute(lagging, key, 1, waits, 0), Reroute::wait);
  EXPECT_EQ(reroute(lagging, key, 1, sends, 0), Reroute::give_up);
}

TEST(Reroute, ASendIsRoutedAgainAtMostOnce) {
  const ClusterView moved = view_of({1, 2, 3}, 2);
  EXPECT_EQ(reroute(moved, key, 1, sends, reroutes_max - 1), Reroute::now);
  EXPECT_EQ(reroute(moved, key, 1, sends, reroutes_max), Reroute::give_up);
}

TEST(Reroute, NoLiveOwnerMakesAPollWaitUntilAViewNamesOne) {
  // The new owner is not live (yet), or nothing is assigned.
  EXPECT_EQ(reroute(view_of({1, 3}, 2), key, 1, waits, 0), Reroute::wait);
  EXPECT_EQ(reroute(view_of({1, 2, 3}, 0), key, 0, waits, 0), Reroute::wait);
  EXPECT_EQ(reroute(view_of({1, 3}, 2), key, 1, sends, 0), Reroute::give_up);
  // Found no owner (refused by nobody): any live owner, this node too, takes it.
  EXPECT_EQ(reroute(view_of({1, 2, 3}, 2), key, 0, waits, 0), Reroute::now);
  EXPECT_EQ(reroute(view_of({1, 2, 3}, 3), key, 0, waits, 0), Reroute::now);
}

}  // namespace
}  // namespace hark::server::cluster
