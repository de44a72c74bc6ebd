#include "hark/server/client_registry.h"

#include <algorithm>

namespace hark::server {

bool ClientRegistry::add_within(const ClientInfo& client, uint32_t limit) {
  std::lock_guard lock(mutex_);
  if (clients_.size() >= limit) return false;
  clients_.insert_or_assign(client.client_id, client);
  return true;
}

void ClientRegistry::set_user(uint32_t client_id, uint32_t user_id) {
  std::lock_guard lock(mutex_);
  const auto found = clients_.find(client_id);
  if (found != clients_.end()) found->second.user_id = user_id;
}

void ClientRegistry::set_shard(uint32_t client_id, uint32_t shard) {
  std::lock_guard lock(mutex_);
  const auto found = clients_.find(client_id);
  if (found != clients_.end()) found->second.shard = shard;
}

void ClientRegistry::remove(uint32_t client_id) {
  std::lock_guard lock(mutex_);
  clients_.erase(client_id);
}

std::optional<ClientInfo> ClientRegistry::find(uint32_t client_id) const {
  std::lock_guard lock(mutex_);
  const auto found = clients_.find(client_id);
  if (found == clients_.end()) return std::nullopt;
  return found->second;
}

std::vector<ClientInfo> ClientRegistry::list() const {
  std::vector<ClientInfo> clients;
  {
    std::lock_guard lock(mutex_);
    clients.reserve(clients_.size());
    for (const auto& [id, client] : clients_) clients.push_back(client);
  }
  std::sort(clients.begin(), clients.end(),
            [](const ClientInfo& a, const ClientInfo& b) { return a.client_id < b.client_id; });
  return clients;
}

uint32_t ClientRegistry::count() const {
  std::lock_guard lock(mutex_);
  return static_cast<uint32_t>(clients_.size());
}

std::vector<uint32_t> ClientRegistry::count_by_shard(uint32_t shards_count) const {
  std::vector<uint32_t> counts(shards_count, 0);
  std::lock_guard lock(mutex_);
  for (const auto& [id, client] : clients_) {
    if (client.shard < shards_count) counts[client.shard]++;
  }
  return counts;
}

}  // namespace hark::server
