#include "hark/io/ring.h"

#include <errno.h>
#include <string.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::io {
namespace {

// Setup attempts, best first. DEFER_TASKRUN (6.1) runs completion work only when this thread
// asks for events, so nothing interrupts a shard mid-iteration; COOP_TASKRUN (5.19) avoids
// inter-processor interrupts for task work; plain works anywhere io_uring does.
struct SetupMode {
  RingMode mode;
  uint32_t flags;
};
constexpr SetupMode setup_modes[] = {
    {RingMode::defer_taskrun, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN},
    {RingMode::coop_taskrun, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG},
    {RingMode::plain, 0},
};

void explain_unavailable(int error) {
  HARK_LOG_ERROR(
      "io_uring is unavailable (%s). hark needs Linux >= 6.1 with io_uring enabled: check "
      "`sysctl kernel.io_uring_disabled` (must be 0, or 1 with this user in "
      "kernel.io_uring_group) and that no seccomp profile (containers) blocks io_uring_setup",
      strerror(error));
}

}  // namespace

std::string_view ring_mode_name(RingMode mode) {
  switch (mode) {
    case RingMode::defer_taskrun: return "SINGLE_ISSUER|DEFER_TASKRUN";
    case RingMode::coop_taskrun: return "COOP_TASKRUN";
    case RingMode::plain: return "plain";
  }
  HARK_UNREACHABLE();
}

void Submission::with_timeout(Duration timeout) {
  sqe_->flags |= IOSQE_IO_LINK;
  io_uring_sqe* timeout_sqe = ring_.next_sqe();
  // The kernel reads the timespec when it consumes the SQE, at a later submit. It lives in a
  // per-slot array, valid until the slot is handed out again (which is after that submit).
  __kernel_timespec& span = ring_.timeout_for(timeout_sqe);
  span.tv_sec = static_cast<int64_t>(timeout.count() / 1'000'000'000);
  span.tv_nsec = static_cast<long long>(timeout.count() % 1'000'000'000);
  io_uring_prep_link_timeout(timeout_sqe, &span, 0);
  io_uring_sqe_set_data64(timeout_sqe, 0);
}

Result<std::unique_ptr<Ring>> Ring::create(const RingOptions& options) {
  for (const SetupMode& setup : setup_modes) {
    auto ring = std::unique_ptr<Ring>(new Ring(setup.mode));
    io_uring_params params{};
    params.flags = setup.flags | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
    params.cq_entries = options.cq_entries;
    const int result = io_uring_queue_init_params(options.sq_entries, &ring->ring_, &params);
    if (result == -EINVAL) continue;  // This kernel lacks a flag: try the next mode.
    if (result < 0) {
      explain_unavailable(-result);
      return Error::io_error;
    }
    if ((params.features & IORING_FEAT_EXT_ARG) == 0 ||
        (params.features & IORING_FEAT_NODROP) == 0) {
      HARK_LOG_ERROR("io_uring lacks EXT_ARG or NODROP: hark needs Linux >= 6.1");
      io_uring_queue_exit(&ring->ring_);
      return Error::io_error;
    }
    if (io_uring_probe* probe = io_uring_get_probe_ring(&ring->ring_); probe != nullptr) {
      for (int op = 0; op < probe->ops_len; op++) {
        if ((probe->ops[op].flags & IO_URING_OP_SUPPORTED) != 0) {
          ring->supported_ops_[op / 64] |= uint64_t{1} << (op % 64);
        }
      }
      io_uring_free_probe(probe);
    }
    ring->timeouts_.resize(ring->ring_.sq.ring_entries);
    // Registered from the thread that creates (and, SINGLE_ISSUER, owns) the ring. A failure
    // costs only the cap: say so and go on.
    unsigned workers[2] = {options.iowq_bounded_max, 0};  // 0: unbounded keeps its limit.
    if (const int capped = io_uring_register_iowq_max_workers(&ring->ring_, workers); capped < 0) {
      HARK_LOG_WARN("cannot cap io_uring io-wq workers at %u (%s); running uncapped",
                    options.iowq_bounded_max, strerror(-capped));
    }
    HARK_LOG_DEBUG("io_uring ring created in %s mode", ring_mode_name(setup.mode).data());
    return ring;
  }
  explain_unavailable(EINVAL);
  return Error::io_error;
}

Ring::~Ring() { io_uring_queue_exit(&ring_); }

bool Ring::supports(uint8_t opcode) const {
  return (supported_ops_[opcode / 64] >> (opcode % 64) & 1) != 0;
}

io_uring_sqe* Ring::next_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // A full SQ is not an error: hand the batch to the kernel and take a fresh slot.
    HARK_LOG_INFO("submission queue full (%u entries); submitting early", ring_.sq.ring_entries);
    const int submitted = io_uring_submit(&ring_);
    HARK_ASSERT(submitted >= 0);
    sqe = io_uring_get_sqe(&ring_);
  }
  HARK_ASSERT(sqe != nullptr);
  return sqe;
}

__kernel_timespec& Ring::timeout_for(const io_uring_sqe* sqe) {
  const auto slot = static_cast<size_t>(sqe - ring_.sq.sqes);
  HARK_ASSERT(slot < timeouts_.size());
  return timeouts_[slot];
}

io_uring_sqe* Ring::prepare(Completion& completion) {
  io_uring_sqe* sqe = next_sqe();
  io_uring_sqe_set_data(sqe, &completion);
  return sqe;
}

