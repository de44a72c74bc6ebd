#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/broker/operation.h"
#include "hark/protocol/writer.h"
#include "hark/storage/segment_format.h"

namespace hark::server::cluster {

// The node-link protocol (docs/cluster.md §Node links, §Trust): what two harkd nodes say to each
// other on a link. Pure functions and state machines over bytes; server/node_link.h does the I/O.
//
// A frame is [u32 length = 1 + body bytes][u8 kind][body], little-endian:
//   hello      dialer → acceptor   [u16 version][u32 node][u32 entry shard][u64 incarnation]
//                                  [32 B nonce][u8 n][cluster name, n bytes]
//   challenge  acceptor → dialer   [u32 node][u64 incarnation][32 B nonce][32 B mac]
//   proof      dialer → acceptor   [32 B mac]
//   request    entry → owner       [u64 id][u64 answered below][u32 user][u32 client][u32 code]
//                                  [u8 flags][u64 wait us][Iggy request payload]
//   response   owner → entry       [u64 id][Iggy response: u32 status, u32 length, payload]
//                                  (status link_status_not_hosted: see below)
//   cancel     entry → owner       [u64 id]
// Nothing but hello is accepted first, nothing but proof second, and no Iggy client frame is a
// link frame, so a link never runs a client command.
//
// A request's code is an Iggy command, or one of the link-only commands below (a code no Iggy
// command has; a client sending it to the client listener gets invalid_command, and an entry
// node never forwards it): only a node that proved the secret can send one.
//   fetch (link_fetch_code) B → A   payload [u32 stream][u32 topic][u32 partition][u64 move
//        epoch][u64 from][u32 count][u8 fence]: a partition's copy to the target of its
//        planned move (docs/cluster.md §Moves). Without fence: answered with [u64 segment
//        start][u64 segment end] (A's sealed segment the messages come from; an end of 0:
//        none) and a PollMessages answer from offset `from` (the stored bytes, at most `count`
//        messages and the owner's poll byte cap; no messages once B is caught up). With fence: A
//        stops admitting sends to the partition and answers [u64 end][u32 n][n × [u8 kind][u32
//        id][u64 offset]] (its log's end and stored consumer and group offsets). Refused
//        (resource_not_found, 20) unless A's view has that move, from A to the link's node, at that
//        epoch.
//   replica fetch (replica_fetch_code) F → L   payload [u32 stream][u32 topic][u32 partition]
//        [u64 epoch][u64 set][u64 from][u32 count]: follower F's fetch from its leader L
//        (docs/cluster.md §Replication, The data path): `from` is F's durable end, its
//        acknowledgement of everything below. Answered, at once or when the next append
//        arrives within the request's wait, with [u64 commit][u64 appended end][u64 epoch start]
//        [u64 offsets version][u64 segment start][u64 segment end][u8 offsets follow]
//        [offsets, if they follow] and a PollMessages answer of what L appended from `from`;
//        a segment end of 0: the messages come from no sealed segment. Refused (11001) unless L's
//        view makes it the leader at `epoch` with that set and F a member of it.
enum class LinkKind : uint8_t {
  hello = 1,
  challenge = 2,
  proof = 3,
  request = 4,
  response = 5,
  cancel = 6,
};

// 2: responses may carry link_status_not_hosted, which a version 1 entry would relay to its
// client.
inline constexpr uint16_t link_version = 3;
inline constexpr size_t link_header_size = 5;
inline constexpr size_t link_nonce_size = 32;
inline constexpr size_t link_mac_size = 32;
// The shortest cluster secret accepted (bytes).
inline constexpr size_t link_secret_min = 32;

using LinkNonce = std::array<std::byte, link_nonce_size>;
using LinkMac = std::array<std::byte, link_mac_size>;

enum class LinkScanState : uint8_t { need_more, ready, rejected };

struct LinkFrame {
  LinkScanState state = LinkScanState::need_more;
  LinkKind kind = LinkKind::hello;
  std::span<const std::byte> body;  // A view into the scanned bytes.
  size_t frame_size = 0;            // ready: header + body.
};

// The first frame at the start of `received`. Rejected: a length of 0, over `body_max` + 1, or
// an unknown kind (the link closes: the bytes after it cannot be trusted).
LinkFrame scan_link_frame(std::span<const std::byte> received, size_t body_max);

// The longest frame body accepted before the handshake (a hello or a proof: a few hundred
// bytes) and after it (a whole forwarded send or poll answer).
inline constexpr size_t link_body_max_unauthenticated = 512;
inline constexpr size_t link_body_max = size_t{256} << 20;

// A link's received bytes, assembled into frames (server/node_link.cc's LinkSocket and the
// fuzz target tests/fuzz/link_fuzz.cc read through it). It holds at most one partial frame,
// bounded by the limit in force, plus what one receive brought.
class LinkReader {
 public:
  void append(std::span<const std::byte> bytes) {
    in_.insert(in_.end(), bytes.begin(), bytes.end());
  }
  // The next frame, with the unauthenticated or the authenticated body limit; a ready frame is
  // consumed (its body is valid until the next append(), compact() or clear()).
  LinkFrame next(bool authenticated);
  // Drops consumed bytes once they are all read or pile up (call after handling the frames).
  void compact();
  void clear();
  size_t buffered() const { return in_.size() - head_; }

