#include "hark/core/base/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "hark/core/base/assert.h"

namespace hark::log {
namespace internal {
std::atomic<Level> current_level{Level::info};
}  // namespace internal

namespace {

// A message is formatted into message_max bytes (format_and_emit); a slot holds it with the
// longest prefix, JSON's (about 120 bytes), so a JSON line carries as much of it as a text line.
constexpr size_t slot_bytes = 1152;
static_assert(slot_bytes >= internal::message_max + 128);
constexpr size_t slots_count = 1024;  // 1.1 MiB: a burst of a thousand lines before dropping.
static_assert((slots_count & (slots_count - 1)) == 0, "slots_count must be a power of two");

thread_local char thread_name[16] = "main";
// "hark-<thread_name>" once set_thread_name ran; empty until then (os_name_of_thread()).
thread_local char os_thread_name[16] = "";
std::atomic<Format> current_format{Format::text};

constexpr char level_letter(Level level) {
  switch (level) {
    case Level::debug: return 'D';
    case Level::info: return 'I';
    case Level::warn: return 'W';
    case Level::error: return 'E';
    case Level::off: return '-';
  }
  return '?';
}

constexpr const char* level_word(Level level) {
  switch (level) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::error: return "error";
    case Level::off: return "off";
  }
  return "?";
}

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

// The name the OS knows the calling thread by: set_thread_name's, else the one it inherited
// (a process's main thread: the program's), read once.
const char* os_name_of_thread() {
  if (os_thread_name[0] == '\0') {
    (void)pthread_getname_np(pthread_self(), os_thread_name, sizeof os_thread_name);
  }
  return os_thread_name;
}

// What one line says.
struct Line {
  Level level;
  const char* file;
  int line;
  uint64_t suppressed;
  std::string_view message;
};

// snprintf's result as bytes written into out[0, size) (the terminator not counted).
size_t written(int length, size_t size) {
  return length < 0 ? 0 : std::min(static_cast<size_t>(length), size - 1);
}

// "2026-11-29T17:39:40.123456Z" (RFC 3339, UTC, microseconds).
size_t format_time(char* out, size_t size) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  ::gmtime_r(&now.tv_sec, &utc);
  return written(std::snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
                               utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                               utc.tm_min, utc.tm_sec, now.tv_nsec / 1000),
                 size);
}

size_t format_text(char* out, size_t capacity, const Line& line) {
  size_t length = format_time(out, capacity);
  length +=
      written(std::snprintf(out + length, capacity - length, " %c [%s] %s:%d ",
                            level_letter(line.level), thread_name, base_name(line.file), line.line),
              capacity - length);
  const size_t room = capacity - 1 - length;  // Keep one byte for the newline.
  const size_t copied = std::min(line.message.size(), room);
  std::memcpy(out + length, line.message.data(), copied);
  length += copied;
  if (line.suppressed > 0 && length < capacity - 1) {
    length += written(
        std::snprintf(out + length, capacity - 1 - length, " (%llu similar lines suppressed)",
                      static_cast<unsigned long long>(line.suppressed)),
        capacity - 1 - length);
  }
  out[length++] = '\n';
  return length;
}

// One JSON object and a newline. The end (`"`, the suppressed count, `}`) is written first
// into a small buffer so the message is cut to what leaves room for it: the line always parses.
size_t format_json(char* out, size_t capacity, const Line& line) {
  char end[64];
  size_t end_length = 1;
  end[0] = '"';
  if (line.suppressed > 0) {
    end_length += written(std::snprintf(end + 1, sizeof end - 1, ",\"suppressed\":%llu",
                                        static_cast<unsigned long long>(line.suppressed)),
                          sizeof end - 1);
  }
  end[end_length++] = '}';
  end[end_length++] = '\n';
  size_t length = written(std::snprintf(out, capacity, "{\"ts\":\""), capacity);
  length += format_time(out + length, capacity - length);
  length += written(std::snprintf(out + length, capacity - length,
                                  "\",\"level\":\"%s\",\"thread\":\"", level_word(line.level)),
                    capacity - length);
  length += internal::escape_json(os_name_of_thread(), out + length, capacity - length);
  length +=
      written(std::snprintf(out + length, capacity - length, "\",\"site\":\"%s:%d\",\"msg\":\"",
                            base_name(line.file), line.line),
              capacity - length);
  // The prefix is about 120 bytes of a 628-byte slot (a thread name is at most 15 bytes).
  HARK_ASSERT(length + end_length <= capacity);
  length += internal::escape_json(line.message, out + length, capacity - length - end_length);
  std::memcpy(out + length, end, end_length);
  return length + end_length;
}

