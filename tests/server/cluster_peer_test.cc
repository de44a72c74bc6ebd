// Covers the cluster.others and cluster.node_ports syntax (server/cluster_peer.h): IPv4 and
// bracketed IPv6 peers, spaces around entries, "" as no peers, what is refused, and that
// formatting reads back to the same peers.
#include "hark/server/cluster_peer.h"

#include <gtest/gtest.h>

namespace hark::server {
namespace {

TEST(ClusterPeers, ParseNamesIpsAndFourPorts) {
  const auto peers = parse_cluster_peers(" a@10.0.0.2:1/2/3/4 , b@[fe80::1]:65535/0/3001/8093");
  ASSERT_TRUE(peers.has_value());
  ASSERT_EQ(peers->size(), 2u);
  EXPECT_EQ((*peers)[0], (ClusterPeer{.name = "a",
                                      .ip = "10.0.0.2",
                                      .tcp = 1,
                                      .ports = {.quic = 2, .http = 3, .websocket = 4}}));
  EXPECT_EQ((*peers)[1].ip, "fe80::1");
  EXPECT_EQ((*peers)[1].tcp, 65535u);
  EXPECT_EQ(format_cluster_peers(*peers), "a@10.0.0.2:1/2/3/4,b@[fe80::1]:65535/0/3001/8093");
  EXPECT_EQ(parse_cluster_peers(format_cluster_peers(*peers)), peers);
  EXPECT_EQ(parse_cluster_peers(""), std::optional<std::vector<ClusterPeer>>(std::in_place));
  EXPECT_EQ(format_cluster_peers({}), "");
}

TEST(ClusterPeers, MalformedEntriesAreRefused) {
  for (const char* text : {"a@10.0.0.2", "a@10.0.0.2:1/2/3", "a@10.0.0.2:1/2/3/4/5",
                           "a@10.0.0.2:1/2/3/65536", "a@10.0.0.2:1//3/4", "a@10.0.0.2:x/2/3/4",
                           "@10.0.0.2:1/2/3/4", "a@:1/2/3/4", "a@[]:1/2/3/4", "a:1/2/3/4",
                           "a@b@c:1/2/3/4", "a@10.0.0.2:1/2/3/4,", ",a@10.0.0.2:1/2/3/4"}) {
    EXPECT_FALSE(parse_cluster_peers(text).has_value()) << text;
  }
}

TEST(TransportPorts, ParseExactlyThree) {
  EXPECT_EQ(parse_transport_ports("8080/3000/8092"),
            (TransportPorts{.quic = 8080, .http = 3000, .websocket = 8092}));
  EXPECT_EQ(format_transport_ports({.quic = 1, .http = 2, .websocket = 3}), "1/2/3");
  for (const char* text : {"", "8080/3000", "8080/3000/8092/1", "8080/3000/-1", "a/b/c"}) {
    EXPECT_FALSE(parse_transport_ports(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace hark::server
