// Covers io::Ring operations against the real kernel: file open/write/read/fsync/fdatasync/
// fallocate/close, a durable (RWF_DSYNC) write in a temp dir, linked timeouts, cancellation, and
// send/recv on loopback.
#include "hark/io/ring.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hark/tests/io/recorder.h"

namespace hark::io {
namespace {

using namespace std::chrono_literals;
using test::Recorder;
using test::run_until;

std::unique_ptr<Ring> make_ring() {
  Result<std::unique_ptr<Ring>> ring = Ring::create(RingOptions{});
  EXPECT_TRUE(ring.ok());
  return std::move(ring).value();
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/hark-ring-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Ring, PrefersDeferTaskrunOnThisKernel) {
  auto ring = make_ring();
  EXPECT_EQ(ring->mode(), RingMode::defer_taskrun);
  EXPECT_TRUE(ring->supports(IORING_OP_RECV));
  EXPECT_TRUE(ring->supports(IORING_OP_LINK_TIMEOUT));
}

TEST(Ring, NopCompletesWithZero) {
  auto ring = make_ring();
  Recorder recorder;
  ring->nop(recorder);
  run_until(*ring, recorder, 1);
  EXPECT_EQ(recorder.results[0], 0);
}

// A completion may drive the ring itself (a partition log's drain when it truncates inside a
// task): the nested run sees neither its own CQE nor the ones after it a second time.
TEST(Ring, ACompletionThatRunsTheRingSeesNoCompletionTwice) {
  auto ring = make_ring();
  struct Nested final : Completion {
    Ring* ring = nullptr;
    int calls = 0;
    void complete(int32_t /*result*/, uint32_t /*flags*/) override {
      if (++calls == 1) ring->run(Duration(0));
    }
  };
  Nested first;
  first.ring = ring.get();
  Recorder second;
  Recorder third;
  ring->nop(first);
  ring->nop(second);
  ring->nop(third);
  run_until(*ring, third, 1);
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(second.results.size(), 1u);
  EXPECT_EQ(third.results.size(), 1u);
}

TEST(Ring, FileOpsRoundTrip) {
  auto ring = make_ring();
  TempDir dir;
  const std::string path = dir.path() + "/segment.log";
  Recorder opened;
  ring->openat(AT_FDCWD, path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644, opened);
  run_until(*ring, opened, 1);
  const int fd = opened.results[0];
  ASSERT_GE(fd, 0);

  Recorder allocated, written, synced, datasynced, read_back, closed;
  ring->fallocate(fd, 0, 0, 1 << 16, allocated);
  run_until(*ring, allocated, 1);
  EXPECT_EQ(allocated.results[0], 0);

  const std::string text = "hello, segment";
  ring->write(fd, std::as_bytes(std::span(text.data(), text.size())), 100, written);
  run_until(*ring, written, 1);
  EXPECT_EQ(written.results[0], static_cast<int32_t>(text.size()));

  ring->fsync(fd, synced);
  ring->fdatasync(fd, datasynced);
  run_until(*ring, synced, 1);
  run_until(*ring, datasynced, 1);
  EXPECT_EQ(synced.results[0], 0);
  EXPECT_EQ(datasynced.results[0], 0);

  std::array<char, 32> buffer{};
  ring->read(fd, std::as_writable_bytes(std::span(buffer.data(), text.size())), 100, read_back);
  run_until(*ring, read_back, 1);
  EXPECT_EQ(read_back.results[0], static_cast<int32_t>(text.size()));
  EXPECT_EQ(std::string(buffer.data(), text.size()), text);

  struct stat status {};
  ASSERT_EQ(::fstat(fd, &status), 0);
  EXPECT_EQ(status.st_size, 1 << 16);  // fallocate extended the file.

  ring->close(fd, closed);
  run_until(*ring, closed, 1);
  EXPECT_EQ(closed.results[0], 0);
}

// The durable write of `always` (storage/ring_disk.cc): an O_DIRECT block written with
// RWF_DSYNC lands where asked and completes with its length; a failure comes back as -errno.
TEST(Ring, ADsyncWriteOfADirectBlockLandsWhereAskedAndFailuresAreErrnos) {
  auto ring = make_ring();
  TempDir dir;
  const std::string path = dir.path() + "/segment.log";
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EINVAL) GTEST_SKIP() << "no O_DIRECT in " << dir.path();
  ASSERT_GE(fd, 0);
  constexpr size_t block = 4096;
  auto* bytes = static_cast<std::byte*>(std::aligned_alloc(block, block));
  std::memset(bytes, 'd', block);
  Recorder written;
  ring->write_dsync(fd, std::span<const std::byte>(bytes, block), 2 * block, written);
  run_until(*ring, written, 1);
  EXPECT_EQ(written.results[0], static_cast<int32_t>(block));
  std::string back(block, '\0');
  const int plain = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(plain, 0);
  EXPECT_EQ(::pread(plain, back.data(), block, 2 * block), static_cast<ssize_t>(block));
  EXPECT_EQ(back, std::string(block, 'd'));

  Recorder refused;  // Read-only: the kernel refuses the write.
  ring->write_dsync(plain, std::span<const std::byte>(bytes, block), 0, refused);
  run_until(*ring, refused, 1);
  EXPECT_EQ(refused.results[0], -EBADF);
  std::free(bytes);
  ::close(plain);
  ::close(fd);
}

TEST(Ring, ReadOfMissingFileFailsWithErrno) {
  auto ring = make_ring();
  Recorder opened;
  ring->openat(AT_FDCWD, "/nonexistent/hark/file", O_RDONLY, 0, opened);
  run_until(*ring, opened, 1);
  EXPECT_EQ(opened.results[0], -ENOENT);
}

TEST(Ring, LinkedTimeoutCancelsAStuckRead) {
  auto ring = make_ring();
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  Recorder reader;
  std::array<std::byte, 8> buffer{};
  ring->read(fds[0], buffer, 0, reader).with_timeout(5ms);
  run_until(*ring, reader, 1);
  EXPECT_EQ(reader.results[0], -ECANCELED);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Ring, LinkedTimeoutLeavesAFastReadAlone) {
  auto ring = make_ring();
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ASSERT_EQ(::write(fds[1], "abc", 3), 3);
  Recorder reader;
  std::array<std::byte, 8> buffer{};
  ring->read(fds[0], buffer, 0, reader).with_timeout(5s);
  run_until(*ring, reader, 1);
  EXPECT_EQ(reader.results[0], 3);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Ring, CancelEndsAPendingRead) {
  auto ring = make_ring();
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  Recorder reader;
  std::array<std::byte, 8> buffer{};
  ring->read(fds[0], buffer, 0, reader);
  ring->run(Duration(0));
  EXPECT_TRUE(reader.results.empty());
  ring->cancel(reader);
  run_until(*ring, reader, 1);
  EXPECT_EQ(reader.results[0], -ECANCELED);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Ring, ManyOperationsBeyondTheQueueSizeAllComplete) {
  Result<std::unique_ptr<Ring>> created = Ring::create(RingOptions{.sq_entries = 8});
  ASSERT_TRUE(created.ok());
  Ring& ring = **created;
  Recorder recorder;
  for (int i = 0; i < 100; i++) ring.nop(recorder);  // The SQ fills and is submitted early.
  run_until(ring, recorder, 100);
  EXPECT_EQ(recorder.results.size(), 100u);
}

}  // namespace
}  // namespace hark::io
