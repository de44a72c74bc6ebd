// Covers io::Sender against real loopback sockets: a message in several parts larger than the
// socket buffer is written whole and in order through short sends, and a peer that goes away
// is reported as Disconnected once; a message the socket takes at once goes in one submission
// and a peer that never reads fails the rest after the stall timeout.
#include "hark/io/sender.h"

#include <unistd.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>

namespace hark::io {
namespace {

using namespace std::chrono_literals;

struct Done final : SendDone {
  void send_done(Result<uint64_t> value) override {
    calls++;
    result = value.ok() ? std::optional<Error>() : std::optional<Error>(value.error());
    bytes = value.ok() ? *value : 0;
  }
  int calls = 0;
  std::optional<Error> result;
  uint64_t bytes = 0;
};

TEST(Sender, WritesAWholeMultiPartMessageThroughShortSends) {
  auto ring = std::move(Ring::create(RingOptions{})).value();
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const int small = 4096;
  ::setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  std::vector<std::string> parts_text = {std::string(8, 'h'), std::string(3 << 20, 'p'),
                                         std::string(1 << 20, 'u')};
  for (size_t i = 0; i < parts_text[1].size(); i++) parts_text[1][i] = static_cast<char>(i % 251);
  std::vector<std::span<const std::byte>> parts;
  for (const std::string& text : parts_text) {
    parts.push_back(std::as_bytes(std::span(text.data(), text.size())));
  }
  std::string received;
  std::thread reader([&] {
    char buffer[65536];
    while (received.size() < (4u << 20) + 8) {
      const ssize_t n = ::read(pair[1], buffer, sizeof buffer);
      if (n <= 0) break;
      received.append(buffer, static_cast<size_t>(n));
    }
  });
  Sender sender(*ring);
  Done done;
  sender.send(pair[0], parts, done);
  for (int i = 0; i < 10000 && done.calls == 0; i++) ring->run(10ms);
  reader.join();
  ASSERT_EQ(done.calls, 1);
  EXPECT_FALSE(done.result.has_value());
  EXPECT_EQ(done.bytes, (4u << 20) + 8);
  EXPECT_GT(sender.submissions(), 1u) << "the short-send path was not exercised";
  EXPECT_EQ(received, parts_text[0] + parts_text[1] + parts_text[2]);
  EXPECT_FALSE(sender.busy());
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST(Sender, AMessageTheSocketTakesAtOnceArmsNoTimerAndANonReaderStallsOut) {
  auto ring = std::move(Ring::create(RingOptions{})).value();
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const std::string small_text = "answer";
  const std::span<const std::byte> small = std::as_bytes(std::span(small_text));
  Sender sender(*ring, 50ms);
  Done done;
  sender.send(pair[0], {&small, 1}, done);
  for (int i = 0; i < 1000 && done.calls == 0; i++) ring->run(10ms);
  ASSERT_EQ(done.calls, 1);
  EXPECT_EQ(done.bytes, small_text.size());
  EXPECT_EQ(sender.submissions(), 1u);
  // Now the peer never reads: the socket fills, the first send takes part (or -EAGAIN), the
  // rest waits with the stall timeout and fails the message instead of hanging.
  const std::string big_text(8 << 20, 'b');
  const std::span<const std::byte> big = std::as_bytes(std::span(big_text));
  Done stalled;
  sender.send(pair[0], {&big, 1}, stalled);
  for (int i = 0; i < 1000 && stalled.calls == 0; i++) ring->run(10ms);
  ASSERT_EQ(stalled.calls, 1);
  EXPECT_EQ(stalled.result, Error::task_timeout);
  EXPECT_GT(sender.submissions(), 1u);
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST(Sender, APeerThatLeftIsReportedAsDisconnected) {
  auto ring = std::move(Ring::create(RingOptions{})).value();
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ::close(pair[1]);
  const std::string text = "response";
  const std::span<const std::byte> part = std::as_bytes(std::span(text.data(), text.size()));
  Sender sender(*ring);
  Done done;
  sender.send(pair[0], {&part, 1}, done);
  for (int i = 0; i < 1000 && done.calls == 0; i++) ring->run(10ms);
  ASSERT_EQ(done.calls, 1);
  EXPECT_EQ(done.result, Error::disconnected);
  ::close(pair[0]);
}

}  // namespace
}  // namespace hark::io
