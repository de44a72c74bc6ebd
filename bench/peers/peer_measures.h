#pragma once

#include <chrono>
#include <string>

#include <sys/types.h>

#include "hark/bench/suite/net.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {

// The `peers` scenario's measurements of Redis Streams and NATS JetStream, shaped like hark's
// (scenarios.h) so the rows compare: the same gap, K, sizes, batches and message stamps.
// `pid` is the peer server's, for its CPU.
//
// Redis: XADD KEY * s PAYLOAD; consumers XREAD BLOCK on the last id they saw (fan-out: K
// connections; throughput: pipelined XADDs, XREAD COUNT 1000).
WakeResult redis_wake(const std::string& address, pid_t pid, int count,
                      std::chrono::microseconds gap);
FanoutResult redis_fanout(const std::string& address, pid_t pid, size_t consumers, int rounds,
                          size_t threads);
ThroughputResult redis_throughput(const std::string& address, pid_t pid, size_t size, size_t count,
                                  size_t batch);

// NATS JetStream: a file-backed stream; publishes with a reply subject (acked by the stream);
// durable pull consumers (ack policy all) pulling with MSG.NEXT {"batch":N,"expires":ns} and
// acking what they got (fan-out: K consumers, each its own durable on its own connection).
WakeResult nats_wake(const std::string& address, pid_t pid, int count,
                     std::chrono::microseconds gap);
// `threads` is ignored: one loop reads every consumer (it answers PINGs on the same links).
FanoutResult nats_fanout(const std::string& address, pid_t pid, size_t consumers, int rounds,
                         size_t threads);
ThroughputResult nats_throughput(const std::string& address, pid_t pid, size_t size, size_t count,
                                 size_t batch);

// A payload of `size` bytes (at least 8) starting with the send time, and that time back.
std::string stamped_payload(size_t size);
SteadyClock::time_point stamp_of(const std::string& payload);

// NATS: creates a stream NAME on subject NAME and `consumers` durables c0, c1, ... on it
// through `admin`; reads `count` pending publish acks of `producer` (false on an error ack).
class NatsClient;
bool nats_set_up(NatsClient& admin, const std::string& name, size_t consumers);
bool nats_read_acks(NatsClient& producer, size_t count);

}  // namespace hark::bench
