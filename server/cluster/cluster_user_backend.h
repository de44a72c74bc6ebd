#pragma once

#include <atomic>
#include <cstddef>
#include <span>
#include <string>

#include "hark/core/broker/broker.h"
#include "hark/core/broker/metadata_journal.h"
#include "hark/server/users/user_backend.h"

namespace hark::server::cluster {

// The users of a cluster (docs/cluster.md §Metadata): each UserChange is one entry of the
// metadata journal (a core::JournalExtension), so users, passwords (hashes), permissions and
// tokens (hashes) are ordered with the catalog's entries, written to etcd with the same
// guarded transaction, applied on every node in that order (core::JournalExtensions) and kept
// in each node's metadata.log as its cache. A change is answered as any metadata command:
// once every live node has applied it (read-your-writes). Refused with feature_unavailable
// while etcd cannot be reached.
//
// A change is checked against the table it was planned on: when another writer's change was
// applied first (on this node or, through the journal, on another), persist() answers stale
// and UserStore plans again, so two nodes bootstrapping root on an empty cluster make one.
//
// Thread-safety: persist() on AuthPool threads (one at a time, UserStore's write lock) blocks
// until shard 0 answers; applied() on shard 0 (at start: the thread calling Broker::start).
class ClusterUserBackend final : public UserBackend, public core::JournalExtensions {
 public:
  // The first byte of the journal's extension records that hold a UserChange.
  static constexpr std::byte record_tag{1};

  // No user: they come from the journal, metadata.log's at Broker::start, then etcd's.
  Result<Ref<UserTable>> load(UserPublisher& publisher) override;
  // Errors: feature_unavailable before attach() or when etcd cannot be reached, the journal's.
  Result<Persisted> persist(const UserChange& change, uint64_t base_version) override;
  std::string where() const override { return "the cluster's metadata journal"; }
  // A journal entry's extension record: a UserChange is published; another tag is logged.
  void applied(std::span<const std::byte> record) override;
  // The published users as records (changes_rebuilding), for a snapshot of the journal.
  void snapshot(std::vector<std::vector<std::byte>>& records) const override;

  // The broker whose journal keeps the changes; once it started, before any persist().
  void attach(core::Broker& broker) { broker_.store(&broker, std::memory_order_release); }

 private:
  UserPublisher* publisher_ = nullptr;
  std::atomic<core::Broker*> broker_{nullptr};
};

}  // namespace hark::server::cluster
