#pragma once

#include <cstdint>

namespace hark::io {

// The target of an io_uring completion. A completion lives inside the object it serves (a
// connection embeds its recv and send completions), and the SQE's user_data is its address, so
// dispatching a CQE is one indirect call and never a lookup or an allocation.
//
// `result` is the CQE's res: >= 0 on success (bytes, fd, ...), -errno on failure. `flags` is
// the CQE's flags: IORING_CQE_F_MORE while a multishot op stays armed, IORING_CQE_F_BUFFER and
// the buffer id (flags >> IORING_CQE_BUFFER_SHIFT) for provided-buffer receives.
//
// A completion must stay alive until its last CQE arrived (for a multishot op: the one without
// IORING_CQE_F_MORE, including after a cancel).
class Completion {
 public:
  virtual void complete(int32_t result, uint32_t flags) = 0;

 protected:
  ~Completion() = default;
};

}  // namespace hark::io
