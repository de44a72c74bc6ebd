#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <sys/socket.h>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/io/completion.h"

namespace hark::io {

struct RingOptions {
  uint32_t sq_entries = 256;
  uint32_t cq_entries = 4096;  // Multishot recv and accept can post many CQEs per submit.
  // io-wq workers the kernel may start for this ring's blocking file work (buffered writes,
  // fdatasync; IORING_REGISTER_IOWQ_MAX_WORKERS, Linux >= 5.15). Uncapped, a burst of writes
  // to many partitions starts up to one worker per request, each a kernel thread competing
  // with the shards for the cores; a shard's log writer has one operation in flight per
  // partition, so a few workers keep the disk busy. Unbounded work (sockets that cannot be
  // polled) keeps the kernel's limit: the reactor polls its sockets and sends none there.
  uint32_t iowq_bounded_max = 4;
};

// How the kernel runs completion work for this ring, best first (docs/architecture.md §io).
enum class RingMode : uint8_t { defer_taskrun, coop_taskrun, plain };
std::string_view ring_mode_name(RingMode mode);

class Ring;

// An SQE just queued, to attach options to before anything else is queued on the ring.
class Submission {
 public:
  Submission(Ring& ring, io_uring_sqe* sqe) : ring_(ring), sqe_(sqe) {}

  // Cancels the operation (it completes with -ECANCELED) unless it finishes within `timeout`:
  // a linked timeout SQE, whose own CQE is ignored.
  void with_timeout(Duration timeout);

 private:
  Ring& ring_;
  io_uring_sqe* sqe_;
};

// One io_uring, owned by one shard thread and used only there (SINGLE_ISSUER: the kernel
// rejects submits from any other thread). Create it on the thread that will use it.
//
// Operations queue an SQE whose user_data is the Completion's address; run() submits, waits
// and calls each completion. A full submission queue is submitted and retried, never an error.
// CQEs with user_data 0 (linked timeouts, cancel requests) are ignored.
//
// Requires Linux 6.1 (multishot accept/recv, provided buffer rings, DEFER_TASKRUN); create()
// fails with a logged explanation where io_uring is disabled or unavailable.
class Ring {
 public:
  static Result<std::unique_ptr<Ring>> create(const RingOptions& options);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  RingMode mode() const { return mode_; }
  io_uring* raw() { return &ring_; }

  Submission accept_multishot(int listen_fd, Completion& completion);
  // Receives into buffers of the provided buffer ring `group` until cancelled, the peer
  // closes (result 0) or buffers run out (-ENOBUFS: recycle buffers, then arm again).
  Submission recv_multishot(int fd, uint16_t group, Completion& completion);
  // `bytes` must stay valid until the completion runs. May complete short: see io/sender.h.
  Submission send(int fd, std::span<const std::byte> bytes, Completion& completion);
  // `flags` are added to MSG_NOSIGNAL (MSG_DONTWAIT: -EAGAIN at once instead of waiting for
  // room in the socket).
  Submission sendmsg(int fd, const msghdr* message, Completion& completion, int flags = 0);
  Submission connect(int fd, const sockaddr* address, socklen_t length, Completion& completion);
  Submission read(int fd, std::span<std::byte> bytes, uint64_t offset, Completion& completion);
  Submission write(int fd, std::span<const std::byte> bytes, uint64_t offset,
                   Completion& completion);
  // A write that completes once its bytes are on stable storage (RWF_DSYNC: as if an
  // fdatasync followed it). On an O_DIRECT file overwriting allocated, written blocks the
  // kernel issues it without an io-wq worker, as a write with FUA or followed by a cache flush
  // (docs/storage-format.md §How a commit reaches the disk).
  Submission write_dsync(int fd, std::span<const std::byte> bytes, uint64_t offset,
                         Completion& completion);
  Submission writev(int fd, const iovec* vectors, uint32_t count, uint64_t offset,
                    Completion& completion);
  Submission fsync(int fd, Completion& completion);
  Submission fdatasync(int fd, Completion& completion);
  Submission fallocate(int fd, int mode, uint64_t offset, uint64_t length, Completion& completion);
  // `path` must stay valid until the completion runs.
  Submission openat(int directory_fd, const char* path, int flags, mode_t mode,
                    Completion& completion);
  Submission close(int fd, Completion& completion);
  Submission nop(Completion& completion);
  // One-shot poll: completes with the revents once one of `events` (POLLRDHUP, ...) is set.
  Submission poll(int fd, uint32_t events, Completion& completion);

  // Cancels every operation in flight for `completion`; each completes with -ECANCELED (or
  // its result, if it finished first). The cancel request's own CQE is ignored.
  void cancel(Completion& completion);

  // Submits what is queued, waits until at least one CQE is ready or `timeout` passes
  // (nullopt: no limit; zero: do not wait), then dispatches every ready CQE.
  // Returns how many CQEs were dispatched.
  int run(std::optional<Duration> timeout);

  // Hands what is queued to the kernel now, without waiting or dispatching completions (their
  // CQEs are dispatched by the next run()). A socket send completes inline, so its peer is
  // woken before this returns. Returns how many SQEs were submitted (0: nothing was queued,
  // and the kernel was not entered).
  int submit();

  // True if completions are ready to dispatch without entering the kernel.
  bool completions_ready() const;

  // Operations this kernel supports (probed at create()).
  bool supports(uint8_t opcode) const;

 private:
  friend class Submission;
  explicit Ring(RingMode mode) : mode_(mode) {}

  io_uring_sqe* next_sqe();
  io_uring_sqe* prepare(Completion& completion);
  __kernel_timespec& timeout_for(const io_uring_sqe* sqe);
  int dispatch_ready();

  io_uring ring_{};
  RingMode mode_;
  uint64_t supported_ops_[4] = {};           // Bitmap over opcodes 0..255.
  std::vector<__kernel_timespec> timeouts_;  // One per SQ slot, for linked timeouts.
};

}  // namespace hark::io
