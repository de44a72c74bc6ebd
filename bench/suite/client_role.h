#pragma once

namespace hark::bench {

// `hark-bench client-role ...`: one client process of the processes mode of `wake` and `peers`
// (client_processes.h), which hark-bench runs as its own child. One thread, one blocking socket,
// the same shape for every system:
//
//   --role producer: after "go" on stdin, `count` times: sleep `--gap-us`, stamp the monotonic
//     clock into an 8-byte payload, send one message, wait for the server's acknowledgement.
//   --role consumer: parks for message i = 0, 1, ... (hark: PollMessages at offset i, count 1,
//     wait 5 s; Redis: XREAD COUNT 1 BLOCK 5000 from the last id; NATS: a JetStream pull of
//     batch 1 expiring in 5 s, then +ACK); latency = the reply parsed - the stamp (CLOCK_MONOTONIC
//     is system-wide, so the two processes share it).
//
// Both print "ready" once connected (and logged in), then, after their loop, their results on
// stdout (the consumer: one latency in µs per line, "empty N", then "switches N"; the producer:
// "switches N", its own context switches over the loop), and keep their connection open until
// stdin closes, so that closing it falls outside the parent's measured window. The exit status
// is 0 when every message was sent or received.
int run_client_role(int argc, char** argv);

}  // namespace hark::bench
