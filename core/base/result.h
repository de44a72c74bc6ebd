#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "hark/core/base/assert.h"
#include "hark/core/base/error.h"

namespace hark {

// Holds a T or an Error (an Iggy wire code). Four bytes of error, no message and no allocation
// on the error path, so a flood of bad requests costs nothing but the code.
//
//   Result<Offset> r = log.append(batch);
//   if (!r.ok()) return r.error();
//
// Construct from a value, or from an Error other than Error::ok. Reading value() of a failed
// result, or error() of a good one, is a programmer error (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : ok_(true) {
    new (&value_) T(value);
  }  // NOLINT(google-explicit-constructor)
  Result(T&& value) : ok_(true) { new (&value_) T(std::move(value)); }                  // NOLINT
  Result(Error error) : ok_(false), error_(error) { HARK_ASSERT(error != Error::ok); }  // NOLINT

  Result(const Result& other) : ok_(other.ok_) { copy_from(other); }
  Result(Result&& other) noexcept : ok_(other.ok_) { move_from(std::move(other)); }
  Result& operator=(const Result& other) {
    if (this != &other) {
      destroy();
      ok_ = other.ok_;
      copy_from(other);
    }
    return *this;
  }
  Result& operator=(Result&& other) noexcept {
    if (this != &other) {
      destroy();
      ok_ = other.ok_;
      move_from(std::move(other));
    }
    return *this;
  }
  ~Result() { destroy(); }

  bool ok() const { return ok_; }
  Error error() const { return ok_ ? Error::ok : error_; }

  T& value() & {
    HARK_ASSERT(ok_);
    return value_;
  }
  const T& value() const& {
    HARK_ASSERT(ok_);
    return value_;
  }
  T&& value() && {
    HARK_ASSERT(ok_);
    return std::move(value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void copy_from(const Result& other) {
    if (ok_) {
      new (&value_) T(other.value_);
    } else {
      error_ = other.error_;
    }
  }
  void move_from(Result&& other) {
    if (ok_) {
      new (&value_) T(std::move(other.value_));
    } else {
      error_ = other.error_;
    }
  }
  void destroy() {
    if (ok_) value_.~T();
  }

  bool ok_;
  union {
    T value_;
    Error error_;
  };
};

// For operations that succeed with no value.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(error) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return error_ == Error::ok; }
  Error error() const { return error_; }

 private:
  Error error_ = Error::ok;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

}  // namespace hark

#define HARK_CONCAT_INNER(a, b) a##b
#define HARK_CONCAT(a, b) HARK_CONCAT_INNER(a, b)

// Returns the error of `expr` (a Result) from the enclosing function if it failed.
#define HARK_TRY(expr)                \
  do {                                \
    auto&& hark_try_result = (expr);  \
    if (!hark_try_result.ok()) {      \
      return hark_try_result.error(); \
    }                                 \
  } while (0)

// `lhs = *expr`, or returns the error of `expr` from the enclosing function.
// `lhs` may declare a variable: HARK_TRY_ASSIGN(const Offset first, log.append(batch));
#define HARK_TRY_ASSIGN(lhs, expr) \
  HARK_TRY_ASSIGN_IMPL(HARK_CONCAT(hark_try_result_, __LINE__), lhs, expr)
#define HARK_TRY_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                         \
  if (!tmp.ok()) {                           \
    return tmp.error();                      \
  }                                          \
  lhs = std::move(*tmp)
