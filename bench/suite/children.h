#pragma once

#include <sys/types.h>

namespace hark::bench {

// The servers hark-bench started (harkd, redis-server, nats-server), so that SIGINT, SIGTERM
// or SIGHUP kills them by PID at once. The measurement in progress then fails on its closed
// connections and unwinds, so the owners' destructors reap the children and remove their
// temporary directories; hark-bench stops after that scenario (interrupted()). A second signal,
// or 20 s without unwinding, ends the process outright. Each child also has PR_SET_PDEATHSIG.
// Up to 16 at once.
void install_child_cleanup();
bool interrupted();
void register_child(pid_t pid);
void unregister_child(pid_t pid);

// The first steps of every child hark-bench forks, before it redirects and execs: it dies with
// `parent` (PR_SET_PDEATHSIG; _exit(127) if the parent is already gone) and starts with no
// signal blocked. Only async-signal-safe calls, as a forked child may make.
void prepare_child(pid_t parent);

}  // namespace hark::bench
