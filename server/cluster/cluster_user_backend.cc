#include "hark/server/cluster/cluster_user_backend.h"

#include <future>
#include <vector>

#include "hark/core/base/log.h"
#include "hark/core/broker/catalog_operations.h"
#include "hark/server/users/user_codec.h"

namespace hark::server::cluster {
namespace {

// One change on its way through shard 0's metadata Coordinator; persist() waits for its
// answer. It frees itself when answered (the broker touches it no more then).
class UserEntry final : public core::JournalExtension {
 public:
  std::future<Status> answer() { return answered_.get_future(); }
  void done() override {
    answered_.set_value(status());
    delete this;
  }

 private:
  std::promise<Status> answered_;
};

}  // namespace

Result<Ref<UserTable>> ClusterUserBackend::load(UserPublisher& publisher) {
  publisher_ = &publisher;
  return make_ref<UserTable>();
}

Result<UserBackend::Persisted> ClusterUserBackend::persist(const UserChange& change,
                                                           uint64_t base_version) {
  core::Broker* const broker = broker_.load(std::memory_order_acquire);
  if (broker == nullptr) return Error::feature_unavailable;
  bool stale = false;
  auto* const entry = new UserEntry();
  std::future<Status> answered = entry->answer();
  // On shard 0, after every entry before this one was applied (and published); never after
  // the answer.
  entry->build = [&]() -> Result<std::vector<std::byte>> {
    if (publisher_->version() != base_version) {
      stale = true;
      return Error::invalid_command;  // Not seen: persist() answers stale.
    }
    std::vector<std::byte> record{record_tag};
    encode_change(record, change);
    return record;
  };
  broker->submit(*entry);
  const Status status = answered.get();
  if (stale) return Persisted::stale;
  HARK_TRY(status);
  return Persisted::stored;  // Published by applied() before the entry was answered.
}

void ClusterUserBackend::snapshot(std::vector<std::vector<std::byte>>& records) const {
  if (publisher_ == nullptr) return;
  for (const UserChange& change : changes_rebuilding(*publisher_->table())) {
    std::vector<std::byte>& record = records.emplace_back(1, record_tag);
    encode_change(record, change);
  }
}

void ClusterUserBackend::applied(std::span<const std::byte> record) {
  if (record.empty() || record.front() != record_tag) {
    HARK_LOG_ERROR("cluster: a metadata entry holds a record this harkd does not know; ignored");
    return;
  }
  const Result<UserChange> change = decode_change(record.subspan(1));
  if (!change.ok()) {
    HARK_LOG_ERROR("cluster: a user change in the metadata journal does not decode; ignored");
    return;
  }
  publisher_->publish(*change);
}

}  // namespace hark::server::cluster
