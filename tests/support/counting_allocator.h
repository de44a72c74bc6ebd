#pragma once

#include <cstdint>

namespace hark::test {

// Allocations made through global operator new by any thread since the process started.
// Linking tests/support/counting_allocator.cc into a test binary replaces operator new with a
// counting one (plain builds only: the sanitizers bring their own allocator, and there
// `counting_allocator_active()` is false and tests that need the count skip).
uint64_t allocations_count();
bool counting_allocator_active();

}  // namespace hark::test
