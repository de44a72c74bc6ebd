#pragma once

#include "hark/core/base/units.h"
#include "hark/io/reactor.h"
#include "hark/server/connection.h"

namespace hark::server {

struct ServerShared;

// A client connection on its way to another shard (docs/architecture.md §6, Migration).
//
// Between two requests, a connection whose one partition is owned by another shard stops
// receiving where it is (its multishot recv cancelled and completed), and its state — the
// socket, who the client is, bytes it already sent ahead — travels as this task to the
// owner shard, whose ShardServer adopts it and receives again. The socket is a plain fd,
// valid on every thread of the process, so nothing is re-registered; bytes the client sends
// meanwhile wait in the socket's receive queue. Owns the socket until adopted: a migration
// whose target is shutting down closes it (the client is told nothing more, as every other
// connection at shutdown).
//
// Posted with Reactor::post(): a shard only migrates before its own on_stop, so the target
// runs the task before its reactor goes (io::ShardGroup drains every inbox first).
class Migration final : public io::Task {
 public:
  Migration(ServerShared& shared, ShardId target, ConnectionState moving)
      : state(std::move(moving)), shared_(shared), target_(target) {}
  ~Migration();
  Migration(const Migration&) = delete;
  Migration& operator=(const Migration&) = delete;

  // On the target shard.
  void run() override;

  ConnectionState state;

 private:
  ServerShared& shared_;
  ShardId target_;
};

}  // namespace hark::server
