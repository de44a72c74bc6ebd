#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hark/core/base/result.h"

namespace hark::storage {

// What a replicated partition keeps of its place in the leader epochs (docs/cluster.md
// §Replication, Truncation): <partition directory>/replica.state, one fixed 40-byte record
// ([magic "HARKRS01"][epoch u64][epoch start u64][commit u64][XXH64 of the 32 bytes before],
// little-endian) written over in place.
// - `epoch`: the last leader epoch this log holds a prefix of: the one it led, or the one whose
//   leader it truncated for and copies from. Written and fdatasynced before the log takes
//   anything of a new epoch, whatever the durability mode (as Raft's term).
// - `epoch_start`: as a leader of `epoch`, its log's end when it took the epoch: a follower
//   that held a prefix of the previous epoch's log cuts there.
// - `commit`: a commit point it knew, so a lower bound of what is committed (written without a
//   sync between epoch changes: a stale one only makes a catch-up copy more).
struct ReplicaState {
  uint64_t epoch = 0;
  uint64_t epoch_start = 0;
  uint64_t commit = 0;
  bool operator==(const ReplicaState&) const = default;
};

inline constexpr const char* replica_state_file = "replica.state";

// The state in `directory`; nullopt when there is none, or a damaged one (logged): the caller
// then knows nothing, the safe answer.
std::optional<ReplicaState> load_replica_state(const std::string& directory);
// Writes the state over the old one; with `sync`, fdatasynced before it returns. Blocking
// (control plane: at epoch changes, and a commit checkpoint per fetch answer at most).
// Errors: cannot_write_to_file, cannot_sync_file.
Status store_replica_state(const std::string& directory, const ReplicaState& state, bool sync);

}  // namespace hark::storage
