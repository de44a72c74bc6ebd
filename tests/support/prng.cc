#include "hark/tests/support/prng.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace hark::test {

uint64_t Prng::next() {
  // splitmix64: good enough statistics, one state word, trivially seedable.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t test_seed() {
  uint64_t seed = 0;
  if (const char* text = std::getenv("HARK_TEST_SEED"); text != nullptr) {
    seed = std::strtoull(text, nullptr, 10);
  } else {
    seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  std::fprintf(stderr, "test seed: %llu (replay with HARK_TEST_SEED=%llu)\n",
               static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace hark::test
