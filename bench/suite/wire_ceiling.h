#pragma once

#include <chrono>
#include <cstddef>

namespace hark::bench {

// What loopback TCP itself carries on this machine, measured in the same run as a broker's
// throughput: the ceiling that figure is read against.

// iperf3 between two processes of its own (`iperf3 -s -1`, then `-c 127.0.0.1 -t SECONDS -l
// 128K`): MB/s received; -1 if iperf3 is not installed or failed.
double iperf3_mb_per_s(int seconds);
// The same without iperf3: one thread writes `write_size` chunks to a loopback socket for
// `duration`, another reads them; MB/s read.
double loopback_blast_mb_per_s(size_t write_size, std::chrono::milliseconds duration);
// A plain relay: a producer thread writes `count` bytes in `batch_bytes` writes to a relay
// process, which reads them and writes what it read to a consumer thread (each byte crosses
// loopback twice, as through a broker); payload MB/s as the consumer reads them. The practical
// ceiling of a broker that copies nothing and decides nothing.
// `acknowledged`: the producer sends its next batch only once the relay, having read the whole
// batch and written it to the consumer, answered it with 8 bytes, as an SDK's producer waits
// for each send's answer from a broker that wakes its consumer first: the ceiling of one
// producer that waits for each acknowledgement.
double relay_mb_per_s(size_t batch_bytes, size_t count, bool acknowledged = false);

}  // namespace hark::bench
