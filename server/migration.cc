#include "hark/server/migration.h"

#include <unistd.h>

#include <memory>

#include "hark/core/base/assert.h"
#include "hark/server/shard_server.h"

namespace hark::server {

Migration::~Migration() {
  if (state.fd >= 0) ::close(state.fd);
}

void Migration::run() {
  ShardServer* const target = shared_.shards[target_.value()];
  HARK_ASSERT(target != nullptr);  // Every shard's server exists before any loop runs.
  target->adopt(std::unique_ptr<Migration>(this));
}

}  // namespace hark::server
