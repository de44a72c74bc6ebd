#include "hark/tests/protocol/test_bytes.h"

#include <gtest/gtest.h>

namespace hark::protocol::test {
namespace {

int digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Bytes hex(std::string_view text) {
  Bytes bytes;
  int high = -1;
  for (const char c : text) {
    if (c == ' ' || c == '|' || c == '\n') continue;
    const int value = digit(c);
    EXPECT_GE(value, 0) << "not a hex digit: " << c;
    if (high < 0) {
      high = value;
    } else {
      bytes.push_back(static_cast<std::byte>(high * 16 + value));
      high = -1;
    }
  }
  EXPECT_LT(high, 0) << "odd number of hex digits";
  return bytes;
}

std::string to_hex(std::span<const std::byte> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  for (const std::byte b : bytes) {
    const auto value = std::to_integer<unsigned>(b);
    text.push_back(digits[value >> 4]);
    text.push_back(digits[value & 15]);
  }
  return text;
}

Bytes text_bytes(std::string_view text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(data, data + text.size());
}

}  // namespace hark::protocol::test
