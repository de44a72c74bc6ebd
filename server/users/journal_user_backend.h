#pragma once

#include <memory>
#include <string>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/server/users/user_backend.h"
#include "hark/storage/record_file.h"

namespace hark::server {

// The single node's users: <data>/users.log, a storage::RecordFile with magic "HARKUSER", one
// record per UserChange (docs/storage-format.md §Users log), each written and fdatasynced
// before persist() returns. Replayed whole at open; a torn last record is cut off there.
class JournalUserBackend final : public UserBackend {
 public:
  // Opens (creating) `path` and replays it. Blocking: at start only. Errors: those of
  // RecordFile::open, state_file_corrupted for a record that does not decode or does not
  // apply (deletes an unknown user, names an unknown user's token).
  static Result<std::unique_ptr<JournalUserBackend>> open(const std::string& path);

  Result<Ref<UserTable>> load(UserPublisher& publisher) override;
  Result<Persisted> persist(const UserChange& change, uint64_t base_version) override;
  std::string where() const override { return path_; }

 private:
  JournalUserBackend(storage::RecordFile file, Ref<UserTable> replayed, std::string path);

  storage::RecordFile file_;
  Ref<UserTable> replayed_;  // What open() read; handed over by load().
  UserPublisher* publisher_ = nullptr;
  const std::string path_;
};

}  // namespace hark::server
