#pragma once

// Assertions for programmer errors. HARK_ASSERT is on in every build: a broken invariant in a
// broker loses data, so we stop at once. Never assert on input (bytes from a socket or a disk):
// validate it and return an Error instead.

namespace hark::internal {

// Prints "file:line: assertion failed: expr" to stderr (synchronously) and aborts.
[[noreturn]] void assert_fail(const char* file, int line, const char* expression);

}  // namespace hark::internal

#define HARK_ASSERT(condition)                                       \
  do {                                                               \
    if (__builtin_expect(!(condition), 0)) {                         \
      ::hark::internal::assert_fail(__FILE__, __LINE__, #condition); \
    }                                                                \
  } while (0)

// For checks too expensive for release builds (O(n) walks). Enabled by HARK_DEBUG_CHECKS.
#ifdef HARK_DEBUG_CHECKS
#define HARK_DEBUG_ASSERT(condition) HARK_ASSERT(condition)
#else
#define HARK_DEBUG_ASSERT(condition) \
  do {                               \
    (void)sizeof(condition);         \
  } while (0)
#endif

#define HARK_UNREACHABLE() ::hark::internal::assert_fail(__FILE__, __LINE__, "unreachable")
