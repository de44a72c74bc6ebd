// Covers what harkd does with files, file descriptors, its port and its threads against a
// hostile neighbour or operator: every file and directory it creates under the data directory
// is private (0600 / 0700) after streams, topics, partitions, sends and stored offsets; ten
// immediate restarts after SIGKILL on one fixed port each start and serve the data; a second
// harkd on the same data directory, or on the same port with another data directory, is
// refused with a message; threads are named by role (/proc/PID/task/*/comm); under a low
// RLIMIT_NOFILE, partitions past the open-file budget are refused with TooManyPartitions (2015)
// while clients are still accepted, and a restart serves every partition created; and sealed
// segments hold no file descriptor (/proc/PID/fd).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-files-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    data_ = directory_ + "/data";  // harkd creates it.
  }
  void TearDown() override {
    if (HasFailure() && harkd_ != nullptr) std::cerr << harkd_->stderr_tail();
    harkd_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  HarkdProcess::Options options(std::vector<std::string> args = {}) const {
    HarkdProcess::Options o;
    o.harkd_path = harkd_path();
    o.data_directory = data_;
    o.extra_args = std::move(args);
    return o;
  }

  // (Re)starts harkd on the test's data directory and logs a client in.
  void start(const HarkdProcess::Options& o) {
    harkd_ = std::make_unique<HarkdProcess>();
    ASSERT_TRUE(harkd_->start(o)) << harkd_->error_text() << "\n" << harkd_->stderr_tail();
    client_ = connect();
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<client::Client> connect() const {
    auto client = std::make_unique<client::Client>();
    if (!client->connect(harkd_->address()).ok()) return nullptr;
    if (!client->login("iggy", "iggy").ok()) return nullptr;
    return client;
  }

  Status create_topic(const std::string& name, uint32_t partitions) {
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(0);
    topic.partitions_count = partitions;
    topic.name = name;
    const auto created = client_->create_topic(topic);
    return created.ok() ? ok_status() : Status(created.error());
  }

  Status send(uint32_t topic, uint32_t partition, const std::string& text) {
    const protocol::Bytes payload = bytes_of(text);
    const protocol::OutgoingMessage message{.payload = payload};
    return client_->send_messages({.stream_id = Identifier::numeric(0),
                                   .topic_id = Identifier::numeric(topic),
                                   .partitioning = protocol::Partitioning::partition(partition)},
                                  {&message, 1});
  }

  // Every payload of a partition from offset 0, in pages (a poll stops at a segment's end).
  std::vector<std::string> read_payloads(uint32_t topic, uint32_t partition) {
    std::vector<std::string> all;
    while (true) {
      protocol::PollMessagesRequest request =
          poll_request(1, partition, offset_strategy(all.size()), 1000, 0us);
      request.topic_id = Identifier::numeric(topic);
      const auto polled = client_->poll_messages(request);
      EXPECT_TRUE(polled.ok()) << error_name(polled.error());
      if (!polled.ok() || polled->messages().count() == 0) return all;
      for (std::string& payload : payloads_of(polled->messages())) all.push_back(payload);
    }
  }

  size_t open_files() const {
    size_t count = 0;
    std::error_code error;
    for (std::filesystem::directory_iterator
             it("/proc/" + std::to_string(harkd_->pid()) + "/fd", error),
         end;
         !error && it != end; it.increment(error)) {
      count++;
    }
    return count;
  }

  std::string directory_;
  std::string data_;
  std::unique_ptr<HarkdProcess> harkd_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(HostileFiles, EveryFileAndDirectoryUnderTheDataDirectoryIsPrivate) {
  ASSERT_NO_FATAL_FAILURE(start(options({"--segment-size", "4KiB"})));
  ASSERT_TRUE(client_->create_stream({.name = "s"}).ok());
  ASSERT_TRUE(create_topic("t", 2).ok());
  ASSERT_TRUE(client_
                  ->create_partitions({.stream_id = Identifier::numeric(0),
                                       .topic_id = Identifier::numeric(0),
                                       .partitions_count = 1})
                  .ok());
  for (uint32_t i = 0; i < 20; i++) ASSERT_TRUE(send(0, i % 3, std::string(1000, 'x')).ok());
  ASSERT_TRUE(client_
                  ->store_consumer_offset({.consumer = {.id = Identifier::numeric(7)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = 0,
                                           .offset = 3})
                  .ok());
  const ProcessExit stopped = harkd_->stop();  // Everything written out.
  EXPECT_TRUE(stopped.clean()) << describe(stopped);

  std::set<std::string> names;
  const auto mode_of = [](const std::filesystem::path& path) {
    struct stat info {};
    EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
  };
  EXPECT_EQ(mode_of(data_), 0700u);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data_)) {
    names.insert(entry.path().filename().string());
    const unsigned want = entry.is_directory() ? 0700u : 0600u;
    EXPECT_EQ(mode_of(entry.path()), want) << entry.path();
  }
  // What the walk must have seen for the test to mean anything.
  for (const char* name : {"metadata.log", "users.log", "harkd.lock", "consumer_offsets",
                           "00000000000000000000.log", "00000000000000000000.index"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

TEST_F(HostileFiles, TenImmediateRestartsAfterSigkillOnOnePortEachStartAndServe) {
  ASSERT_NO_FATAL_FAILURE(start(options()));
  const std::string fixed = harkd_->address();
  ASSERT_TRUE(client_->create_stream({.name = "s"}).ok());
  ASSERT_TRUE(create_topic("t", 1).ok());
  std::vector<std::string> sent;
  for (uint32_t round = 0; round < 10; round++) {
    sent.push_back("round " + std::to_string(round));
    ASSERT_TRUE(send(0, 0, sent.back()).ok());
    ASSERT_TRUE(client_
                    ->flush_unsaved_buffer({.stream_id = Identifier::numeric(0),
                                            .topic_id = Identifier::numeric(0),
                                            .partition_id = 0,
                                            .fsync = false})
                    .ok());
    // Connections open at the kill leave sockets behind on the port.
    std::vector<std::unique_ptr<client::Client>> others;
    for (int i = 0; i < 4; i++) others.push_back(connect());
    harkd_->signal(SIGKILL);
    client_.reset();
    ASSERT_NO_FATAL_FAILURE(start(options({"--address", fixed})))
        << "restart " << round + 1 << " after SIGKILL";
    EXPECT_EQ(harkd_->address(), fixed);
    EXPECT_EQ(read_payloads(0, 0), sent) << "restart " << round + 1;
  }
}

TEST_F(HostileFiles, ASecondHarkdOnTheDataDirectoryOrThePortIsRefused) {
  ASSERT_NO_FATAL_FAILURE(start(options()));
  const std::string fixed = harkd_->address();

  HarkdProcess same_directory;
  HarkdProcess::Options o = options();
  o.ready_timeout = 10s;
  EXPECT_FALSE(same_directory.start(o));
  EXPECT_NE(same_directory.stderr_tail().find("in use by another harkd (pid " +
                                              std::to_string(harkd_->pid()) + ")"),
            std::string::npos)
      << same_directory.stderr_tail();

  HarkdProcess same_port;
  o.data_directory = directory_ + "/other";
  o.extra_args = {"--address", fixed};
  EXPECT_FALSE(same_port.start(o));
  EXPECT_NE(same_port.stderr_tail().find("is in use by another harkd"), std::string::npos)
      << same_port.stderr_tail();

  EXPECT_TRUE(client_->ping().ok()) << "the first harkd is untouched";
  EXPECT_NE(connect(), nullptr);
}

TEST_F(HostileFiles, ThreadsAreNamedByRole) {
  ASSERT_NO_FATAL_FAILURE(start(options({"--auth-threads", "2"})));
  const std::string tasks = "/proc/" + std::to_string(harkd_->pid()) + "/task";
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("iou-", 0) == 0) continue;  // io_uring's workers: the kernel's names.
    const bool main_thread = task.path().filename() == std::to_string(harkd_->pid());
    if (main_thread) {
      EXPECT_EQ(name, "harkd") << "the main thread keeps the program's name (pgrep)";
      continue;
    }
    names.insert(name);
  }
  const std::multiset<std::string> expected = {"hark-shard-0", "hark-shard-1", "hark-auth-0",
                                               "hark-auth-1", "hark-log"};
  EXPECT_EQ(names, expected);
}

// 288 files for harkd itself with 2 shards (256 + 16 per shard), 20 connections, then 7 files
// per partition: 10 partitions fit under 378.
constexpr uint64_t budget_nofile = 288 + 20 + 7 * 10;

TEST_F(HostileFiles, PartitionsPastTheOpenFileBudgetAreRefusedAndARestartServesThemAll) {
  HarkdProcess::Options o = options({"--connections-max", "20"});
  o.open_files_max = budget_nofile;
  ASSERT_NO_FATAL_FAILURE(start(o));
  ASSERT_TRUE(client_->create_stream({.name = "s"}).ok());
  ASSERT_TRUE(create_topic("a", 8).ok());
  EXPECT_EQ(create_topic("b", 3).error(), Error::too_many_partitions);
  const protocol::CreatePartitionsRequest two{.stream_id = Identifier::numeric(0),
                                              .topic_id = Identifier::numeric(0),
                                              .partitions_count = 2};
  ASSERT_TRUE(client_->create_partitions(two).ok());
  EXPECT_EQ(client_
                ->create_partitions({.stream_id = Identifier::numeric(0),
                                     .topic_id = Identifier::numeric(0),
                                     .partitions_count = 1})
                .error(),
            Error::too_many_partitions);
  // Clients are still accepted up to connections_max.
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int i = 0; i < 15; i++) {
    clients.push_back(connect());
    ASSERT_NE(clients.back(), nullptr) << "client " << i;
  }
  clients.clear();
  for (uint32_t p = 0; p < 10; p++) ASSERT_TRUE(send(0, p, "p" + std::to_string(p)).ok());
  ASSERT_TRUE(harkd_->stop().clean());
  EXPECT_NE(harkd_->stderr_tail(200).find("raise the open-file limit"), std::string::npos);

  ASSERT_NO_FATAL_FAILURE(start(o));
  for (uint32_t p = 0; p < 10; p++) {
    EXPECT_EQ(read_payloads(0, p), std::vector<std::string>{"p" + std::to_string(p)});
  }
  EXPECT_EQ(create_topic("c", 1).error(), Error::too_many_partitions);
  ASSERT_TRUE(harkd_->stop().clean());

  // A lower limit than the partitions were created under: harkd still starts, with fewer
  // connections, and says so.
  o.open_files_max = budget_nofile - 15;
  ASSERT_NO_FATAL_FAILURE(start(o));
  EXPECT_EQ(read_payloads(0, 9), std::vector<std::string>{"p9"});
  EXPECT_NE(harkd_->stderr_tail(200).find("leave room for 5 connections only"), std::string::npos);
  ASSERT_TRUE(harkd_->stop().clean());

  // Not even one connection left: a clear refusal.
  o.open_files_max = 288 + 7 * 10;
  HarkdProcess too_low;
  o.ready_timeout = 10s;
  EXPECT_FALSE(too_low.start(o));
  EXPECT_NE(too_low.stderr_tail().find("the 10 partitions in"), std::string::npos)
      << too_low.stderr_tail();
}

TEST_F(HostileFiles, SealedSegmentsHoldNoFileDescriptors) {
  ASSERT_NO_FATAL_FAILURE(start(options({"--segment-size", "4KiB"})));
  ASSERT_TRUE(client_->create_stream({.name = "s"}).ok());
  ASSERT_TRUE(create_topic("t", 1).ok());
  const size_t before = open_files();
  std::vector<std::string> sent;
  for (int i = 0; i < 90; i++) {  // ~3 messages per 4 KiB segment: about 30 segments.
    sent.push_back(std::to_string(i) + std::string(1000, 'x'));
    ASSERT_TRUE(send(0, 0, sent.back()).ok());
  }
  // The writer settles the sealed segments in the background (within the flush interval);
  // each one's files close when it is settled. Without that, 60 more files would stay open.
  EXPECT_TRUE(wait_until([&] { return open_files() <= before + 3; }))
      << open_files() << " files open, " << before << " before the sends";
  const auto stats = client_->get_stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->segments_count, 25u);
  EXPECT_EQ(read_payloads(0, 0), sent);
}

}  // namespace
}  // namespace hark::test