Submission Ring::accept_multishot(int listen_fd, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_multishot_accept(sqe, listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  return {*this, sqe};
}

Submission Ring::recv_multishot(int fd, uint16_t group, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_recv_multishot(sqe, fd, nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = group;
  return {*this, sqe};
}

Submission Ring::send(int fd, std::span<const std::byte> bytes, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_send(sqe, fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  return {*this, sqe};
}

Submission Ring::sendmsg(int fd, const msghdr* message, Completion& completion, int flags) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_sendmsg(sqe, fd, message, static_cast<unsigned>(MSG_NOSIGNAL | flags));
  return {*this, sqe};
}

Submission Ring::connect(int fd, const sockaddr* address, socklen_t length,
                         Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_connect(sqe, fd, address, length);
  return {*this, sqe};
}

Submission Ring::read(int fd, std::span<std::byte> bytes, uint64_t offset, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_read(sqe, fd, bytes.data(), static_cast<unsigned>(bytes.size()), offset);
  return {*this, sqe};
}

Submission Ring::write(int fd, std::span<const std::byte> bytes, uint64_t offset,
                       Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_write(sqe, fd, bytes.data(), static_cast<unsigned>(bytes.size()), offset);
  return {*this, sqe};
}

Submission Ring::write_dsync(int fd, std::span<const std::byte> bytes, uint64_t offset,
                             Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_write(sqe, fd, bytes.data(), static_cast<unsigned>(bytes.size()), offset);
  sqe->rw_flags = RWF_DSYNC;
  return {*this, sqe};
}

Submission Ring::writev(int fd, const iovec* vectors, uint32_t count, uint64_t offset,
                        Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_writev(sqe, fd, vectors, count, offset);
  return {*this, sqe};
}

Submission Ring::fsync(int fd, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_fsync(sqe, fd, 0);
  return {*this, sqe};
}

Submission Ring::fdatasync(int fd, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
  return {*this, sqe};
}

Submission Ring::fallocate(int fd, int mode, uint64_t offset, uint64_t length,
                           Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_fallocate(sqe, fd, mode, offset, length);
  return {*this, sqe};
}

Submission Ring::openat(int directory_fd, const char* path, int flags, mode_t mode,
                        Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_openat(sqe, directory_fd, path, flags, mode);
  return {*this, sqe};
}

Submission Ring::close(int fd, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_close(sqe, fd);
  return {*this, sqe};
}

Submission Ring::nop(Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_nop(sqe);
  return {*this, sqe};
}

Submission Ring::poll(int fd, uint32_t events, Completion& completion) {
  io_uring_sqe* sqe = prepare(completion);
  io_uring_prep_poll_add(sqe, fd, events);
  return {*this, sqe};
}

void Ring::cancel(Completion& completion) {
  io_uring_sqe* sqe = next_sqe();
  io_uring_prep_cancel(sqe, &completion, IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, 0);
}

int Ring::submit() {
  if (io_uring_sq_ready(&ring_) == 0) return 0;
  const int submitted = io_uring_submit(&ring_);
  // As in run(): a backed-up CQ (-EBUSY/-EAGAIN) is relieved by the next run()'s dispatch,
  // which submits what is still queued.
  HARK_ASSERT(submitted >= 0 || submitted == -EINTR || submitted == -EBUSY || submitted == -EAGAIN);
  return submitted > 0 ? submitted : 0;
}

bool Ring::completions_ready() const {
  return io_uring_cq_ready(const_cast<io_uring*>(&ring_)) > 0;
}

int Ring::run(std::optional<Duration> timeout) {
  io_uring_cqe* cqe = nullptr;
  int result = 0;
  if (timeout.has_value() && timeout->count() <= 0) {
    // Submit and run deferred task work without blocking.
    result = io_uring_submit_and_get_events(&ring_);
  } else if (timeout.has_value()) {
    __kernel_timespec span{};
    span.tv_sec = static_cast<int64_t>(timeout->count() / 1'000'000'000);
    span.tv_nsec = static_cast<long long>(timeout->count() % 1'000'000'000);
    result = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &span, nullptr);
  } else {
    result = io_uring_submit_and_wait(&ring_, 1);
  }
  // -ETIME: the wait timed out; -EINTR: a signal arrived; -EBUSY/-EAGAIN: the CQ is
  // backed up, which dispatching below relieves. Anything else is a bug in how we use the ring.
  HARK_ASSERT(result >= 0 || result == -ETIME || result == -EINTR || result == -EBUSY ||
              result == -EAGAIN);
  return dispatch_ready();
}

int Ring::dispatch_ready() {
  // The CQEs ready now, each released to the kernel before its completion runs: a completion
  // may drive this ring itself (a partition log's drain when it closes or truncates), and that
  // nested run must neither see this CQE nor the ones after it again.
  const unsigned ready = io_uring_cq_ready(&ring_);
  int count = 0;
  io_uring_cqe* cqe = nullptr;
  for (unsigned i = 0; i < ready && io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr; i++) {
    auto* completion = static_cast<Completion*>(io_uring_cqe_get_data(cqe));
    const int32_t result = cqe->res;
    const uint32_t flags = cqe->flags;
    io_uring_cqe_seen(&ring_, cqe);
    if (completion != nullptr) completion->complete(result, flags);
    count++;
  }
  return count;
}

}  // namespace hark::io
