#pragma once

#include <cstdint>

namespace hark::test {

// A small seeded generator for stress tests that must be reproducible: a failing run prints
// its seed, and HARK_TEST_SEED=<seed> replays it. Not thread-safe: one per thread.
class Prng {
 public:
  explicit Prng(uint64_t seed) : state_(seed) {}

  uint64_t next();
  // Uniform in [0, bound). Requires: bound > 0.
  uint64_t below(uint64_t bound) { return next() % bound; }
  bool chance(uint32_t percent) { return below(100) < percent; }

 private:
  uint64_t state_;
};

// The seed for this run: HARK_TEST_SEED if set, else from the clock. Printed to stderr.
uint64_t test_seed();

}  // namespace hark::test