 private:
  static constexpr size_t compact_after = 64 * 1024;
  protocol::Bytes in_;
  size_t head_ = 0;
};

// A forwarded request's header (the Iggy payload follows it in the frame).
struct LinkRequest {
  static constexpr uint8_t deduplicated = 1;  // flags: the owner keeps its answer (a write).
  uint64_t id = 0;
  uint64_t answered_below = 0;  // Every id below is answered at the entry: forget them.
  uint32_t user = 0;            // Who the entry node authorized.
  uint32_t client = 0;          // The client's id at the entry node (a poll's member id).
  uint32_t code = 0;            // The Iggy command.
  uint8_t flags = 0;
  uint64_t wait_us = 0;  // A poll's remaining wait, microseconds (never extended).
  std::span<const std::byte> payload;
};

void append_link_request(const LinkRequest& request, protocol::Bytes& out);

inline constexpr uint32_t link_fetch_code = 0x4C4B0001;  // Far above every Iggy command code.

struct LinkFetch {
  uint32_t stream = 0;
  uint32_t topic = 0;
  uint32_t partition = 0;
  uint64_t epoch = 0;  // The move's: the assignment's epoch it starts from.
  uint64_t from = 0;
  uint32_t count = 0;
  bool fence = false;
};
void append_link_fetch(const LinkFetch& fetch, protocol::Bytes& payload);
Result<LinkFetch> parse_link_fetch(std::span<const std::byte> payload);

// An unfenced move fetch's answer payload: the source's sealed segment the messages come from
// (core::PollResult::sealed_segment), then the poll answer (`poll`, a view into the bytes).
struct LinkFetchAnswer {
  std::optional<storage::SegmentBounds> sealed_segment;
  std::span<const std::byte> poll;
};
// Writes everything but `poll`, which the caller appends.
void append_link_fetch_head(const LinkFetchAnswer& answer, protocol::Bytes& payload);
Result<LinkFetchAnswer> parse_link_fetch_answer(std::span<const std::byte> payload);

inline constexpr uint32_t replica_fetch_code = 0x4C4B0002;

struct ReplicaFetchRequest {
  uint32_t stream = 0;
  uint32_t topic = 0;
  uint32_t partition = 0;
  uint64_t epoch = 0;
  uint64_t set = 0;
  uint64_t from = 0;
  uint32_t count = 0;
  uint64_t offsets_version = 0;  // core::ReplicaFetch::offsets_version.
};
void append_replica_fetch(const ReplicaFetchRequest& fetch, protocol::Bytes& payload);
Result<ReplicaFetchRequest> parse_replica_fetch(std::span<const std::byte> payload);

// Stored consumer offsets on a link: a move's fenced fetch and a replica fetch carry them.
using LinkStoredOffsets = std::vector<std::pair<core::ConsumerRef, uint64_t>>;

// A replica fetch's answer payload: the leader's ends, the version of its stored offsets and,
// when the fetch named another version, all of them; then the poll answer (`poll`, a view into
// the parsed bytes).
struct ReplicaFetchAnswer {
  uint64_t commit = 0;
  uint64_t appended = 0;
  uint64_t epoch_start = 0;
  uint64_t offsets_version = 0;
  // The leader's sealed segment the messages come from (core::PollResult::sealed_segment).
  std::optional<storage::SegmentBounds> sealed_segment;
  std::optional<LinkStoredOffsets> offsets;
  std::span<const std::byte> poll;
};
// Writes everything but `poll`, which the caller appends.
void append_replica_fetch_head(const ReplicaFetchAnswer& answer, protocol::Bytes& payload);
// A count the bytes cannot hold is refused before anything is allocated for it.
Result<ReplicaFetchAnswer> parse_replica_fetch_answer(std::span<const std::byte> payload);

// A fenced fetch's answer payload.
struct LinkFenceAnswer {
  uint64_t end = 0;
  LinkStoredOffsets offsets;
};
void append_link_fence_answer(const LinkFenceAnswer& answer, protocol::Bytes& payload);
// A count the bytes cannot hold is refused before anything is allocated for it.
Result<LinkFenceAnswer> parse_link_fence_answer(std::span<const std::byte> payload);
Result<LinkRequest> parse_link_request(std::span<const std::byte> body);
// The status of an owner's response, on a link only and never written to a client, that says
// "not run: this node does not host the partition" (its assignment moved to another node, or
// this node has not opened it yet): the entry routes the request again from its newest view
// (docs/cluster.md §Moves). Outside Iggy's status codes, so it cannot be mistaken for a real
// 11001 (ShardCommunicationError), which the entry relays.
inline constexpr uint32_t link_status_not_hosted = 0xFFFF'0001;
// The whole answer with that status: [status][length 0].
std::array<std::byte, 8> not_hosted_response();
// True if `response` (a whole Iggy response) is a link_status_not_hosted answer.
bool not_hosted(std::span<const std::byte> response);
// `response` is a whole Iggy response ([status][length][payload]).
void append_link_response(uint64_t id, std::span<const std::byte> response, protocol::Bytes& out);
struct LinkResponse {
  uint64_t id = 0;
  std::span<const std::byte> response;  // Whole Iggy response, checked to be well-formed.
};
Result<LinkResponse> parse_link_response(std::span<const std::byte> body);
void append_link_cancel(uint64_t id, protocol::Bytes& out);
Result<uint64_t> parse_link_cancel(std::span<const std::byte> body);

// Figures (docs/cluster.md §Figures): a request whose code is `figures_code` (no Iggy command
// has it, and only a link carries it to shard 0's LinkHub) asks a node for the figures of the
// partitions it owns in a scope; GetStream(s) and GetTopic(s) at an entry node sum them.
//   request payload  [u8 has stream][u32 stream][u8 has topic][u32 topic]
//   answer           an Iggy OK response whose payload is [u32 count] and count entries of
//                    [u32 stream][u32 topic][u32 partition][u32 segments][u64 current offset]
//                    [u64 size bytes][u64 messages]
// An answer holds at most `figures_max` entries (2.5 MiB): the ones past it are left out.
inline constexpr uint32_t figures_code = 0x48460001;
inline constexpr size_t figures_max = 65536;
inline constexpr size_t figures_entry_size = 40;
struct FiguresScope {
  std::optional<uint32_t> stream;  // None: every stream.
  std::optional<uint32_t> topic;   // None: every topic of the stream (or of every stream).
  bool operator==(const FiguresScope&) const = default;
};
void append_figures_request(const FiguresScope& scope, protocol::Bytes& out);
Result<FiguresScope> parse_figures_request(std::span<const std::byte> payload);
// The whole Iggy response; the first figures_max of `figures` only.
void append_figures_answer(std::span<const core::PartitionFigures> figures, protocol::Bytes& out);
// Into `out` (cleared first). Errors: shard_communication_error for an error answer (an owner
// that does not serve figures), invalid_command for an answer that is malformed or holds more
// than figures_max entries.
Status parse_figures_answer(std::span<const std::byte> response,
                            std::vector<core::PartitionFigures>& out);

// Who a link's side is, for the handshake.
struct LinkIdentity {
  std::string_view secret;   // The cluster secret (cluster.secret_file), >= link_secret_min.
  std::string_view cluster;  // cluster.name.
  uint32_t node = 0;
  uint64_t incarnation = 0;  // Random per process.
};

// What a finished handshake learned of the other side.
struct LinkPeer {
  uint32_t node = 0;
  uint32_t entry_shard = 0;  // Acceptor side: the dialer's shard.
  uint64_t incarnation = 0;
};

// HMAC-SHA256(secret, label ‖ dialer node ‖ acceptor node ‖ dialer incarnation ‖ acceptor
// incarnation ‖ dialer nonce ‖ acceptor nonce ‖ cluster), label "hark-link-accept" for the
// acceptor's proof and "hark-link-dial" for the dialer's: neither side's proof answers the
// other's challenge, and a recorded proof is worthless against a fresh nonce.
enum class LinkDirection : uint8_t { dial, accept };
LinkMac link_mac(LinkDirection direction, std::string_view secret, std::string_view cluster,
                 uint32_t dialer, uint32_t acceptor, uint64_t dialer_incarnation,
                 uint64_t acceptor_incarnation, const LinkNonce& dialer_nonce,
                 const LinkNonce& acceptor_nonce);
// Constant-time.
bool link_mac_equal(const LinkMac& a, std::span<const std::byte> b);
// From OpenSSL's RAND_bytes.
LinkNonce random_nonce();
uint64_t random_incarnation();

// The dialer's half of the handshake: hello(), then on_challenge() checks the acceptor's proof
// and writes its own. Errors: unauthenticated (40) for a wrong proof (wrong secret or cluster),
// invalid_command (3) for a frame out of turn or malformed, invalid_version (7).
class LinkDialer {
 public:
  LinkDialer(const LinkIdentity& self, uint32_t entry_shard, uint32_t expected_node,
             const LinkNonce& nonce);
  void hello(protocol::Bytes& out) const;
  Result<LinkPeer> on_challenge(const LinkFrame& frame, protocol::Bytes& out);

