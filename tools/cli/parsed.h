#pragma once

#include <optional>
#include <string>
#include <utility>

#include "hark/core/base/assert.h"

namespace hark::cli {

// A value parsed from the command line, or the reason it is not one, in words for the usage
// message ("--wait: a duration needs a unit: 500us, 250ms, 5s, 2m"). hark::Result carries
// only an Iggy code; a user who typed a bad argument needs a sentence. Reading value() of a
// failure, or reason() of a success, is a programmer error (asserted).
template <typename T>
class [[nodiscard]] Parsed {
 public:
  Parsed(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)

  static Parsed failure(std::string reason) { return Parsed(std::move(reason), Failure{}); }

  bool ok() const { return value_.has_value(); }
  const T& value() const& {
    HARK_ASSERT(ok());
    return *value_;
  }
  T&& value() && {
    HARK_ASSERT(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& reason() const {
    HARK_ASSERT(!ok());
    return reason_;
  }

 private:
  struct Failure {};
  Parsed(std::string reason, Failure) : reason_(std::move(reason)) {}

  std::optional<T> value_;
  std::string reason_;
};

// The reason of a failed Parsed<U>, as a failed Parsed<T>.
template <typename T, typename U>
Parsed<T> failed_as(const Parsed<U>& failed) {
  return Parsed<T>::failure(failed.reason());
}

}  // namespace hark::cli
