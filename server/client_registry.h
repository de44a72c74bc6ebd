#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

namespace hark::server {

// What harkd reports about one client connection (Iggy's get_me, get_client, get_clients).
struct ClientInfo {
  uint32_t client_id = 0;
  uint32_t user_id = UINT32_MAX;  // UINT32_MAX before login, as Iggy 0.8.0.
  uint32_t shard = 0;
  std::string address;  // The peer, "ip:port".
};

// Every open client connection of the process, over all shards: each shard publishes its
// connections here when they open, log in or out, and close, and get_client(s) read it from any
// shard. Control plane: one mutex, taken on connect, login, logout, close and the reads, never
// per request on the data path (sends, polls, offsets). Owned by the Server; thread-safe.
class ClientRegistry {
 public:
  ClientRegistry() = default;
  ClientRegistry(const ClientRegistry&) = delete;
  ClientRegistry& operator=(const ClientRegistry&) = delete;

  // Adds `client` unless `limit` clients are listed already: false then.
  [[nodiscard]] bool add_within(const ClientInfo& client, uint32_t limit);
  void set_user(uint32_t client_id, uint32_t user_id);
  void set_shard(uint32_t client_id, uint32_t shard);
  void remove(uint32_t client_id);

  std::optional<ClientInfo> find(uint32_t client_id) const;
  // Every client, by id.
  std::vector<ClientInfo> list() const;
  uint32_t count() const;
  // How many clients each of `shards_count` shards serves.
  std::vector<uint32_t> count_by_shard(uint32_t shards_count) const;

 private:
  mutable std::mutex mutex_;
  absl::flat_hash_map<uint32_t, ClientInfo> clients_;
};

}  // namespace hark::server
