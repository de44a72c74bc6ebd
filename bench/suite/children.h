#pragma once

#include <sys/types.h>

namespace hark::bench {

// The servers hark-bench started (harkd, redis-server, nats-server), so that SIGINT, SIGTERM
// or SIGHUP kills them by PID before hark-bench dies (their owners' destructors stop them on
// every other path, and each child also has PR_SET_PDEATHSIG). Up to 16 at once.
void install_child_cleanup();
void register_child(pid_t pid);
void unregister_child(pid_t pid);

}  // namespace hark::bench
