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

constexpr size_t slot_bytes = 512;
constexpr size_t slots_count = 1024;  // 512 KiB: a burst of a thousand lines before dropping.
static_assert((slots_count & (slots_count - 1)) == 0, "slots_count must be a power of two");

thread_local char thread_name[16] = "main";

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
        char line[96];
        const int length =
            std::snprintf(line, sizeof line, "log: %llu lines dropped (queue full)\n",
                          static_cast<unsigned long long>(dropped_now - reported_dropped));
        write_all(line, static_cast<size_t>(length));
        reported_dropped = dropped_now;
      }
      signal_.wait(seen, std::memory_order_seq_cst);
    }
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

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

size_t format_prefix(char* out, size_t size, Level level, const char* file, int line) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  ::gmtime_r(&now.tv_sec, &utc);
  const int length = std::snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %c [%s] %s:%d ",
                                   utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                                   utc.tm_min, utc.tm_sec, now.tv_nsec / 1000, level_letter(level),
                                   thread_name, base_name(file), line);
  return length < 0 ? 0 : std::min(static_cast<size_t>(length), size - 1);
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
  (void)pthread_setname_np(pthread_self(), os_name);
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

void emit(Level level, const char* file, int line, uint64_t suppressed, std::string_view message) {
  uint64_t position = 0;
  Slot* slot = logger().claim(position);
  if (slot == nullptr) return;
  const size_t capacity = sizeof slot->text;
  size_t length = format_prefix(slot->text, capacity, level, file, line);
  const size_t room = capacity - 1 - length;  // Keep one byte for the newline.
  const size_t copied = std::min(message.size(), room);
  std::memcpy(slot->text + length, message.data(), copied);
  length += copied;
  if (suppressed > 0 && length < capacity - 1) {
    const int extra = std::snprintf(slot->text + length, capacity - 1 - length,
                                    " (%llu similar lines suppressed)",
                                    static_cast<unsigned long long>(suppressed));
    if (extra > 0) length = std::min(length + static_cast<size_t>(extra), capacity - 1);
  }
  slot->text[length++] = '\n';
  slot->length = static_cast<uint32_t>(length);
  logger().publish(*slot, position);
}

}  // namespace internal
}  // namespace hark::log
