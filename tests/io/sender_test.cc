// Covers io::Sender against real loopback sockets: a message in several parts larger than the
// socket buffer is written whole and in order through short sends, a message the socket takes
// at once costs one submission, a socket that is already full is waited on under the stall
// timeout (a peer that never reads fails with TaskTimeout), and a peer that goes away is
// reported as Disconnected once.
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

TEST(Sender, AMessageTheSocketTakesWholeCostsOneSubmission) {
  auto ring = std::move(Ring::create(RingOptions{})).value();
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const std::string header = "header";
  const std::string body(1000, 'b');
  const std::span<const std::byte> parts[] = {
      std::as_bytes(std::span(header.data(), header.size())),
      std::as_bytes(std::span(body.data(), body.size()))};
  Sender sender(*ring, Duration(std::chrono::seconds(5)));
  Done done;
  sender.send(pair[0], parts, done);
  for (int i = 0; i < 1000 && done.calls == 0; i++) ring->run(10ms);
  ASSERT_EQ(done.calls, 1);
  EXPECT_FALSE(done.result.has_value());
  EXPECT_EQ(done.bytes, header.size() + body.size());
  EXPECT_EQ(sender.submissions(), 1u);
  std::string received(header.size() + body.size(), '\0');
  EXPECT_EQ(::read(pair[1], received.data(), received.size()),
            static_cast<ssize_t>(received.size()));
  EXPECT_EQ(received, header + body);
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST(Sender, AFullSocketIsWaitedOnUnderTheStallTimeout) {
  auto ring = std::move(Ring::create(RingOptions{})).value();
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair), 0);
  // Fill the socket: the peer never reads, so the first try finds no room at all.
  const std::string filler(65536, 'f');
  while (::write(pair[0], filler.data(), filler.size()) > 0) {
  }
  const std::string text = "response";
  const std::span<const std::byte> part = std::as_bytes(std::span(text.data(), text.size()));
  Sender sender(*ring, Duration(std::chrono::milliseconds(50)));
  Done done;
  sender.send(pair[0], {&part, 1}, done);
  for (int i = 0; i < 1000 && done.calls == 0; i++) ring->run(10ms);
  ASSERT_EQ(done.calls, 1);
  EXPECT_EQ(done.result, Error::task_timeout);
  EXPECT_EQ(sender.submissions(), 2u) << "the waiting try after EAGAIN was not made";
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
