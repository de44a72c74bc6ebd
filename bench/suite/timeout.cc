// `timeout`: polls past the end of an empty partition with a 1, 10 and 100 ms wait, one after
// another on one connection: overshoot = answered - sent - wait, as a client sees it (one
// loopback round trip included). Each poll is followed by a plain sleep_for of the same length
// in the client, whose overshoot is the machine's own scheduling noise at the same moments.
#include <cstdio>
#include <thread>

#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {

bool run_timeout(const Options& options, Report& report) {
  HarkServer server;
  if (!server.start(options)) return false;
  const std::optional<TopicIds> topic = create_topic(server.address(), "timeout", 1);
  auto consumer = connect_hark(server.address());
  if (!topic || !consumer.ok()) return false;
  bool failed = false;
  struct Wait {
    int ms;
    int count;
  };
  const Wait waits[] = {
      {1, options.smoke ? 5 : 1000}, {10, options.smoke ? 5 : 300}, {100, options.smoke ? 3 : 60}};
  for (const Wait& wait : waits) {
    const auto length = std::chrono::milliseconds(wait.ms);
    const double wait_us = wait.ms * 1000.0;
    const protocol::PollMessagesRequest request = poll_request(
        *topic, 0, {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(2)},
        {protocol::PollingKind::offset, 1'000'000'000'000},  // Far past the end.
        1, static_cast<uint64_t>(wait_us), false);
    std::vector<double> overshoot;
    std::vector<double> sleep_overshoot;
    for (int i = 0; i < wait.count && !failed; i++) {
      const auto sent = SteadyClock::now();
      const Result<client::PolledMessages> polled = (*consumer)->poll_messages(request);
      const auto answered = SteadyClock::now();
      if (!polled.ok() || polled->messages().count() != 0) {
        std::fprintf(stderr, "timeout: the poll did not time out empty\n");
        failed = true;
        break;
      }
      overshoot.push_back(micros_between(sent, answered) - wait_us);
      const auto slept = SteadyClock::now();
      std::this_thread::sleep_for(length);
      sleep_overshoot.push_back(micros_between(slept, SteadyClock::now()) - wait_us);
    }
    const std::string ms = std::to_string(wait.ms) + " ms";
    report.add({.name = "poll wait " + ms + ": overshoot",
                .samples_us = without_warmup(std::move(overshoot)),
                .notes = "answered - sent - wait, client side (one round trip included)"});
    report.add({.system = "client",
                .name = "sleep_for(" + ms + ") overshoot",
                .samples_us = without_warmup(std::move(sleep_overshoot)),
                .notes = "this machine's scheduling noise, same moments"});
  }
  return server.stop() && !failed;
}

}  // namespace hark::bench
