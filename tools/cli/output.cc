#include "hark/tools/cli/output.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <limits>

#include "hark/protocol/primitives.h"

namespace hark::cli {
namespace {

using Subject = std::string ErrorSubjects::*;

// Which subject fills each placeholder of the codes whose messages name what the CLI asked
// about. Iggy's messages are not consistent in their order (3007 names the partition, the
// topic, then the stream), hence a table rather than a rule.
struct SubjectOrder {
  Error error;
  std::array<Subject, 3> subjects;
};
constexpr std::array<SubjectOrder, 19> subject_orders = {{
    {Error::resource_not_found, {&ErrorSubjects::user}},
    {Error::stream_id_not_found, {&ErrorSubjects::stream}},
    {Error::stream_name_not_found, {&ErrorSubjects::stream}},
    {Error::stream_name_already_exists, {&ErrorSubjects::stream}},
    {Error::topic_id_not_found, {&ErrorSubjects::topic, &ErrorSubjects::stream}},
    {Error::topic_name_not_found, {&ErrorSubjects::topic, &ErrorSubjects::stream}},
    {Error::topic_name_already_exists, {&ErrorSubjects::topic, &ErrorSubjects::stream}},
    {Error::no_partitions, {&ErrorSubjects::topic, &ErrorSubjects::stream}},
    {Error::partition_not_found,
     {&ErrorSubjects::partition, &ErrorSubjects::topic, &ErrorSubjects::stream}},
    {Error::consumer_group_id_not_found, {&ErrorSubjects::group, &ErrorSubjects::topic}},
    {Error::consumer_group_name_not_found, {&ErrorSubjects::group, &ErrorSubjects::topic}},
    {Error::consumer_group_name_already_exists, {&ErrorSubjects::group, &ErrorSubjects::topic}},
    {Error::consumer_group_member_not_found,
     {nullptr, &ErrorSubjects::group, &ErrorSubjects::topic}},
    {Error::cannot_delete_user, {&ErrorSubjects::user}},
    {Error::cannot_change_permissions, {&ErrorSubjects::user}},
    {Error::personal_access_token_already_exists, {&ErrorSubjects::token, &ErrorSubjects::user}},
    {Error::personal_access_token_expired, {&ErrorSubjects::token, &ErrorSubjects::user}},
    {Error::personal_access_tokens_limit_reached, {&ErrorSubjects::user}},
    {Error::client_not_found, {}},
}};

std::string fill_placeholders(std::string_view message, Error error,
                              const ErrorSubjects& subjects) {
  std::array<Subject, 3> order{};
  for (const SubjectOrder& entry : subject_orders) {
    if (entry.error == error) order = entry.subjects;
  }
  std::string text;
  while (!message.empty()) {
    const size_t open = message.find('{');
    const size_t close = message.find('}', open == std::string_view::npos ? 0 : open);
    if (open == std::string_view::npos || close == std::string_view::npos) break;
    text.append(message.substr(0, open));
    const std::string_view index = message.substr(open + 1, close - open - 1);
    const size_t slot = index.size() == 1 && index[0] >= '0' && index[0] <= '2'
                            ? static_cast<size_t>(index[0] - '0')
                            : order.size();
    const std::string* subject =
        slot < order.size() && order[slot] != nullptr ? &(subjects.*order[slot]) : nullptr;
    text.append(subject != nullptr && !subject->empty() ? *subject : "?");
    message.remove_prefix(close + 1);
  }
  text.append(message);
  return text;
}

void append_escaped_byte(std::string& text, unsigned char byte) {
  switch (byte) {
    case '\\': text += "\\\\"; return;
    case '\n': text += "\\n"; return;
    case '\r': text += "\\r"; return;
    case '\t': text += "\\t"; return;
    default: break;
  }
  if (byte < 0x20 || byte == 0x7f) {
    std::array<char, 5> escaped;
    std::snprintf(escaped.data(), escaped.size(), "\\x%02x", byte);
    text += escaped.data();
  } else {
    text.push_back(static_cast<char>(byte));
  }
}

// The payload as one line: escapes for control bytes; and when the payload is not UTF-8,
// every byte ≥ 0x80 escaped too, so a terminal never sees a broken sequence.
std::string text_line(std::span<const std::byte> payload) {
  const bool utf8 = protocol::valid_utf8(payload);
  std::string text;
  text.reserve(payload.size());
  for (const std::byte byte : payload) {
    const auto value = static_cast<unsigned char>(byte);
    if (!utf8 && value >= 0x80) {
      std::array<char, 5> escaped;
      std::snprintf(escaped.data(), escaped.size(), "\\x%02x", value);
      text += escaped.data();
    } else {
      append_escaped_byte(text, value);
    }
  }
  return text;
}

std::string json_line(const protocol::MessageView& message, uint32_t partition_id) {
  std::array<char, 33> id;
  std::snprintf(id.data(), id.size(), "%016" PRIx64 "%016" PRIx64, message.id().high,
                message.id().low);
  std::string json = "{\"partition\":" + std::to_string(partition_id) +
                     ",\"offset\":" + std::to_string(message.offset()) +
                     ",\"timestamp\":" + std::to_string(message.timestamp()) +
                     ",\"origin_timestamp\":" + std::to_string(message.origin_timestamp()) +
                     ",\"id\":\"" + id.data() + "\"";
  const std::span<const std::byte> payload = message.payload();
  if (protocol::valid_utf8(payload)) {
    json += ",\"payload\":" + json_string(protocol::as_chars(payload));
  } else {
    json += ",\"payload_hex\":\"" + hex_text(payload) + "\"";
  }
  if (!message.user_headers().empty()) {
    json += ",\"user_headers_hex\":\"" + hex_text(message.user_headers()) + "\"";
  }
  json += "}";
  return json;
}

}  // namespace

std::string error_label(Error error) {
  return std::string(error_name(error)) + " (" + std::to_string(error_code(error)) + ")";
}

std::string error_line(Error error, const ErrorSubjects& subjects) {
  return "error: " + error_label(error) + ": " +
         fill_placeholders(error_message(error), error, subjects);
}

std::string message_line(const protocol::MessageView& message, uint32_t partition_id,
                         MessageFormat format) {
  switch (format) {
    case MessageFormat::text: return text_line(message.payload());
    case MessageFormat::hex: return hex_text(message.payload());
    case MessageFormat::json: return json_line(message, partition_id);
  }
  HARK_UNREACHABLE();
}

std::string hex_text(std::span<const std::byte> bytes) {
  constexpr std::string_view digits = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const std::byte byte : bytes) {
    const auto value = static_cast<unsigned char>(byte);
    text.push_back(digits[value >> 4]);
    text.push_back(digits[value & 0xf]);
  }
  return text;
}

