#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "hark/core/base/units.h"

namespace hark {

// A latency histogram with fixed log-spaced buckets: bucket i holds values up to 2^i µs
// (1 µs .. 2^23 µs ≈ 8.4 s), the last one everything above. Written by one thread (its shard)
// with plain adds, no atomics: a reader sums it on that thread (core::GetStats visits each
// shard in turn), so it costs one division by a constant, a bit_width and two adds per value.
struct LatencyHistogram {
  static constexpr size_t bounds = 24;  // Finite upper bounds; counts has one more (+Inf).
  std::array<uint64_t, bounds + 1> counts{};
  uint64_t sum_ns = 0;

  void record(Duration duration) {
    const auto ns = static_cast<uint64_t>(duration.count() > 0 ? duration.count() : 0);
    const size_t bucket = ns <= 1000 ? 0 : static_cast<size_t>(std::bit_width((ns - 1) / 1000));
    counts[bucket < bounds ? bucket : bounds]++;
    sum_ns += ns;
  }

  void add(const LatencyHistogram& other) {
    for (size_t i = 0; i <= bounds; ++i) counts[i] += other.counts[i];
    sum_ns += other.sum_ns;
  }

  uint64_t count() const {
    uint64_t total = 0;
    for (const uint64_t count : counts) total += count;
    return total;
  }

  // The upper bound of bucket i < bounds, in seconds (Prometheus' `le`).
  static double bound_seconds(size_t i) { return 1e-6 * static_cast<double>(uint64_t{1} << i); }
};

}  // namespace hark
