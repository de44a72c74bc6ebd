#include "hark/server/cluster_peer.h"

#include <array>
#include <charconv>

namespace hark::server {
namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::optional<uint16_t> parse_port(std::string_view text) {
  uint32_t port = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (port > UINT16_MAX) return std::nullopt;
  return static_cast<uint16_t>(port);
}

// Exactly N ports separated by '/'.
template <size_t N>
std::optional<std::array<uint16_t, N>> parse_ports(std::string_view text) {
  std::array<uint16_t, N> ports{};
  for (size_t i = 0; i < N; i++) {
    const size_t slash = text.find('/');
    const bool last = i + 1 == N;
    if (last != (slash == std::string_view::npos)) return std::nullopt;
    const std::optional<uint16_t> port = parse_port(last ? text : text.substr(0, slash));
    if (!port) return std::nullopt;
    ports[i] = *port;
    if (!last) text.remove_prefix(slash + 1);
  }
  return ports;
}

std::optional<ClusterPeer> parse_peer(std::string_view text) {
  const size_t at = text.find('@');
  const size_t colon = text.rfind(':');
  if (at == std::string_view::npos || at == 0 || colon == std::string_view::npos || colon < at) {
    return std::nullopt;
  }
  ClusterPeer peer;
  peer.name = std::string(text.substr(0, at));
  std::string_view ip = text.substr(at + 1, colon - at - 1);
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  if (ip.empty() || ip.find('@') != std::string_view::npos) return std::nullopt;
  peer.ip = std::string(ip);
  const auto ports = parse_ports<4>(text.substr(colon + 1));
  if (!ports) return std::nullopt;
  peer.tcp = (*ports)[0];
  peer.ports = {.quic = (*ports)[1], .http = (*ports)[2], .websocket = (*ports)[3]};
  return peer;
}

}  // namespace

std::optional<TransportPorts> parse_transport_ports(std::string_view text) {
  const auto ports = parse_ports<3>(trimmed(text));
  if (!ports) return std::nullopt;
  return TransportPorts{.quic = (*ports)[0], .http = (*ports)[1], .websocket = (*ports)[2]};
}

std::string format_transport_ports(const TransportPorts& ports) {
  return std::to_string(ports.quic) + "/" + std::to_string(ports.http) + "/" +
         std::to_string(ports.websocket);
}

std::optional<std::vector<ClusterPeer>> parse_cluster_peers(std::string_view text) {
  std::vector<ClusterPeer> peers;
  if (trimmed(text).empty()) return peers;
  while (true) {
    const size_t comma = text.find(',');
    const std::optional<ClusterPeer> peer = parse_peer(trimmed(text.substr(0, comma)));
    if (!peer) return std::nullopt;
    peers.push_back(*peer);
    if (comma == std::string_view::npos) return peers;
    text.remove_prefix(comma + 1);
  }
}

std::string format_cluster_peers(const std::vector<ClusterPeer>& peers) {
  std::string text;
  for (const ClusterPeer& peer : peers) {
    if (!text.empty()) text += ",";
    const bool v6 = peer.ip.find(':') != std::string::npos;
    text += peer.name + "@" + (v6 ? "[" + peer.ip + "]" : peer.ip) + ":" +
            std::to_string(peer.tcp) + "/" + format_transport_ports(peer.ports);
  }
  return text;
}

}  // namespace hark::server
