#include "hark/server/users/journal_user_backend.h"

#include <utility>
#include <vector>

#include "hark/server/users/user_codec.h"

namespace hark::server {
namespace {

constexpr std::string_view magic = "HARKUSER";
constexpr uint32_t format_version = 1;

// A record that does not decode whole, or does not apply, is damage.
Status replay_one(std::span<const std::byte> payload, UserTable& table) {
  const Result<UserChange> change = decode_change(payload);
  if (!change.ok() || !apply_change(table, *change).ok()) return Error::state_file_corrupted;
  return ok_status();
}

}  // namespace

JournalUserBackend::JournalUserBackend(storage::RecordFile file, Ref<UserTable> replayed,
                                       std::string path)
    : file_(std::move(file)), replayed_(std::move(replayed)), path_(std::move(path)) {}

Result<std::unique_ptr<JournalUserBackend>> JournalUserBackend::open(const std::string& path) {
  Ref<UserTable> table = make_ref<UserTable>();
  HARK_TRY_ASSIGN(storage::RecordFile file,
                  storage::RecordFile::open(path, magic, format_version,
                                            [&table](std::span<const std::byte> payload) {
                                              return replay_one(payload, *table);
                                            }));
  return std::unique_ptr<JournalUserBackend>(
      new JournalUserBackend(std::move(file), std::move(table), path));
}

Result<Ref<UserTable>> JournalUserBackend::load(UserPublisher& publisher) {
  if (!replayed_) return Error::error;  // Loaded once, by UserStore::open.
  publisher_ = &publisher;
  return std::exchange(replayed_, nullptr);
}

Result<UserBackend::Persisted> JournalUserBackend::persist(const UserChange& change,
                                                           uint64_t /*base_version*/) {
  std::vector<std::byte> records;
  const size_t start = storage::begin_record(records);
  encode_change(records, change);
  storage::finish_record(records, start);
  HARK_TRY(file_.append_now(records));
  publisher_->publish(change);
  return Persisted::stored;
}

}  // namespace hark::server
