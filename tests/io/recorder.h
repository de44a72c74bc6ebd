#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "hark/io/completion.h"
#include "hark/io/ring.h"

namespace hark::io::test {

// A completion that records every CQE it receives, for tests of ring operations.
struct Recorder final : Completion {
  void complete(int32_t result, uint32_t flags) override {
    results.push_back(result);
    flag_list.push_back(flags);
  }
  std::vector<int32_t> results;
  std::vector<uint32_t> flag_list;
};

// Runs `ring` until `recorder` holds `count` results (bounded: 1000 waits of 10 ms).
inline void run_until(Ring& ring, const Recorder& recorder, size_t count) {
  for (int i = 0; i < 1000 && recorder.results.size() < count; i++) {
    ring.run(std::chrono::milliseconds(10));
  }
  ASSERT_GE(recorder.results.size(), count);
}

}  // namespace hark::io::test