size_t format_line(char* out, size_t capacity, const Line& line) {
  return log::format() == Format::json ? format_json(out, capacity, line)
                                       : format_text(out, capacity, line);
}

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF) that starts text[at], or 0 if none does.
size_t utf8_length(std::string_view text, size_t at) {
  const auto first = static_cast<uint8_t>(text[at]);
  if (first < 0x80) return 1;
  // The lead byte's high bits give the length; the rest of it starts the code point, which
  // must need that many bytes.
  struct Lead {
    uint8_t mask;
    uint8_t bits;
    size_t length;
    uint32_t least;
  };
  constexpr Lead leads[] = {
      {0xE0, 0xC0, 2, 0x80}, {0xF0, 0xE0, 3, 0x800}, {0xF8, 0xF0, 4, 0x10000}};
  const Lead* lead = nullptr;
  for (const Lead& candidate : leads) {
    if ((first & candidate.mask) == candidate.bits) lead = &candidate;
  }
  if (lead == nullptr || at + lead->length > text.size()) return 0;
  const size_t length = lead->length;
  const uint32_t least = lead->least;
  uint32_t code = first & static_cast<uint8_t>(~lead->mask);
  for (size_t i = 1; i < length; i++) {
    const auto next = static_cast<uint8_t>(text[at + i]);
    if ((next & 0xC0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3F);
  }
  if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

// The escape of an ASCII byte that JSON does not take as is, or empty.
std::string_view short_escape(char c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: return {};
  }
}

// Vyukov's bounded MPMC queue, used with one consumer. Each slot carries a sequence number:
// a producer claims position p when slot[p % n].sequence == p, writes, and publishes p + 1
// (release); the writer reads slot[p % n] once its sequence is p + 1 (acquire) and frees it for
// the next lap by storing p + n.
struct Slot {
  std::atomic<uint64_t> sequence;
  uint32_t length;
  char text[slot_bytes - sizeof(std::atomic<uint64_t>) - sizeof(uint32_t)];
};

class Logger {
 public:
  Logger() {
    for (size_t i = 0; i < slots_count; i++) slots_[i].sequence.store(i, std::memory_order_relaxed);
    std::thread([this] { run_writer(); }).detach();
    std::atexit([] { flush(); });
  }

  // Returns a claimed slot, or nullptr when the queue is full.
  Slot* claim(uint64_t& position) {
    position = enqueue_position_.load(std::memory_order_relaxed);
    while (true) {
      Slot& slot = slots_[position & (slots_count - 1)];
      const uint64_t sequence = slot.sequence.load(std::memory_order_acquire);
      if (sequence == position) {
        if (enqueue_position_.compare_exchange_weak(position, position + 1,
                                                    std::memory_order_relaxed)) {
          return &slot;
        }
      } else if (sequence < position) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      } else {
        position = enqueue_position_.load(std::memory_order_relaxed);
      }
    }
  }

  void publish(Slot& slot, uint64_t position) {
    slot.sequence.store(position + 1, std::memory_order_release);
    signal_.fetch_add(1, std::memory_order_seq_cst);
    signal_.notify_one();
  }

  void flush_until_written() {
    const uint64_t target = enqueue_position_.load(std::memory_order_acquire);
    for (int i = 0; i < 1000 && written_position_.load(std::memory_order_acquire) < target; i++) {
      signal_.fetch_add(1, std::memory_order_seq_cst);
      signal_.notify_one();
      ::usleep(1000);
    }
  }

  // Hands the writer a new sink and waits (up to a second) until it has switched, so the
  // caller may close the old one: only the writer thread ever writes, and only to `sink_`.
  void set_fd(int fd) {
    requested_fd_.store(fd, std::memory_order_relaxed);
    const uint64_t generation = requested_generation_.fetch_add(1, std::memory_order_release) + 1;
    for (int i = 0; i < 1000 && applied_generation_.load(std::memory_order_acquire) < generation;
         i++) {
      signal_.fetch_add(1, std::memory_order_seq_cst);
      signal_.notify_one();
      ::usleep(1000);
    }
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  void run_writer() {
    set_thread_name("log");
    // A sink whose reader went away (a closed pipe) must fail the write with EPIPE, not kill
    // the process with SIGPIPE: block the signal for this thread only.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    uint64_t reported_dropped = 0;
    while (true) {
      const uint32_t seen = signal_.load(std::memory_order_seq_cst);
      apply_requested_fd();
      drain();
      const uint64_t dropped_now = dropped();
      if (dropped_now != reported_dropped) {
        report_dropped(dropped_now - reported_dropped);
        reported_dropped = dropped_now;
      }
      signal_.wait(seen, std::memory_order_seq_cst);
    }
  }

  // A line of the log's own, in the format of the others.
  void report_dropped(uint64_t count) {
    char message[64];
    const int length =
        std::snprintf(message, sizeof message, "log: %llu lines dropped (queue full)",
                      static_cast<unsigned long long>(count));
    char line[sizeof(Slot::text)];
    write_all(line, format_line(line, sizeof line,
                                Line{Level::warn, __FILE__, __LINE__, 0,
                                     std::string_view(message, written(length, sizeof message))}));
  }

  void drain() {
    while (true) {
      Slot& slot = slots_[dequeue_position_ & (slots_count - 1)];
      if (slot.sequence.load(std::memory_order_acquire) != dequeue_position_ + 1) break;
      write_all(slot.text, slot.length);
      slot.sequence.store(dequeue_position_ + slots_count, std::memory_order_release);
      dequeue_position_++;
      written_position_.store(dequeue_position_, std::memory_order_release);
    }
  }

  void apply_requested_fd() {
    const uint64_t generation = requested_generation_.load(std::memory_order_acquire);
    if (generation == applied_generation_.load(std::memory_order_relaxed)) return;
    sink_ = requested_fd_.load(std::memory_order_relaxed);
    applied_generation_.store(generation, std::memory_order_release);
  }

  void write_all(const char* data, size_t size) {
    const int fd = sink_;
    while (size > 0) {
      const ssize_t written = ::write(fd, data, size);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return;  // Nowhere to report a failing log sink; drop the line.
      data += written;
      size -= static_cast<size_t>(written);
    }
  }

  std::array<Slot, slots_count> slots_;
  alignas(64) std::atomic<uint64_t> enqueue_position_{0};
  alignas(64) uint64_t dequeue_position_ = 0;  // Writer thread only.
  std::atomic<uint64_t> written_position_{0};
  alignas(64) std::atomic<uint32_t> signal_{0};
  std::atomic<uint64_t> dropped_{0};
  int sink_ = STDERR_FILENO;  // Writer thread only.
  std::atomic<int> requested_fd_{STDERR_FILENO};
  std::atomic<uint64_t> requested_generation_{0};
  std::atomic<uint64_t> applied_generation_{0};
};

// Never destroyed: threads may log while the process exits, after static destructors ran.
Logger& logger() {
  alignas(Logger) static unsigned char storage[sizeof(Logger)];
  static Logger* instance = new (storage) Logger();
  return *instance;
}

}  // namespace

