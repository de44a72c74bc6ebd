#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>

namespace hark {

// A number that must not be mixed up with another number of the same width: a stream id is
// not a partition id, and neither is an offset. Explicit to build, value() to read.
template <typename Tag, typename Rep>
class StrongId {
 public:
  using rep = Rep;

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}

  constexpr Rep value() const { return value_; }
  constexpr auto operator<=>(const StrongId&) const = default;

  template <typename H>
  friend H AbslHashValue(H state, StrongId id) {
    return H::combine(std::move(state), id.value_);
  }

 private:
  Rep value_ = 0;
};

using StreamId = StrongId<struct StreamIdTag, uint32_t>;
using TopicId = StrongId<struct TopicIdTag, uint32_t>;
using PartitionId = StrongId<struct PartitionIdTag, uint32_t>;
using ConsumerId = StrongId<struct ConsumerIdTag, uint32_t>;
using GroupId = StrongId<struct GroupIdTag, uint32_t>;
using UserId = StrongId<struct UserIdTag, uint32_t>;
using ClientId = StrongId<struct ClientIdTag, uint32_t>;
using ShardId = StrongId<struct ShardIdTag, uint32_t>;

// A message's position in its partition. Offsets count messages, so they take a count added
// (offset + 3) and give a count subtracted (end - start); an offset plus an offset means nothing.
class Offset {
 public:
  constexpr Offset() = default;
  constexpr explicit Offset(uint64_t value) : value_(value) {}

  constexpr uint64_t value() const { return value_; }
  constexpr auto operator<=>(const Offset&) const = default;

  constexpr Offset operator+(uint64_t count) const { return Offset(value_ + count); }
  constexpr Offset& operator+=(uint64_t count) {
    value_ += count;
    return *this;
  }
  // Requires: *this >= other.
  constexpr uint64_t operator-(Offset other) const { return value_ - other.value_; }

  template <typename H>
  friend H AbslHashValue(H state, Offset offset) {
    return H::combine(std::move(state), offset.value_);
  }

 private:
  uint64_t value_ = 0;
};

// Durations and instants. Microseconds are the wire's unit; nanoseconds are the clock's.
using Duration = std::chrono::nanoseconds;
using Microseconds = std::chrono::microseconds;

// A point on CLOCK_MONOTONIC (deadlines, timers).
using Instant = std::chrono::time_point<std::chrono::steady_clock, Duration>;

// Microseconds since the Unix epoch on CLOCK_REALTIME (message timestamps, as Iggy stores them).
using UnixMicros = uint64_t;

// deadline + duration without overflow: a huge wait saturates at the far future.
constexpr Instant saturating_add(Instant instant, Duration duration) {
  const auto limit = Instant::max();
  if (duration.count() > 0 && instant > limit - duration) return limit;
  return instant + duration;
}

}  // namespace hark

template <typename Tag, typename Rep>
struct std::hash<hark::StrongId<Tag, Rep>> {
  size_t operator()(hark::StrongId<Tag, Rep> id) const { return std::hash<Rep>{}(id.value()); }
};