std::string json_string(std::string_view text) {
  std::string json = "\"";
  for (const char c : text) {
    const auto value = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      json.push_back('\\');
      json.push_back(c);
    } else if (c == '\n') {
      json += "\\n";
    } else if (c == '\r') {
      json += "\\r";
    } else if (c == '\t') {
      json += "\\t";
    } else if (value < 0x20 || value == 0x7f) {
      std::array<char, 7> escaped;
      std::snprintf(escaped.data(), escaped.size(), "\\u%04x", value);
      json += escaped.data();
    } else {
      json.push_back(c);
    }
  }
  json.push_back('"');
  return json;
}

std::string time_text(uint64_t unix_us) {
  if (unix_us == 0) return "-";
  const auto seconds = static_cast<time_t>(unix_us / 1'000'000);
  tm utc{};
  if (gmtime_r(&seconds, &utc) == nullptr) return std::to_string(unix_us) + "us";
  std::array<char, 32> text;
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text.data();
}

std::string size_text(uint64_t bytes, bool sentinels) {
  if (sentinels && bytes == 0) return "default";
  if (sentinels && bytes == std::numeric_limits<uint64_t>::max()) return "unlimited";
  if (bytes < 1024) return std::to_string(bytes) + " B";
  constexpr std::array<std::string_view, 5> units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  auto value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < units.size()) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text;
  std::snprintf(text.data(), text.size(), "%.1f %s", value, units[unit].data());
  return text.data();
}

std::string expiry_text(uint64_t expiry_us) {
  if (expiry_us == 0) return "default";
  if (expiry_us == std::numeric_limits<uint64_t>::max()) return "never";
  if (expiry_us > uint64_t{INT64_MAX} / 1000) return std::to_string(expiry_us) + "us";
  return duration_text(Microseconds(static_cast<int64_t>(expiry_us)));
}

std::string Table::text() const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  std::string text;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size()) line.append(widths[column] - row[column].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

std::string fields_text(const std::vector<std::pair<std::string, std::string>>& fields) {
  size_t width = 0;
  for (const auto& [key, value] : fields) width = std::max(width, key.size());
  std::string text;
  for (const auto& [key, value] : fields) {
    text += key + ":" + std::string(width - key.size() + 1, ' ') + value + "\n";
  }
  return text;
}

}  // namespace hark::cli
