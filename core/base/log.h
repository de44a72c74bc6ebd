#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <absl/strings/str_format.h>

namespace hark::log {

// A small logger for a broker's threads. One line per event with a UTC timestamp, the level,
// the thread's name and the call site, as text or as one JSON object (set_format). A caller formats
// into a slot of a bounded lock-free queue and returns; one writer thread writes the lines out, so
// a slow stderr never stalls a shard. A full queue drops the line (counted, and reported by the
// writer). Each call site is rate-limited, so a flood of bad requests becomes a few lines and a
// count of the rest.
//
//   HARK_LOG_WARN("connection %s: frame of %u bytes is over the limit", peer, size);
//
// Formats are absl::StrFormat's (checked at compile time). Every function is thread-safe.

enum class Level : uint8_t { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

void set_level(Level level);
Level level();
inline bool enabled(Level level);

// "debug", "info", "warn", "error", "off".
std::optional<Level> parse_level(std::string_view text);

// How a line is written. text: `2026-11-29T17:39:40.123456Z W [shard-7] file.cc:12 message`.
// json: one object per line, `{"ts":"2026-11-29T17:39:40.123456Z","level":"warn",
// "thread":"hark-shard-7","site":"file.cc:12","msg":"message"}` (plus `"suppressed":N` after a
// rate-limited burst); `thread` is the name the OS knows the thread by (set_thread_name), and
// the message is escaped (escape_json), so every line parses whatever the message holds.
enum class Format : uint8_t { text = 0, json = 1 };
void set_format(Format format);
Format format();
// "text", "json".
std::optional<Format> parse_format(std::string_view text);

// Names the calling thread: `name` in its log lines ("shard-2") and "hark-<name>" for the OS
// (pthread_setname_np: /proc/PID/task/*/comm, top -H, perf), so each thread of a process can
// be told apart. The OS keeps 15 characters, the log lines as many. The one way to name a
// thread: every thread hark starts calls it first; a process's main thread keeps its OS name
// (the program's, which ps, pgrep and pidof look for) unless it calls this.
void set_thread_name(std::string_view name);

// Where lines go (default: stderr). For tests and for harkd's --log-file. Flushes first.
void set_output_fd(int fd);

// Blocks until every line queued before the call is written, or one second has passed.
void flush();

// Lines dropped because the queue was full, since the process started.
uint64_t dropped_count();

// At most this many lines per call site per second; the rest are counted and reported with
// the next admitted line of that site.
inline constexpr uint32_t site_lines_per_second_max = 10;

// Per-call-site state, one static instance per HARK_LOG use.
class Site {
 public:
  // Returns false if the line is over this second's budget (and counts it). On true,
  // `suppressed` is how many lines of this site were dropped since the last admitted one.
  bool admit(uint64_t now_seconds, uint64_t& suppressed);

 private:
  std::atomic<uint64_t> window_seconds_{0};
  std::atomic<uint32_t> window_lines_{0};
  std::atomic<uint64_t> suppressed_{0};
};

namespace internal {

extern std::atomic<Level> current_level;

uint64_t coarse_now_seconds();

// Writes `text` into out[0, size) as the inside of a JSON string: `"` and `\` escaped, control
// characters as \n, \t... or \u00XX, invalid UTF-8 as \ufffd (one per byte). Stops before a
// character whose output would not fit, never splitting an escape or a UTF-8 sequence. Returns
// the bytes written. Allocates nothing.
size_t escape_json(std::string_view text, char* out, size_t size);

// The longest message a line carries (format_and_emit cuts longer ones). harkd's stats line
// is the longest message it writes (about 500 bytes, growing with its counters).
inline constexpr size_t message_max = 1000;

// Formats the prefix and `message` into a queue slot and publishes it.
void emit(Level level, const char* file, int line, uint64_t suppressed, std::string_view message);

template <typename... Args>
void format_and_emit(Site& site, Level level, const char* file, int line,
                     const absl::FormatSpec<Args...>& format, const Args&... args) {
  uint64_t suppressed = 0;
  if (!site.admit(coarse_now_seconds(), suppressed)) return;
  char buffer[message_max];
  const int length = absl::SNPrintF(buffer, sizeof buffer, format, args...);
  const size_t size = length < 0                                    ? 0
                      : static_cast<size_t>(length) < sizeof buffer ? static_cast<size_t>(length)
                                                                    : sizeof buffer - 1;
  emit(level, file, line, suppressed, std::string_view(buffer, size));
}

}  // namespace internal

inline bool enabled(Level level) {
  return level >= internal::current_level.load(std::memory_order_relaxed);
}

}  // namespace hark::log

#define HARK_LOG(level, ...)                                                           \
  do {                                                                                 \
    if (::hark::log::enabled(level)) {                                                 \
      static ::hark::log::Site hark_log_site;                                          \
      ::hark::log::internal::format_and_emit(hark_log_site, level, __FILE__, __LINE__, \
                                             __VA_ARGS__);                             \
    }                                                                                  \
  } while (0)

#define HARK_LOG_DEBUG(...) HARK_LOG(::hark::log::Level::debug, __VA_ARGS__)
#define HARK_LOG_INFO(...) HARK_LOG(::hark::log::Level::info, __VA_ARGS__)
#define HARK_LOG_WARN(...) HARK_LOG(::hark::log::Level::warn, __VA_ARGS__)
#define HARK_LOG_ERROR(...) HARK_LOG(::hark::log::Level::error, __VA_ARGS__)
