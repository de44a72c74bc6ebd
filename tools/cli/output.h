#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/error.h"
#include "hark/protocol/message.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {

// Where the CLI reads and writes: produce reads lines from `in` (a descriptor, so a read can
// be abandoned on a stop); results go to `out`; errors and usage to `err`. main passes the
// process's own; tests pass a pipe and memory streams. Borrowed: must outlive every user.
struct Streams {
  int in = 0;
  std::FILE* out = nullptr;
  std::FILE* err = nullptr;
};

// What a failed command was about, as the user typed it, to fill the placeholders of Iggy's
// messages ("Stream with ID: {0} was not found."). Empty fields are unknown.
struct ErrorSubjects {
  std::string stream;
  std::string topic;
  std::string partition;
  std::string group;
  std::string user;
  std::string token;  // A personal access token's name.
};

// "error: StreamIdNotFound (1009): Stream with ID: 7 was not found." — Iggy's name, code and
// message (core/base/error.h), placeholders filled from `subjects` where the code says which
// subject each one is; a placeholder nobody can fill becomes "?".
std::string error_line(Error error, const ErrorSubjects& subjects);

// "Name (code)", for transport errors written around it.
std::string error_label(Error error);

// One polled message as a line (without the newline), in `format`:
// - text: the payload, with \\, \n, \r, \t, other control bytes and bytes that are not UTF-8
//   escaped (\xNN), so one message is one line;
// - hex: the payload as lowercase hex;
// - json: {"partition":P,"offset":O,"timestamp":T,"origin_timestamp":T,"id":"32 hex digits",
//   "payload":"..." (a JSON string if it is UTF-8) or "payload_hex":"...", and
//   "user_headers_hex":"..." when there are user headers}.
std::string message_line(const protocol::MessageView& message, uint32_t partition_id,
                         MessageFormat format);

std::string hex_text(std::span<const std::byte> bytes);
// `text` as a JSON string literal, quotes included. Requires: text is UTF-8.
std::string json_string(std::string_view text);

// "2026-11-29T20:51:13Z" for µs since the Unix epoch; "-" for 0.
std::string time_text(uint64_t unix_us);
// "1.5 MiB", "312 B"; "unlimited" for UINT64_MAX and "default" for 0 where `sentinels`.
std::string size_text(uint64_t bytes, bool sentinels = false);
// "never" for UINT64_MAX, "default" for 0, else a duration ("7d" is shown as "168h").
std::string expiry_text(uint64_t expiry_us);

// A table printed with aligned columns: a header row, then rows, two spaces between columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Every line ends with a newline; trailing spaces are trimmed.
  std::string text() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "key: value" lines with the values aligned.
std::string fields_text(const std::vector<std::pair<std::string, std::string>>& fields);

}  // namespace hark::cli
