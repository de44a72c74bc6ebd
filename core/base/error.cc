#include "hark/core/base/error.h"

#include <algorithm>
#include <array>

namespace hark {
namespace {

struct ErrorInfo {
  uint32_t code;
  std::string_view name;
  std::string_view message;
};

constexpr auto make_table() {
  std::array table = {
#define HARK_ERROR(name, code, iggy_name, message) ErrorInfo{code, iggy_name, message},
#include "hark/core/base/error_codes.inc"
#undef HARK_ERROR
  };
  std::sort(table.begin(), table.end(),
            [](const ErrorInfo& a, const ErrorInfo& b) { return a.code < b.code; });
  return table;
}

constexpr auto error_table = make_table();

const ErrorInfo* find(uint32_t code) {
  const auto* it = std::lower_bound(error_table.begin(), error_table.end(), code,
                                    [](const ErrorInfo& e, uint32_t c) { return e.code < c; });
  return it != error_table.end() && it->code == code ? it : nullptr;
}

}  // namespace

std::string_view error_name(Error error) {
  const ErrorInfo* info = find(error_code(error));
  return info != nullptr ? info->name : "Unknown";
}

std::string_view error_message(Error error) {
  const ErrorInfo* info = find(error_code(error));
  return info != nullptr ? info->message : "Unknown error";
}

bool error_known(uint32_t code) { return find(code) != nullptr; }

}  // namespace hark
