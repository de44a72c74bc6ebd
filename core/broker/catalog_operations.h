#pragma once

#include <optional>
#include <string>
#include <vector>

#include <absl/functional/any_invocable.h>

#include "hark/core/broker/operation.h"

namespace hark::core {

// Streams, topics and partitions: metadata commands and reads of the catalog.

class CreateStream : public MetadataCommand {
 public:
  std::string name;
  StreamInfo stream;  // Out.

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class DeleteStream : public MetadataCommand {
 public:
  NameOrId stream;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Drops every message of every partition of the stream and its stored offsets; each
// partition restarts empty at offset 0 in a new epoch (parked polls are answered empty).
class PurgeStream : public MetadataCommand {
 public:
  NameOrId stream;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class CreateTopic : public MetadataCommand {
 public:
  NameOrId stream;
  std::string name;
  TopicSettings settings;
  TopicDetails topic;  // Out.

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class DeleteTopic : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class PurgeTopic : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class UpdateStream : public MetadataCommand {
 public:
  NameOrId stream;
  std::string name;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Renames a topic and changes its settings (partitions_count is ignored: see CreatePartitions).
// New retention settings apply to its partitions from their next open (restart).
class UpdateTopic : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  std::string name;
  TopicSettings settings;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Adds `count` partitions after the topic's last one.
class CreatePartitions : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t count = 0;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Deletes the topic's last `count` partitions, their messages and offsets.
class DeletePartitions : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t count = 0;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// An entry of a shared metadata journal that another node wrote (core/broker/
// metadata_journal.h; harkd's cluster mode submits them in order as etcd delivers them):
// applied on every shard like the command that wrote it, and kept in the local metadata.log.
// An entry the catalog already includes is answered ok at once.
class ApplyJournalEntry : public MetadataCommand {
 public:
  uint64_t sequence = 0;
  std::vector<std::byte> records;  // The framed entry record (metadata_journal.h).

 private:
  Status apply(internal::CatalogEdit& edit) override;
  uint64_t journaled_sequence() const override { return sequence; }
};

// Journals an embedder's record as one entry of the metadata journal, ordered with the
// catalog's entries, and hands it to BrokerOptions::extensions on every node that applies it
// (metadata_journal.h). `build` runs on shard 0 right before the entry is journaled, after
// every entry before it was applied (so again after another node took the entry's number);
// its error fails the command with nothing journaled.
class JournalExtension : public MetadataCommand {
 public:
  absl::AnyInvocable<Result<std::vector<std::byte>>()> build;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Reads of the catalog: answered on the home shard from its view.
class GetStream : public Operation {
 public:
  NameOrId stream;
  std::optional<StreamDetails> result;  // Out; nullopt if there is no such stream.

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetStreams : public Operation {
 public:
  std::vector<StreamInfo> streams;  // Out, by id.

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetTopic : public Operation {
 public:
  NameOrId stream;
  NameOrId topic;
  // Out; nullopt if there is no such topic. A missing stream is an error (1009/1010).
  std::optional<TopicDetails> result;

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetTopics : public Operation {
 public:
  NameOrId stream;
  std::vector<TopicInfo> topics;  // Out, by id.

 private:
  void step(internal::BrokerShard& shard) override;
};

}  // namespace hark::core