bool Site::admit(uint64_t now_seconds, uint64_t& suppressed) {
  uint64_t window = window_seconds_.load(std::memory_order_relaxed);
  if (window != now_seconds &&
      window_seconds_.compare_exchange_strong(window, now_seconds, std::memory_order_relaxed)) {
    window_lines_.store(0, std::memory_order_relaxed);
  }
  if (window_lines_.fetch_add(1, std::memory_order_relaxed) >= site_lines_per_second_max) {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
  return true;
}

void set_level(Level level) { internal::current_level.store(level, std::memory_order_relaxed); }

Level level() { return internal::current_level.load(std::memory_order_relaxed); }

std::optional<Level> parse_level(std::string_view text) {
  if (text == "debug") return Level::debug;
  if (text == "info") return Level::info;
  if (text == "warn" || text == "warning") return Level::warn;
  if (text == "error") return Level::error;
  if (text == "off") return Level::off;
  return std::nullopt;
}

void set_thread_name(std::string_view name) {
  const size_t size = std::min(name.size(), sizeof thread_name - 1);
  std::memcpy(thread_name, name.data(), size);
  thread_name[size] = '\0';
  constexpr std::string_view prefix = "hark-";
  char os_name[16] = {};  // The kernel's limit: 15 characters and the terminator.
  const size_t kept = std::min(size, sizeof os_name - 1 - prefix.size());
  std::memcpy(os_name, prefix.data(), prefix.size());
  std::memcpy(os_name + prefix.size(), thread_name, kept);
  std::memcpy(os_thread_name, os_name, sizeof os_name);
  (void)pthread_setname_np(pthread_self(), os_name);
}

void set_format(Format format) { current_format.store(format, std::memory_order_relaxed); }

Format format() { return current_format.load(std::memory_order_relaxed); }

std::optional<Format> parse_format(std::string_view text) {
  if (text == "text") return Format::text;
  if (text == "json") return Format::json;
  return std::nullopt;
}

void set_output_fd(int fd) {
  flush();
  logger().set_fd(fd);
}

void flush() { logger().flush_until_written(); }

uint64_t dropped_count() { return logger().dropped(); }

namespace internal {

uint64_t coarse_now_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<uint64_t>(now.tv_sec);
}

size_t escape_json(std::string_view text, char* out, size_t size) {
  size_t length = 0;
  for (size_t at = 0; at < text.size();) {
    char escape[8];
    std::string_view piece = short_escape(text[at]);
    size_t taken = 1;
    if (piece.empty() && static_cast<uint8_t>(text[at]) < 0x20) {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(text[at]));
      piece = std::string_view(escape, 6);
    } else if (piece.empty()) {
      taken = utf8_length(text, at);
      piece = taken == 0 ? std::string_view("\\ufffd") : text.substr(at, taken);
      taken = std::max<size_t>(taken, 1);
    }
    if (length + piece.size() > size) break;
    std::memcpy(out + length, piece.data(), piece.size());
    length += piece.size();
    at += taken;
  }
  return length;
}

void emit(Level level, const char* file, int line, uint64_t suppressed, std::string_view message) {
  uint64_t position = 0;
  Slot* slot = logger().claim(position);
  if (slot == nullptr) return;
  slot->length = static_cast<uint32_t>(
      format_line(slot->text, sizeof slot->text, Line{level, file, line, suppressed, message}));
  logger().publish(*slot, position);
}

}  // namespace internal
}  // namespace hark::log