 private:
  LinkIdentity self_;
  uint32_t entry_shard_;
  uint32_t expected_node_;
  LinkNonce nonce_;
};

// The acceptor's half: on_hello() writes the challenge (with this side's proof), on_proof()
// checks the dialer's. Errors as LinkDialer's.
class LinkAcceptor {
 public:
  LinkAcceptor(const LinkIdentity& self, const LinkNonce& nonce);
  Status on_hello(const LinkFrame& frame, protocol::Bytes& out);
  Result<LinkPeer> on_proof(const LinkFrame& frame);

 private:
  LinkIdentity self_;
  LinkNonce nonce_;
  std::optional<LinkPeer> peer_;
  LinkNonce peer_nonce_{};
};

// The owner's memory of the writes one entry (one incarnation of one entry shard) forwarded,
// so a write re-sent after a link dropped is answered with its first answer, never applied
// twice (docs/cluster.md §Exactly once). A fixed ring of `capacity` slots indexed by id: no
// allocation once each slot's answer has grown. `floor` is the lowest id it still answers
// for: ids below were forgotten (trimmed by the entry's "answered below" mark, or evicted by
// a newer id on their slot), so such an id is refused, never executed again.
class AnswerTable {
 public:
  enum class Seen : uint8_t {
    fresh,        // Never seen: execute it (now recorded as in progress).
    in_progress,  // Executing: its answer goes out when it is done.
    answered,     // answer() holds the first answer: send it again.
    forgotten,    // Below the floor: refuse it.
  };

  explicit AnswerTable(size_t capacity);
  Seen begin(uint64_t id);
  // The first answer of `id`; ignored if its slot was taken since.
  void answered(uint64_t id, std::span<const std::byte> answer);
  std::span<const std::byte> answer(uint64_t id) const;
  void trim_below(uint64_t mark);
  uint64_t floor() const { return floor_; }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    uint64_t id = 0;
    bool used = false;  // Every id is a peer's: none may stand for "empty".
    bool done = false;
    protocol::Bytes answer;
  };
  Slot& slot(uint64_t id) { return slots_[id % slots_.size()]; }
  const Slot& slot(uint64_t id) const { return slots_[id % slots_.size()]; }

  std::vector<Slot> slots_;
  uint64_t floor_ = 0;
};

// Reads the cluster secret from `path`: its bytes, a trailing newline dropped. Refused with
// what is wrong (for the start-up error): missing or unreadable, shorter than
// link_secret_min, or readable by others than its owner's group (mode o+r).
Result<std::string> read_cluster_secret(const std::string& path, std::string& why);

}  // namespace hark::server::cluster
