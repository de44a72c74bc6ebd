// Snapshots of the metadata catalog (core/broker/internal/journal.h, RecordKind::snapshot):
// rapidcheck properties over random command sequences made with CatalogEdit as the Coordinator
// makes them (streams, topics, partitions added and removed, groups, members, purges,
// extensions), each one journal entry: a snapshot replayed on an empty catalog makes an equal
// catalog (ids, names, times, settings, partitions, groups and members in join order, and the
// id counters, so a deleted id is not given again), and a snapshot at entry k followed by the
// entries after k makes the catalog that every entry makes. Plus what a snapshot refuses: a
// catalog that is not empty, a nested snapshot.
#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/internal/journal.h"
#include "hark/core/ownership_map.h"
#include "hark/storage/record_file.h"

namespace hark::core::internal {
namespace {

using Step = std::tuple<uint8_t, uint32_t, uint32_t, uint32_t>;

// What must be equal between two catalogs (their version aside); empty when they are. Members
// only when they are journaled (on one node they are connections, never written).
std::string difference(const Catalog& a, const Catalog& b) {
  if (a.sequence != b.sequence) return "sequence";
  if (a.next_stream_id != b.next_stream_id) return "next_stream_id";
  if (a.streams.size() != b.streams.size()) return "streams";
  for (const auto& [id, s] : a.streams) {
    const auto other = b.streams.find(id);
    if (other == b.streams.end()) return "stream " + std::to_string(id);
    const StreamEntry& t = *other->second;
    if (s->name != t.name || s->created_at != t.created_at || s->next_topic_id != t.next_topic_id ||
        s->topics.size() != t.topics.size()) {
      return "stream " + std::to_string(id) + " fields";
    }
    for (const auto& [topic_id, x] : s->topics) {
      const auto found = t.topics.find(topic_id);
      if (found == t.topics.end()) return "topic " + std::to_string(topic_id);
      const TopicEntry& y = *found->second;
      if (x->name != y.name || x->created_at != y.created_at ||
          x->next_group_id != y.next_group_id ||
          x->settings.partitions_count != y.settings.partitions_count ||
          x->settings.compression != y.settings.compression ||
          x->settings.message_expiry_us != y.settings.message_expiry_us ||
          x->settings.max_topic_size != y.settings.max_topic_size ||
          x->settings.replication_factor != y.settings.replication_factor ||
          x->partitions.size() != y.partitions.size() || x->groups.size() != y.groups.size()) {
        return "topic " + std::to_string(topic_id) + " fields";
      }
      for (size_t p = 0; p < x->partitions.size(); p++) {
        if (!(x->partitions[p]->key == y.partitions[p]->key) ||
            x->partitions[p]->created_at != y.partitions[p]->created_at) {
          return "partition " + std::to_string(p);
        }
      }
      for (const auto& [group_id, g] : x->groups) {
        const auto h = y.groups.find(group_id);
        if (h == y.groups.end() || g->name != h->second->name) {
          return "group " + std::to_string(group_id);
        }
        if (!a.members_journaled) continue;
        if (g->members.size() != h->second->members.size()) return "members";
        for (size_t m = 0; m < g->members.size(); m++) {
          if (g->members[m].id != h->second->members[m].id ||
              g->members[m].partitions != h->second->members[m].partitions) {
            return "member " + std::to_string(m);
          }
        }
      }
    }
  }
  return {};
}

// Picks the n-th (modulo) entry of a map, or null if it is empty.
template <typename Map>
const typename Map::mapped_type* pick(const Map& map, uint32_t n) {
  if (map.empty()) return nullptr;
  auto it = map.begin();
  std::advance(it, n % map.size());
  return &it->second;
}

// Applies one random step to `edit`, as a command would (the ids a command would give).
void apply_step(CatalogEdit& edit, const Step& step, UnixMicros now) {
  const auto [op, a, b, c] = step;
  const Catalog& catalog = edit.catalog();
  if (op % 13 == 0 || catalog.streams.empty()) {
    edit.add_stream(catalog.next_stream_id, now, "s" + std::to_string(now));
    return;
  }
  StreamEntry& stream = **edit.writable_stream(NameOrId::id((*pick(catalog.streams, a))->id));
  const auto* topic_ref = pick(stream.topics, b);
  const TopicEntry* topic = topic_ref == nullptr ? nullptr : topic_ref->get();
  const auto* group_ref = topic == nullptr ? nullptr : pick(topic->groups, c);
  const GroupEntry* group = group_ref == nullptr ? nullptr : group_ref->get();
  TopicSettings settings{.partitions_count = c % 4, .message_expiry_us = a, .max_topic_size = b};
  switch (topic == nullptr ? 2 : op % 13) {
    case 1: edit.remove_stream(stream); return;
    case 3: edit.rename_stream(stream, "r" + std::to_string(now)); return;
    case 4: edit.remove_topic(stream, *topic); return;
    case 5: edit.update_topic(stream, *topic, "u" + std::to_string(now), settings); return;
    case 6: edit.add_partitions(stream, *topic, 1 + c % 3, now); return;
    case 7: edit.remove_partitions(stream, *topic, c % (topic->partitions.size() + 1)); return;
    case 8: edit.add_group(stream, *topic, topic->next_group_id, "g" + std::to_string(now)); return;
    case 9: edit.purge_topic(stream, *topic); return;
    case 10:
      if (group != nullptr) edit.remove_group(stream, *topic, *group);
      return;
    case 11:
    case 12:
      if (group == nullptr) return;
      if (op % 2 == 0) {
        edit.join_group(stream, *topic, *group, a % 5);
      } else {
        edit.leave_group(stream, *topic, *group, a % 5);
      }
      return;
    default:
      edit.add_topic(stream, stream.next_topic_id, now, "t" + std::to_string(now), settings);
      return;
  }
}

// Replays framed records (a file's worth) onto an empty catalog.
Result<Ref<const Catalog>> replay_all(const std::vector<std::vector<std::byte>>& records,
                                      bool members_journaled, const OwnershipMap& ownership,
                                      Clock& clock,
                                      std::vector<std::vector<std::byte>>* extensions = nullptr) {
  auto empty = make_ref<Catalog>();
  empty->members_journaled = members_journaled;
  CatalogEdit edit(*empty, ownership, clock);
  for (const auto& record : records) HARK_TRY(replay_records(record, edit));
  if (extensions != nullptr) *extensions = edit.extensions;
  return edit.take();
}

RC_GTEST_PROP(MetadataSnapshot, ReplayingASnapshotMakesTheSameCatalogAndLaterEntriesFollowIt,
              (const std::vector<Step>& steps, bool members_journaled, uint32_t cut)) {
  if (steps.empty()) return;  // No entry to snapshot at.
  OwnershipMap ownership(2);
  ManualClock clock;
  auto initial = make_ref<Catalog>();
  initial->members_journaled = members_journaled;
  Ref<const Catalog> catalog = initial;
  std::vector<std::vector<std::byte>> entries;  // Framed entry records, entry i + 1 at i.
  const size_t snapshot_at = steps.empty() ? 0 : 1 + cut % steps.size();
  Ref<const Catalog> at_cut;
  UnixMicros now = 1000;
  for (const Step& step : steps) {
    CatalogEdit edit(*catalog, ownership, clock);
    apply_step(edit, step, now += 7);
    if (edit.journal.empty()) edit.raise_next_stream_id(0);  // A no-op command: still an entry.
    const uint64_t sequence = catalog->sequence + 1;
    std::vector<std::byte>& entry = entries.emplace_back();
    journal_entry(entry, sequence, edit.journal);
    edit.set_sequence(sequence);
    catalog = edit.take();
    if (entries.size() == snapshot_at) at_cut = catalog;
  }
  RC_ASSERT(at_cut.get() != nullptr);

  const auto all = replay_all(entries, members_journaled, ownership, clock);
  RC_ASSERT(all.ok());
  RC_ASSERT(difference(**all, *catalog).empty());

  const std::vector<std::vector<std::byte>> extensions{{std::byte{1}, std::byte{2}},
                                                       {std::byte{3}}};
  std::vector<std::byte> snapshot;
  journal_snapshot(snapshot, *at_cut, extensions);
  std::vector<std::vector<std::byte>> replayed_extensions;
  const auto from_snapshot =
      replay_all({snapshot}, members_journaled, ownership, clock, &replayed_extensions);
  RC_ASSERT(from_snapshot.ok());
  RC_ASSERT(difference(**from_snapshot, *at_cut).empty());
  RC_ASSERT(replayed_extensions == extensions);

  std::vector<std::vector<std::byte>> compacted{snapshot};
  compacted.insert(compacted.end(), entries.begin() + static_cast<ptrdiff_t>(snapshot_at),
                   entries.end());
  const auto followed = replay_all(compacted, members_journaled, ownership, clock);
  RC_ASSERT(followed.ok());
  RC_ASSERT(difference(**followed, *catalog).empty());
}

TEST(MetadataSnapshot, KeepsIdCountersPastDeletedEntriesAndAppliesOnlyToAnEmptyCatalog) {
  OwnershipMap ownership(1);
  ManualClock clock;
  auto initial = make_ref<Catalog>();
  CatalogEdit edit(*initial, ownership, clock);
  edit.add_stream(0, 1, "kept");
  StreamEntry& doomed = edit.add_stream(1, 2, "doomed");
  edit.add_topic(doomed, 0, 3, "t", TopicSettings{.partitions_count = 1});
  edit.remove_stream(**edit.writable_stream(NameOrId::id(1)));
  StreamEntry& kept = **edit.writable_stream(NameOrId::id(0));
  const TopicEntry& topic = edit.add_topic(kept, 4, 5, "t", TopicSettings{.partitions_count = 2});
  edit.add_group(kept, topic, 6, "g");
  edit.remove_group(kept, **kept.topic(NameOrId::id(4)),
                    **(*kept.topic(NameOrId::id(4)))->group(NameOrId::id(6)));
  edit.remove_topic(kept, **kept.topic(NameOrId::id(4)));
  edit.set_sequence(9);
  const Ref<const Catalog> catalog = edit.take();
  std::vector<std::byte> snapshot;
  journal_snapshot(snapshot, *catalog, {});

  const auto replayed = replay_all({snapshot}, false, ownership, clock);
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ((*replayed)->sequence, 9u);
  EXPECT_EQ((*replayed)->next_stream_id, 2u);  // Stream 1 was deleted: not given again.
  EXPECT_EQ((*replayed)->streams.at(0)->next_topic_id, 5u);
  EXPECT_EQ(difference(**replayed, *catalog), "");

  // A snapshot rebuilds from nothing: on a catalog that holds anything it is corruption.
  CatalogEdit twice(**replayed, ownership, clock);
  EXPECT_EQ(replay_records(snapshot, twice).error(), Error::state_file_corrupted);
  // Nor does an entry or a snapshot hold a snapshot.
  std::vector<std::byte> nested;
  journal_entry(nested, 1, snapshot);
  auto empty = make_ref<Catalog>();
  CatalogEdit fresh(*empty, ownership, clock);
  EXPECT_EQ(replay_records(nested, fresh).error(), Error::state_file_corrupted);
}

}  // namespace
}  // namespace hark::core::internal
