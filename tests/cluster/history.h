#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hark::test {

// The record of a fault test's client operations, Jepsen style (tests/cluster/
// replication_faults_test.cc): every send and poll with when it was invoked and completed and
// what came back, then the final read of each partition, and check(), which lists every
// violation of what replication promises (docs/cluster.md §Replication: the controller side,
// §The decision): an acknowledged send is stored exactly once, a log is dense and holds each
// payload at one offset, no poll is answered with a message a quorum did not commit (an
// "unstable read": everything any poll returned must be, at the end, in the final read at the
// same offset, the final read coming from a leader whose whole replica set is in sync), and
// every poll is answered, by its deadline. Sends carry a payload unique to the attempt, so a
// payload names its send.
//
// Thread-safe: the test's clients record from their own threads; check() runs once they
// ended. Control plane: allocates freely.
class History {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Outcome : uint8_t {
    pending,    // Invoked, not completed.
    ok,         // Acknowledged (a send) or answered with messages, maybe none (a poll).
    error,      // The server answered with an error code: nothing was acknowledged.
    lost,       // The connection failed (closed, reset, refused): the outcome is unknown.
    timed_out,  // The client gave up waiting for an answer: the outcome is unknown.
  };

  struct Message {
    uint64_t offset = 0;
    std::string payload;
    bool operator==(const Message&) const = default;
  };

  struct Send {
    uint32_t process = 0;  // The client thread that sent it.
    uint32_t node = 0;     // The node it went through.
    uint32_t partition = 0;
    std::string payload;
    Clock::time_point invoked;
    Clock::time_point completed;
    Outcome outcome = Outcome::pending;
    uint32_t code = 0;  // The server's error code, or the client's for lost / timed_out.
    int completions = 0;
  };

  struct Poll {
    uint32_t process = 0;
    uint32_t node = 0;
    uint32_t partition = 0;
    uint64_t from = 0;
    std::chrono::milliseconds wait{0};
    Clock::time_point invoked;
    Clock::time_point completed;
    Outcome outcome = Outcome::pending;
    uint32_t code = 0;
    std::vector<Message> messages;
    int completions = 0;
  };

  struct Summary {
    size_t sends = 0;
    size_t acknowledged = 0;
    size_t lost = 0;        // Acknowledged, not in the final read of their partition.
    size_t duplicates = 0;  // Payloads stored more than once in a final read.
    size_t polls = 0;
    size_t polled_messages = 0;
  };

  explicit History(Clock::time_point start = Clock::now()) : start_(start) {}

  // Returns the operation's id for complete_*(). `when` is now, but for synthetic histories.
  size_t invoke_send(uint32_t process, uint32_t node, uint32_t partition, std::string payload,
                     Clock::time_point when = Clock::now());
  void complete_send(size_t id, Outcome outcome, uint32_t code = 0,
                     Clock::time_point when = Clock::now());
  size_t invoke_poll(uint32_t process, uint32_t node, uint32_t partition, uint64_t from,
                     std::chrono::milliseconds wait, Clock::time_point when = Clock::now());
  void complete_poll(size_t id, Outcome outcome, uint32_t code = 0,
                     std::vector<Message> messages = {}, Clock::time_point when = Clock::now());
  // The node was paused (SIGSTOP) from `from` to `to`: nothing it had to answer could be
  // answered meanwhile, so a poll's deadline stretches by the pause it overlapped.
  void pause(uint32_t node, Clock::time_point from, Clock::time_point to);
  // The partition read whole from its leader once the faults are over (offsets 0..end).
  void final_read(uint32_t partition, std::vector<Message> messages);

  // Every violation, one line each (empty: the history passes); the first 20 that concern a
  // payload go on with its excerpt(). `slack` is how late past its wait (and the pauses it
  // overlapped) a poll may be answered.
  std::vector<std::string> check(std::chrono::milliseconds slack) const;
  Summary summary() const;
  // Every operation that sent or returned `payload`, one line each: the excerpt a violation
  // report quotes.
  std::string excerpt(const std::string& payload) const;

 private:
  std::string since_start(Clock::time_point time) const;
  std::string describe(const Send& send) const;
  std::string describe(const Poll& poll) const;
  // How long the pauses overlapping [from, to] lasted in all.
  Clock::duration paused_within(Clock::time_point from, Clock::time_point to) const;
  // Violations as found: each line, and the payload whose history it should quote, if any.
  struct Found {
    std::vector<std::pair<std::string, std::string>> items;
    void push_back(std::string text, std::string payload = "") {
      items.emplace_back(std::move(text), std::move(payload));
    }
  };
  void check_final_reads(Found& violations) const;
  void check_sends(Found& violations) const;
  void check_polls(std::chrono::milliseconds slack, Found& violations) const;
  std::string excerpt_locked(const std::string& payload) const;

  struct Pause {
    uint32_t node = 0;
    Clock::time_point from;
    Clock::time_point to;
  };

  const Clock::time_point start_;
  mutable std::mutex mutex_;  // Guards what follows.
  std::vector<Send> sends_;
  std::vector<Poll> polls_;
  std::vector<Pause> pauses_;
  std::map<uint32_t, std::vector<Message>> final_;  // By partition.
};

const char* outcome_name(History::Outcome outcome);

}  // namespace hark::test
