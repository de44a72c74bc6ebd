#include "history.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

namespace hark::test {

const char* outcome_name(History::Outcome outcome) {
  switch (outcome) {
    case History::Outcome::pending: return "pending";
    case History::Outcome::ok: return "ok";
    case History::Outcome::error: return "error";
    case History::Outcome::lost: return "connection lost";
    case History::Outcome::timed_out: return "timed out";
  }
  return "?";
}

size_t History::invoke_send(uint32_t process, uint32_t node, uint32_t partition,
                            std::string payload, Clock::time_point when) {
  std::lock_guard lock(mutex_);
  sends_.push_back({.process = process,
                    .node = node,
                    .partition = partition,
                    .payload = std::move(payload),
                    .invoked = when});
  return sends_.size() - 1;
}

void History::complete_send(size_t id, Outcome outcome, uint32_t code, Clock::time_point when) {
  std::lock_guard lock(mutex_);
  Send& send = sends_.at(id);
  send.completed = when;
  send.outcome = outcome;
  send.code = code;
  send.completions++;
}

size_t History::invoke_poll(uint32_t process, uint32_t node, uint32_t partition, uint64_t from,
                            std::chrono::milliseconds wait, Clock::time_point when) {
  std::lock_guard lock(mutex_);
  polls_.push_back({.process = process,
                    .node = node,
                    .partition = partition,
                    .from = from,
                    .wait = wait,
                    .invoked = when});
  return polls_.size() - 1;
}

void History::complete_poll(size_t id, Outcome outcome, uint32_t code,
                            std::vector<Message> messages, Clock::time_point when) {
  std::lock_guard lock(mutex_);
  Poll& poll = polls_.at(id);
  poll.completed = when;
  poll.outcome = outcome;
  poll.code = code;
  poll.messages = std::move(messages);
  poll.completions++;
}

void History::pause(uint32_t node, Clock::time_point from, Clock::time_point to) {
  std::lock_guard lock(mutex_);
  pauses_.push_back({.node = node, .from = from, .to = to});
}

void History::final_read(uint32_t partition, std::vector<Message> messages) {
  std::lock_guard lock(mutex_);
  final_[partition] = std::move(messages);
}

std::string History::since_start(Clock::time_point time) const {
  if (time == Clock::time_point()) return "never";
  char text[32];
  std::snprintf(text, sizeof text, "+%.3fs", std::chrono::duration<double>(time - start_).count());
  return text;
}

std::string History::describe(const Send& send) const {
  std::string text = "send " + send.payload + " to partition " + std::to_string(send.partition) +
                     " by client " + std::to_string(send.process) + " via node " +
                     std::to_string(send.node) + ", invoked " + since_start(send.invoked) +
                     ", completed " + since_start(send.completed) + ": " +
                     outcome_name(send.outcome);
  if (send.code != 0) text += " " + std::to_string(send.code);
  return text;
}

std::string History::describe(const Poll& poll) const {
  std::string text = "poll of partition " + std::to_string(poll.partition) + " from " +
                     std::to_string(poll.from) + " (wait " + std::to_string(poll.wait.count()) +
                     " ms) by client " + std::to_string(poll.process) + " via node " +
                     std::to_string(poll.node) + ", invoked " + since_start(poll.invoked) +
                     ", completed " + since_start(poll.completed) + ": " +
                     outcome_name(poll.outcome);
  if (poll.code != 0) text += " " + std::to_string(poll.code);
  if (poll.outcome == Outcome::ok) {
    text += ", " + std::to_string(poll.messages.size()) + " messages";
    if (!poll.messages.empty()) {
      text += " at " + std::to_string(poll.messages.front().offset) + ".." +
              std::to_string(poll.messages.back().offset);
    }
  }
  return text;
}

History::Clock::duration History::paused_within(Clock::time_point from,
                                                Clock::time_point to) const {
  // Any node's pause counts: a poll through one node may wait on the paused leader.
  Clock::duration total{0};
  for (const Pause& pause : pauses_) {
    const Clock::time_point begin = std::max(from, pause.from);
    const Clock::time_point end = std::min(to, pause.to);
    if (end > begin) total += end - begin;
  }
  return total;
}

std::vector<std::string> History::check(std::chrono::milliseconds slack) const {
  std::lock_guard lock(mutex_);
  Found found;
  check_final_reads(found);
  check_sends(found);
  check_polls(slack, found);
  // The first few quote the history of their payload (more would be quadratic and unread).
  constexpr size_t quoted = 20;
  std::vector<std::string> violations;
  for (auto& [text, payload] : found.items) {
    if (!payload.empty() && violations.size() < quoted) text += "\n" + excerpt_locked(payload);
    violations.push_back(std::move(text));
  }
  return violations;
}

void History::check_final_reads(Found& violations) const {
  std::set<std::string> sent;
  for (const Send& send : sends_) sent.insert(send.payload);
  // Where each payload is stored, over every partition.
  std::map<std::string, std::vector<std::pair<uint32_t, uint64_t>>> stored;
  for (const auto& [partition, messages] : final_) {
    for (size_t i = 0; i < messages.size(); i++) {
      const Message& message = messages[i];
      if (message.offset != i) {
        violations.push_back("gap: the final read of partition " + std::to_string(partition) +
                             " has offset " + std::to_string(message.offset) + " at position " +
                             std::to_string(i) + " (offsets are not dense)");
      }
      stored[message.payload].emplace_back(partition, message.offset);
      if (!sent.contains(message.payload)) {
        violations.push_back("phantom: " + message.payload + " is stored in partition " +
                                 std::to_string(partition) + " at offset " +
                                 std::to_string(message.offset) + " but no client sent it",
                             message.payload);
      }
    }
  }
  for (const auto& [payload, places] : stored) {
    if (places.size() < 2) continue;
    std::string where;
    for (const auto& [partition, offset] : places) {
      where += " " + std::to_string(partition) + "@" + std::to_string(offset);
    }
    violations.push_back("duplicate: " + payload + " is stored " + std::to_string(places.size()) +
                             " times (partition@offset:" + where + ")",
                         payload);
  }
}

void History::check_sends(Found& violations) const {
  std::map<std::string, size_t> attempts;
  for (const Send& send : sends_) {
    if (attempts[send.payload]++ == 1) {
      violations.push_back("reused payload: " + send.payload +
                           " was sent by more than one attempt (the test's own bug)");
    }
    if (send.completions != 1) {
      violations.push_back("unanswered send: " + describe(send) + " completed " +
                           std::to_string(send.completions) + " times");
      continue;
    }
    if (send.outcome != Outcome::ok) continue;  // May be stored once or not at all.
    size_t here = 0;
    std::string elsewhere;
    for (const auto& [partition, messages] : final_) {
      for (const Message& message : messages) {
        if (message.payload != send.payload) continue;
        if (partition == send.partition) {
          here++;
        } else {
          elsewhere += " " + std::to_string(partition) + "@" + std::to_string(message.offset);
        }
      }
    }
    if (here == 0) {
      violations.push_back(
          "lost: " + describe(send) + "; not in the final read of partition " +
              std::to_string(send.partition) +
              (final_.contains(send.partition) ? "" : " (never read)") +
              (elsewhere.empty() ? "" : ", stored in partition@offset:" + elsewhere),
          send.payload);
    } else if (!elsewhere.empty()) {
      violations.push_back(
          "misplaced: " + describe(send) + "; also stored in partition@offset:" + elsewhere,
          send.payload);
    }
  }
}

void History::check_polls(std::chrono::milliseconds slack, Found& violations) const {
  // Each final read by offset (it may have gaps, reported on their own).
  std::map<uint32_t, std::map<uint64_t, const std::string*>> final_by_offset;
  for (const auto& [partition, messages] : final_) {
    for (const Message& message : messages) {
      final_by_offset[partition].emplace(message.offset, &message.payload);
    }
  }
  for (const Poll& poll : polls_) {
    if (poll.completions != 1) {
      violations.push_back("unanswered poll: " + describe(poll) + " completed " +
                           std::to_string(poll.completions) + " times");
      continue;
    }
    const Clock::duration took = poll.completed - poll.invoked;
    const Clock::duration allowed = poll.wait + slack + paused_within(poll.invoked, poll.completed);
    const auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    const auto allowed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(allowed).count();
    // A client that gave up before the allowance tells nothing: the server might still have
    // answered in time. One that gave up after it waited in vain.
    if (poll.outcome == Outcome::timed_out ? took >= allowed : took > allowed) {
      violations.push_back("late poll: " + describe(poll) + "; took " + std::to_string(took_ms) +
                           " ms, allowed " + std::to_string(allowed_ms) + " ms");
    }
    if (poll.outcome != Outcome::ok) continue;
    const std::map<uint64_t, const std::string*>& stored = final_by_offset[poll.partition];
    for (size_t i = 0; i < poll.messages.size(); i++) {
      const Message& message = poll.messages[i];
      if (message.offset != poll.from + i) {
        violations.push_back("gap: " + describe(poll) + " returned offset " +
                             std::to_string(message.offset) + " at position " + std::to_string(i));
      }
      const auto there = stored.find(message.offset);
      if (there != stored.end() && *there->second == message.payload) continue;
      const std::string now = there == stored.end() ? "nothing" : *there->second;
      violations.push_back("unstable read: " + describe(poll) + " returned " + message.payload +
                               " at offset " + std::to_string(message.offset) +
                               ", where the final read has " + now,
                           message.payload);
    }
  }
}

History::Summary History::summary() const {
  std::lock_guard lock(mutex_);
  Summary summary;
  std::map<std::string, size_t> copies;
  std::map<std::pair<uint32_t, std::string>, size_t> in_partition;
  for (const auto& [partition, messages] : final_) {
    for (const Message& message : messages) {
      copies[message.payload]++;
      in_partition[{partition, message.payload}]++;
    }
  }
  for (const auto& [payload, count] : copies) summary.duplicates += count > 1 ? 1 : 0;
  summary.sends = sends_.size();
  for (const Send& send : sends_) {
    if (send.outcome != Outcome::ok) continue;
    summary.acknowledged++;
    if (!in_partition.contains({send.partition, send.payload})) summary.lost++;
  }
  summary.polls = polls_.size();
  for (const Poll& poll : polls_) summary.polled_messages += poll.messages.size();
  return summary;
}

std::string History::excerpt(const std::string& payload) const {
  std::lock_guard lock(mutex_);
  return excerpt_locked(payload);
}

std::string History::excerpt_locked(const std::string& payload) const {
  std::string text;
  for (const Send& send : sends_) {
    if (send.payload == payload) text += "  " + describe(send) + "\n";
  }
  for (const Poll& poll : polls_) {
    for (const Message& message : poll.messages) {
      if (message.payload != payload) continue;
      text += "  " + describe(poll) + ": " + payload + " at offset " +
              std::to_string(message.offset) + "\n";
    }
  }
  for (const auto& [partition, messages] : final_) {
    for (const Message& message : messages) {
      if (message.payload != payload) continue;
      text += "  final read: partition " + std::to_string(partition) + " holds " + payload +
              " at offset " + std::to_string(message.offset) + "\n";
    }
  }
  for (const Pause& pause : pauses_) {
    text += "  node " + std::to_string(pause.node) + " paused " + since_start(pause.from) + " to " +
            since_start(pause.to) + "\n";
  }
  return text;
}

}  // namespace hark::test
