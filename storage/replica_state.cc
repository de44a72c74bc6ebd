// The replica state file (replica_state.h).
#include "hark/storage/replica_state.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <array>
#include <cstring>

#include "hark/core/base/log.h"

namespace hark::storage {
namespace {

constexpr size_t state_bytes = 40;
constexpr char magic[9] = "HARKRS01";

void put(std::array<std::byte, state_bytes>& out, size_t at, uint64_t value) {
  for (size_t i = 0; i < 8; i++) out[at + i] = std::byte((value >> (8 * i)) & 0xFF);
}

uint64_t get(const std::array<std::byte, state_bytes>& in, size_t at) {
  uint64_t value = 0;
  for (size_t i = 0; i < 8; i++) value |= uint64_t(in[at + i]) << (8 * i);
  return value;
}

std::string path_of(const std::string& directory) { return directory + "/" + replica_state_file; }

}  // namespace

std::optional<ReplicaState> load_replica_state(const std::string& directory) {
  const std::string path = path_of(directory);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::array<std::byte, state_bytes> in{};
  const ssize_t read = ::pread(fd, in.data(), in.size(), 0);
  ::close(fd);
  if (read != static_cast<ssize_t>(in.size()) || std::memcmp(in.data(), magic, 8) != 0 ||
      XXH64(in.data(), 32, 0) != get(in, 32)) {
    HARK_LOG_WARN("%s is damaged: ignored (the partition copies again what it cannot vouch for)",
                  path);
    return std::nullopt;
  }
  return ReplicaState{.epoch = get(in, 8), .epoch_start = get(in, 16), .commit = get(in, 24)};
}

Status store_replica_state(const std::string& directory, const ReplicaState& state, bool sync) {
  std::array<std::byte, state_bytes> out{};
  std::memcpy(out.data(), magic, 8);
  put(out, 8, state.epoch);
  put(out, 16, state.epoch_start);
  put(out, 24, state.commit);
  put(out, 32, XXH64(out.data(), 32, 0));
  const std::string path = path_of(directory);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Error::cannot_write_to_file;
  const bool written = ::pwrite(fd, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size());
  const bool synced = written && (!sync || ::fdatasync(fd) == 0);
  ::close(fd);
  if (!written) return Error::cannot_write_to_file;
  if (!synced) return Error::cannot_sync_file;
  return ok_status();
}

}  // namespace hark::storage
