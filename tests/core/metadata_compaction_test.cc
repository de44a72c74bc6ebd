// metadata.log compaction through the Broker (BrokerOptions::metadata_snapshot_entries,
// docs/storage-format.md §Metadata log): a loop of creates and deletes keeps the file under a
// bound that does not grow with the loop, and a restart rebuilds the same catalog with its id
// counters; a crash at each step of a compaction (the .tmp cut short, the .tmp whole but not
// renamed, the rename done) leaves a file that opens to the same catalog. The crash states are
// made on disk from the files a finished compaction and an uncompacted run leave.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"

namespace hark::core {
namespace {

namespace fs = std::filesystem;

class MetadataCompaction : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("hark_compaction_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    stop();
    fs::remove_all(root_);
  }

  void start(const fs::path& directory, uint64_t snapshot_entries) {
    BrokerOptions options;
    options.data_directory = directory.string();
    options.shards_count = 2;
    options.metadata_snapshot_entries = snapshot_entries;
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();
  }
  void stop() {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
  }

  Result<uint32_t> create_stream(const std::string& name) {
    Blocking<CreateStream> create;
    create.name = name;
    HARK_TRY(create.call(*broker_));
    return create.stream.id;
  }
  Status delete_stream(uint32_t id) {
    Blocking<DeleteStream> remove;
    remove.stream = NameOrId::id(id);
    return remove.call(*broker_);
  }
  // "id name created_at" of every stream, by id.
  std::vector<std::string> streams() {
    Blocking<GetStreams> get;
    EXPECT_TRUE(get.call(*broker_).ok());
    std::vector<std::string> lines;
    for (const StreamInfo& stream : get.streams) {
      lines.push_back(std::to_string(stream.id) + " " + stream.name + " " +
                      std::to_string(stream.created_at));
    }
    return lines;
  }

  fs::path root_;
  std::unique_ptr<Broker> broker_;
};

std::vector<char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::vector<char>& bytes, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(size));
}

TEST_F(MetadataCompaction, CreateDeleteLoopKeepsTheLogBoundedAndARestartTheCatalog) {
  constexpr uint64_t bound_entries = 16;
  constexpr int loops = 200;  // 400 entries: about 14 KiB uncompacted.
  const fs::path data = root_ / "data";
  start(data, bound_entries);
  ASSERT_EQ(*create_stream("kept"), 0u);
  Blocking<CreateTopic> topic;
  topic.stream = NameOrId::id(0);
  topic.name = "events";
  topic.settings.partitions_count = 3;
  ASSERT_TRUE(topic.call(*broker_).ok());
  Blocking<CreateConsumerGroup> group;
  group.stream = NameOrId::id(0);
  group.topic = NameOrId::id(0);
  group.name = "readers";
  ASSERT_TRUE(group.call(*broker_).ok());

  uintmax_t largest = 0;
  for (int i = 0; i < loops; i++) {
    const auto id = create_stream("passing");
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(delete_stream(*id).ok());
    largest = std::max(largest, fs::file_size(data / "metadata.log"));
  }
  // A snapshot of one stream, topic and group, and at most bound + 1 entries of ~40 bytes:
  // the same bound for any number of loops.
  EXPECT_LT(largest, 2048u);
  const std::vector<std::string> before = streams();
  stop();

  start(data, bound_entries);
  EXPECT_EQ(streams(), before);
  Blocking<GetConsumerGroup> get;
  get.stream = NameOrId::id(0);
  get.topic = NameOrId::id(0);
  get.group = NameOrId::name("readers").value();
  ASSERT_TRUE(get.call(*broker_).ok());
  ASSERT_TRUE(get.result.has_value());
  EXPECT_EQ(get.result->group.partitions_count, 3u);
  // Ids deleted before the snapshot are not given again.
  EXPECT_EQ(*create_stream("next"), static_cast<uint32_t>(loops + 1));
}

TEST_F(MetadataCompaction, ACrashAtEachStepLeavesALogThatOpensToTheSameCatalog) {
  const fs::path uncompacted = root_ / "uncompacted";
  start(uncompacted, 0);
  for (int i = 0; i < 10; i++) ASSERT_TRUE(create_stream("s" + std::to_string(i)).ok());
  ASSERT_TRUE(delete_stream(3).ok());
  const std::vector<std::string> expected = streams();
  stop();
  const std::vector<char> old_log = read_file(uncompacted / "metadata.log");

  // A compaction runs before the next command, even one that is refused.
  const fs::path compacted = root_ / "compacted";
  fs::copy(uncompacted, compacted, fs::copy_options::recursive);
  start(compacted, 4);
  EXPECT_EQ(create_stream("s0").error(), Error::stream_name_already_exists);
  EXPECT_EQ(streams(), expected);
  stop();
  const std::vector<char> new_log = read_file(compacted / "metadata.log");
  // The header (16 bytes), then one record whose payload (after its 8-byte framing) is a
  // snapshot (kind 16) and nothing else.
  ASSERT_GT(new_log.size(), 24u);
  ASSERT_EQ(new_log[24], 16);
  ASSERT_NE(new_log, old_log);
  ASSERT_FALSE(fs::exists(compacted / "metadata.log.tmp"));

  struct CrashState {
    const char* name;
    const std::vector<char>* log;
    size_t tmp_bytes;  // Of new_log, written to metadata.log.tmp (0: none).
  };
  const CrashState states[] = {
      {"the .tmp cut short", &old_log, new_log.size() / 2},
      {"the .tmp whole, not renamed", &old_log, new_log.size()},
      {"renamed", &new_log, 0},
  };
  for (const CrashState& state : states) {
    SCOPED_TRACE(state.name);
    const fs::path data = root_ / "crash";
    fs::remove_all(data);
    fs::create_directories(data);
    write_file(data / "metadata.log", *state.log, state.log->size());
    if (state.tmp_bytes != 0) write_file(data / "metadata.log.tmp", new_log, state.tmp_bytes);
    start(data, 4);
    EXPECT_EQ(streams(), expected);
    EXPECT_FALSE(fs::exists(data / "metadata.log.tmp"));
    EXPECT_EQ(*create_stream("s10"), 10u);
    stop();
  }
}

}  // namespace
}  // namespace hark::core
