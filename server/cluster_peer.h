#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hark::server {

// The ports get_cluster_metadata reports for a node's transports other than TCP. harkd serves
// TCP only: these are numbers an operator configures for clients that expect Iggy's layout.
struct TransportPorts {
  uint16_t quic = 0;
  uint16_t http = 0;
  uint16_t websocket = 0;
  bool operator==(const TransportPorts&) const = default;
};

// Another node get_cluster_metadata reports (config key cluster.others), as one of Iggy
// 0.8.0's [[cluster.node.others]]: reported as a healthy follower. Metadata only: harkd neither
// talks to it nor replicates anything.
struct ClusterPeer {
  std::string name;
  std::string ip;
  uint16_t tcp = 0;
  TransportPorts ports;
  bool operator==(const ClusterPeer&) const = default;
};

// "QUIC/HTTP/WEBSOCKET", e.g. "8080/3000/8092" (each 0..65535); nullopt if malformed.
std::optional<TransportPorts> parse_transport_ports(std::string_view text);
std::string format_transport_ports(const TransportPorts& ports);

// Comma-separated "NAME@IP:TCP/QUIC/HTTP/WEBSOCKET" (an IPv6 ip in brackets, stored without
// them), e.g. "iggy-node-2@127.0.0.1:8091/8081/3001/8093"; "" is no peers. nullopt if any
// entry is malformed (empty name or ip, not exactly four ports, a port above 65535).
std::optional<std::vector<ClusterPeer>> parse_cluster_peers(std::string_view text);
// The inverse: parse_cluster_peers(format_cluster_peers(peers)) == peers.
std::string format_cluster_peers(const std::vector<ClusterPeer>& peers);

}  // namespace hark::server
