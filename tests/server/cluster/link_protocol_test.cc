// The node-link protocol (server/cluster/link_protocol.h) without sockets: frames round-trip and
// malformed ones are rejected (the LinkReader across receives, with the limits before and after
// the handshake), an owner's not-hosted answer is told apart from a real 11001, the handshake
// succeeds both ways with one secret and fails on either side with another (or another cluster
// name), a client command or a frame out of turn is refused, and the AnswerTable answers a
// re-sent write with its first answer, refuses ids it forgot, and stays bounded. Label unit.
#include "hark/server/cluster/link_protocol.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hark/core/base/message_layout.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/system_requests.h"

namespace hark::server::cluster {
namespace {

const std::string secret_a(40, 'a');
const std::string secret_b(40, 'b');

LinkFrame only_frame(const protocol::Bytes& bytes) {
  LinkFrame frame = scan_link_frame(bytes, 1 << 20);
  EXPECT_EQ(frame.state, LinkScanState::ready);
  EXPECT_EQ(frame.frame_size, bytes.size());
  return frame;
}

std::span<const std::byte> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

TEST(LinkFrames, RequestResponseCancelRoundTrip) {
  protocol::Bytes out;
  const std::string payload = "iggy payload";
  append_link_request({.id = 7,
                       .answered_below = 3,
                       .user = 9,
                       .client = 11,
                       .code = 101,
                       .flags = LinkRequest::deduplicated,
                       .wait_us = 1234,
                       .payload = as_bytes(payload)},
                      out);
  LinkFrame frame = only_frame(out);
  ASSERT_EQ(frame.kind, LinkKind::request);
  const Result<LinkRequest> request = parse_link_request(frame.body);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->id, 7u);
  EXPECT_EQ(request->answered_below, 3u);
  EXPECT_EQ(request->user, 9u);
  EXPECT_EQ(request->client, 11u);
  EXPECT_EQ(request->code, 101u);
  EXPECT_EQ(request->flags, LinkRequest::deduplicated);
  EXPECT_EQ(request->wait_us, 1234u);
  EXPECT_EQ(
      std::string(reinterpret_cast<const char*>(request->payload.data()), request->payload.size()),
      payload);

  out.clear();
  const std::array<std::byte, 8> ok{};  // Status 0, length 0.
  append_link_response(7, ok, out);
  frame = only_frame(out);
  const Result<LinkResponse> response = parse_link_response(frame.body);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->id, 7u);
  EXPECT_EQ(response->response.size(), 8u);

  out.clear();
  append_link_cancel(5, out);
  frame = only_frame(out);
  EXPECT_EQ(frame.kind, LinkKind::cancel);
  EXPECT_EQ(*parse_link_cancel(frame.body), 5u);
}

// An owner's "not hosted here" answer crosses the link whole and is told apart from a real
// ShardCommunicationError (11001), which the entry relays to its client.
TEST(LinkFrames, NotHostedIsALinkStatusApartFromIggysCodes) {
  protocol::Bytes out;
  append_link_response(9, not_hosted_response(), out);
  const Result<LinkResponse> response = parse_link_response(only_frame(out).body);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->id, 9u);
  EXPECT_TRUE(not_hosted(response->response));
  EXPECT_FALSE(not_hosted(protocol::error_response(Error::shard_communication_error)));
  EXPECT_FALSE(not_hosted(protocol::ok_response_header(0)));
  EXPECT_FALSE(not_hosted(std::span<const std::byte>()));
}

// A move's fetch (link-only command) and its fenced answer round-trip; a truncated fetch, a
// fence flag other than 0/1, trailing bytes and an offsets count the bytes cannot hold are
// refused (a hostile peer allocates nothing for a count it did not send).
TEST(LinkFrames, MoveFetchAndFenceAnswerRoundTripAndRefuseGarbage) {
  const LinkFetch fetch{
      .stream = 1, .topic = 2, .partition = 3, .epoch = 4, .from = 500, .count = 64, .fence = true};
  protocol::Bytes payload;
  append_link_fetch(fetch, payload);
  const auto parsed = parse_link_fetch(payload);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->stream, 1u);
  EXPECT_EQ(parsed->partition, 3u);
  EXPECT_EQ(parsed->epoch, 4u);
  EXPECT_EQ(parsed->from, 500u);
  EXPECT_EQ(parsed->count, 64u);
  EXPECT_TRUE(parsed->fence);
  EXPECT_FALSE(parse_link_fetch(std::span(payload).first(payload.size() - 1)).ok());
  protocol::Bytes bad_flag = payload;
  bad_flag.back() = std::byte{2};
  EXPECT_FALSE(parse_link_fetch(bad_flag).ok());
  protocol::Bytes trailing = payload;
  trailing.push_back(std::byte{0});
  EXPECT_FALSE(parse_link_fetch(trailing).ok());

  using Kind = core::ConsumerRef::Kind;
  LinkFenceAnswer answer{.end = 77, .offsets = {{{Kind::consumer, 7}, 12}, {{Kind::group, 3}, 70}}};
  protocol::Bytes encoded;
  append_link_fence_answer(answer, encoded);
  const auto back = parse_link_fence_answer(encoded);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->end, 77u);
  EXPECT_EQ(back->offsets, answer.offsets);
  protocol::Bytes bad_kind = encoded;
  bad_kind[8 + 4] = std::byte{3};  // The first offset's kind: neither a consumer nor a group.
  EXPECT_FALSE(parse_link_fence_answer(bad_kind).ok());
  protocol::Bytes huge(12, std::byte{0});
  store_u32(huge, 8, UINT32_MAX);  // Four billion offsets announced, none sent.
  EXPECT_FALSE(parse_link_fence_answer(huge).ok());
  EXPECT_FALSE(parse_link_fence_answer(std::span(encoded).first(encoded.size() - 1)).ok());
}

TEST(LinkFrames, ReplicaFetchAndItsAnswerRoundTripAndRefuseGarbage) {
  const ReplicaFetchRequest fetch{.stream = 1,
                                  .topic = 2,
                                  .partition = 3,
                                  .epoch = 4,
                                  .set = 5,
                                  .from = 6,
                                  .count = 7,
                                  .offsets_version = 8};
  protocol::Bytes payload;
  append_replica_fetch(fetch, payload);
  const auto parsed = parse_replica_fetch(payload);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->set, 5u);
  EXPECT_EQ(parsed->from, 6u);
  EXPECT_EQ(parsed->count, 7u);
  EXPECT_EQ(parsed->offsets_version, 8u);
  payload.push_back(std::byte{0});
  EXPECT_FALSE(parse_replica_fetch(payload).ok());

  // Without offsets (the fetch held the leader's), then with them; the poll answer follows.
  const std::array<std::byte, 3> poll{std::byte{1}, std::byte{2}, std::byte{3}};
  protocol::Bytes held;
  append_replica_fetch_head({.commit = 3, .appended = 9, .epoch_start = 2, .offsets_version = 5},
                            held);
  held.insert(held.end(), poll.begin(), poll.end());
  const auto parsed_held = parse_replica_fetch_answer(held);
  ASSERT_TRUE(parsed_held.ok());
  EXPECT_EQ(parsed_held->appended, 9u);
  EXPECT_EQ(parsed_held->epoch_start, 2u);
  EXPECT_EQ(parsed_held->offsets_version, 5u);
  EXPECT_FALSE(parsed_held->offsets.has_value());
  EXPECT_FALSE(parsed_held->sealed_segment.has_value());
  EXPECT_TRUE(std::ranges::equal(parsed_held->poll, poll));
  // The sealed segment the messages come from, which may start at 0.
  protocol::Bytes sealed;
  append_replica_fetch_head(
      {.appended = 9,
       .sealed_segment = storage::SegmentBounds{.start = Offset(0), .end = Offset(4)}},
      sealed);
  const auto parsed_sealed = parse_replica_fetch_answer(sealed);
  ASSERT_TRUE(parsed_sealed.ok());
  ASSERT_TRUE(parsed_sealed->sealed_segment.has_value());
  EXPECT_EQ(parsed_sealed->sealed_segment->start, Offset(0));
  EXPECT_EQ(parsed_sealed->sealed_segment->end, Offset(4));
  for (const auto& [start, end] : {std::pair<uint64_t, uint64_t>{4, 4}, {5, 4}, {0, 10}}) {
    protocol::Bytes bad;  // Empty, backwards, or past the appended end.
    append_replica_fetch_head(
        {.appended = 9,
         .sealed_segment = storage::SegmentBounds{.start = Offset(start), .end = Offset(end)}},
        bad);
    EXPECT_FALSE(parse_replica_fetch_answer(bad).ok()) << start << ".." << end;
  }
  const LinkStoredOffsets offsets{{{core::ConsumerRef::Kind::group, 4}, 8}};
  protocol::Bytes with;
  append_replica_fetch_head({.commit = 3, .appended = 9, .offsets_version = 6, .offsets = offsets},
                            with);
  with.insert(with.end(), poll.begin(), poll.end());
  const auto parsed_with = parse_replica_fetch_answer(with);
  ASSERT_TRUE(parsed_with.ok());
  EXPECT_EQ(parsed_with->offsets, offsets);
  EXPECT_TRUE(std::ranges::equal(parsed_with->poll, poll));
  // An empty set of offsets is not "held": a follower holding some must delete them.
  protocol::Bytes none;
  append_replica_fetch_head({.offsets_version = 7, .offsets = LinkStoredOffsets{}}, none);
  const auto parsed_none = parse_replica_fetch_answer(none);
  ASSERT_TRUE(parsed_none.ok());
  ASSERT_TRUE(parsed_none->offsets.has_value());
  EXPECT_TRUE(parsed_none->offsets->empty());

  protocol::Bytes backwards;  // A commit past the appended end cannot be.
  append_replica_fetch_head({.commit = 10, .appended = 9, .epoch_start = 2}, backwards);
  EXPECT_FALSE(parse_replica_fetch_answer(backwards).ok());
  protocol::Bytes bad_flag = held;
  bad_flag[48] = std::byte{2};  // Neither "held" nor "offsets follow".
  EXPECT_FALSE(parse_replica_fetch_answer(bad_flag).ok());
  EXPECT_FALSE(parse_replica_fetch_answer(std::span(held).first(48)).ok());
}

TEST(LinkFrames, AMoveFetchsAnswerNamesTheSealedSegmentOrNone) {
  const std::array<std::byte, 2> poll{std::byte{7}, std::byte{8}};
  for (const auto& sealed :
       {std::optional<storage::SegmentBounds>(),
        std::optional(storage::SegmentBounds{.start = Offset(0), .end = Offset(12)})}) {
    protocol::Bytes payload;
    append_link_fetch_head({.sealed_segment = sealed}, payload);
    payload.insert(payload.end(), poll.begin(), poll.end());
    const auto parsed = parse_link_fetch_answer(payload);
    ASSERT_TRUE(parsed.ok());
    ASSERT_EQ(parsed->sealed_segment.has_value(), sealed.has_value());
    if (sealed) {
      EXPECT_EQ(parsed->sealed_segment->start, sealed->start);
      EXPECT_EQ(parsed->sealed_segment->end, sealed->end);
    }
    EXPECT_TRUE(std::ranges::equal(parsed->poll, poll));
  }
  protocol::Bytes backwards;
  append_link_fetch_head(
      {.sealed_segment = storage::SegmentBounds{.start = Offset(5), .end = Offset(5)}}, backwards);
  EXPECT_FALSE(parse_link_fetch_answer(backwards).ok());
  EXPECT_FALSE(parse_link_fetch_answer(std::span(backwards).first(15)).ok());
}

TEST(LinkFrames, PartialNeedsMoreAndGarbageIsRejected) {
  protocol::Bytes out;
  append_link_cancel(5, out);
  for (size_t size = 0; size < out.size(); size++) {
    EXPECT_EQ(scan_link_frame(std::span(out).first(size), 1 << 20).state, LinkScanState::need_more)
        << size;
  }
  // Unknown kind, zero length, a body over the cap.
  protocol::Bytes garbage = out;
  garbage[4] = std::byte{99};
  EXPECT_EQ(scan_link_frame(garbage, 1 << 20).state, LinkScanState::rejected);
  garbage = {std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}};
  EXPECT_EQ(scan_link_frame(garbage, 1 << 20).state, LinkScanState::rejected);
  EXPECT_EQ(scan_link_frame(out, 4).state, LinkScanState::rejected);
  // A truncated body inside a well-framed frame: the parse fails, nothing is read past it.
  protocol::Bytes response;
  const std::array<std::byte, 8> header{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0},
                                        std::byte{5}};  // Announces 5 payload bytes, has none.
  append_link_response(1, header, response);
  EXPECT_FALSE(parse_link_response(only_frame(response).body).ok());
  EXPECT_FALSE(parse_link_cancel({}).ok());
  EXPECT_FALSE(parse_link_request(std::span(out).first(6)).ok());
}

TEST(LinkFrames, ReaderAssemblesFramesAcrossReceivesWithTheLimitInForce) {
  protocol::Bytes wire;
  append_link_cancel(5, wire);
  append_link_cancel(6, wire);
  LinkReader reader;
  // One byte per receive: nothing until a frame is whole, then exactly that frame.
  std::vector<uint64_t> ids;
  for (const std::byte byte : wire) {
    reader.append(std::span(&byte, 1));
    const LinkFrame frame = reader.next(true);
    if (frame.state == LinkScanState::ready) ids.push_back(*parse_link_cancel(frame.body));
    ASSERT_NE(frame.state, LinkScanState::rejected);
    reader.compact();
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{5, 6}));
  EXPECT_EQ(reader.buffered(), 0u);
  // A body past 512 bytes is refused before the handshake and read after it.
  protocol::Bytes big;
  const std::string payload(600, 'p');
  append_link_request({.id = 1, .payload = as_bytes(payload)}, big);
  LinkReader before;
  before.append(big);
  EXPECT_EQ(before.next(false).state, LinkScanState::rejected);
  LinkReader after;
  after.append(big);
  const LinkFrame frame = after.next(true);
  ASSERT_EQ(frame.state, LinkScanState::ready);
  EXPECT_EQ(parse_link_request(frame.body)->payload.size(), payload.size());
  EXPECT_EQ(after.next(true).state, LinkScanState::need_more);
}

struct Handshake {
  Status dial_error;  // The dialer's verdict on the challenge.
  Status accept_error;
  std::optional<LinkPeer> dialer_saw, acceptor_saw;
};

Handshake shake(const std::string& dial_secret, const std::string& accept_secret,
                std::string_view dial_cluster = "c", uint32_t expected = 2) {
  const LinkIdentity dial_self{
      .secret = dial_secret, .cluster = dial_cluster, .node = 1, .incarnation = 100};
  const LinkIdentity accept_self{
      .secret = accept_secret, .cluster = "c", .node = 2, .incarnation = 200};
  LinkDialer dialer(dial_self, 3, expected, random_nonce());
  LinkAcceptor acceptor(accept_self, random_nonce());
  Handshake result;
  protocol::Bytes wire;
  dialer.hello(wire);
  protocol::Bytes challenge;
  result.accept_error = acceptor.on_hello(only_frame(wire), challenge);
  if (!result.accept_error.ok()) return result;
  protocol::Bytes proof;
  Result<LinkPeer> dialed = dialer.on_challenge(only_frame(challenge), proof);
  if (!dialed.ok()) {
    result.dial_error = dialed.error();
    // A dialer that refused sends no proof; a forged one (the acceptor's own MAC echoed)
    // must be refused by the acceptor too.
    proof.clear();
    protocol::Writer writer(proof);
    writer.u32(1 + link_mac_size);
    writer.u8(static_cast<uint8_t>(LinkKind::proof));
    writer.bytes(std::span(challenge).last(link_mac_size));
  } else {
    result.dialer_saw = *dialed;
  }
  Result<LinkPeer> accepted = acceptor.on_proof(only_frame(proof));
  if (accepted.ok()) {
    result.acceptor_saw = *accepted;
  } else {
    result.accept_error = accepted.error();
  }
  return result;
}

TEST(LinkHandshake, OneSecretAuthenticatesBothWays) {
  const Handshake result = shake(secret_a, secret_a);
  ASSERT_TRUE(result.dial_error.ok());
  ASSERT_TRUE(result.accept_error.ok());
  ASSERT_TRUE(result.dialer_saw && result.acceptor_saw);
  EXPECT_EQ(result.dialer_saw->node, 2u);
  EXPECT_EQ(result.dialer_saw->incarnation, 200u);
  EXPECT_EQ(result.acceptor_saw->node, 1u);
  EXPECT_EQ(result.acceptor_saw->entry_shard, 3u);
  EXPECT_EQ(result.acceptor_saw->incarnation, 100u);
}

TEST(LinkHandshake, WrongSecretOrClusterIsRefusedByBothSides) {
  for (const Handshake& result :
       {shake(secret_a, secret_b), shake(secret_b, secret_a), shake(secret_a, secret_a, "other")}) {
    EXPECT_EQ(result.dial_error.error(), Error::unauthenticated);
    EXPECT_EQ(result.accept_error.error(), Error::unauthenticated);
    EXPECT_FALSE(result.acceptor_saw.has_value());
  }
  // The node answering is not the one dialed: refused too.
  EXPECT_EQ(shake(secret_a, secret_a, "c", 3).dial_error.error(), Error::unauthenticated);
}

TEST(LinkHandshake, ClientCommandOrFrameOutOfTurnIsRefused) {
  const LinkIdentity self{.secret = secret_a, .cluster = "c", .node = 2, .incarnation = 1};
  // An Iggy ping frame ([length 4][code 1]) sent to a link: its code's first byte reads as
  // kind hello, whose body it is not, so the acceptor refuses it.
  LinkAcceptor acceptor(self, random_nonce());
  protocol::Bytes ping;
  ASSERT_TRUE(protocol::encode_request(protocol::PingRequest{}, ping).ok());
  protocol::Bytes out;
  EXPECT_FALSE(acceptor.on_hello(only_frame(ping), out).ok());
  // Any other command (poll_messages, 101) is no link frame at all.
  ping[4] = std::byte{101};
  EXPECT_EQ(scan_link_frame(ping, 1 << 20).state, LinkScanState::rejected);
  // A request or a proof before the hello.
  protocol::Bytes request;
  append_link_request({.id = 1, .code = 1}, request);
  EXPECT_EQ(acceptor.on_hello(only_frame(request), out).error(), Error::invalid_command);
  EXPECT_FALSE(acceptor.on_proof(only_frame(request)).ok());
  EXPECT_TRUE(out.empty());
}

TEST(LinkFigures, RequestAndAnswerRoundTrip) {
  for (const FiguresScope scope :
       {FiguresScope{}, FiguresScope{.stream = 7}, FiguresScope{.stream = 0, .topic = 3}}) {
    protocol::Bytes payload;
    append_figures_request(scope, payload);
    const Result<FiguresScope> parsed = parse_figures_request(payload);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, scope);
  }
  const std::vector<core::PartitionFigures> figures = {
      {.key = {StreamId(1), TopicId(2), PartitionId(3)},
       .info = {.id = 3,
                .segments_count = 4,
                .current_offset = 5,
                .size_bytes = 6,
                .messages_count = 7}},
      {.key = {StreamId(1), TopicId(2), PartitionId(4)},
       .info = {.id = 4,
                .segments_count = 1,
                .current_offset = UINT64_MAX,
                .size_bytes = UINT64_MAX - 1,
                .messages_count = 0}}};
  protocol::Bytes answer;
  append_figures_answer(figures, answer);
  std::vector<core::PartitionFigures> parsed;
  ASSERT_TRUE(parse_figures_answer(answer, parsed).ok());
  ASSERT_EQ(parsed.size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(parsed[i].key, figures[i].key);
    EXPECT_EQ(parsed[i].info.id, figures[i].info.id);
    EXPECT_EQ(parsed[i].info.segments_count, figures[i].info.segments_count);
    EXPECT_EQ(parsed[i].info.current_offset, figures[i].info.current_offset);
    EXPECT_EQ(parsed[i].info.size_bytes, figures[i].info.size_bytes);
    EXPECT_EQ(parsed[i].info.messages_count, figures[i].info.messages_count);
  }
}

TEST(LinkFigures, MalformedOversizedOrRefusedAnswersAreErrors) {
  protocol::Bytes request;
  append_figures_request({.stream = 1, .topic = 2}, request);
  request[5] = std::byte{1};  // has topic, no stream: refused.
  request[0] = std::byte{0};
  EXPECT_FALSE(parse_figures_request(request).ok());
  request.push_back(std::byte{0});
  EXPECT_FALSE(parse_figures_request(request).ok());
  const std::vector<core::PartitionFigures> one = {
      {.key = {StreamId(1), TopicId(1), PartitionId(1)}}};
  protocol::Bytes answer;
  append_figures_answer(one, answer);
  std::vector<core::PartitionFigures> parsed;
  protocol::Bytes cut(answer.begin(), answer.end() - 1);
  EXPECT_EQ(parse_figures_answer(cut, parsed).error(), Error::invalid_command);
  protocol::Bytes longer = answer;
  longer.push_back(std::byte{0});
  EXPECT_EQ(parse_figures_answer(longer, parsed).error(), Error::invalid_command);
  // A count past figures_max is refused before anything is read or reserved.
  protocol::Bytes huge(answer.begin(), answer.begin() + 8);
  huge.insert(huge.end(), {std::byte{0xFF}, std::byte{0xFF}, std::byte{0xFF}, std::byte{0x7F}});
  EXPECT_EQ(parse_figures_answer(huge, parsed).error(), Error::invalid_command);
  // An owner that does not know the request answers an error: no figures from it.
  const auto refused = protocol::error_response(Error::invalid_command);
  EXPECT_EQ(parse_figures_answer(refused, parsed).error(), Error::shard_communication_error);
  // At most figures_max entries go into an answer.
  const std::vector<core::PartitionFigures> many(figures_max + 5);
  protocol::Bytes capped;
  append_figures_answer(many, capped);
  ASSERT_TRUE(parse_figures_answer(capped, parsed).ok());
  EXPECT_EQ(parsed.size(), figures_max);
}

TEST(AnswerTable, ResentWriteGetsItsFirstAnswer) {
  AnswerTable table(4);
  EXPECT_EQ(table.begin(1), AnswerTable::Seen::fresh);
  EXPECT_EQ(table.begin(1), AnswerTable::Seen::in_progress);
  const std::string first = "first";
  table.answered(1, as_bytes(first));
  EXPECT_EQ(table.begin(1), AnswerTable::Seen::answered);
  const auto answer = table.answer(1);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(answer.data()), answer.size()), first);
}

TEST(AnswerTable, TrimmedAndEvictedIdsAreRefusedNeverRerun) {
  AnswerTable table(4);
  for (uint64_t id = 10; id < 14; id++) {
    ASSERT_EQ(table.begin(id), AnswerTable::Seen::fresh);
    table.answered(id, {});
  }
  table.trim_below(12);
  EXPECT_EQ(table.floor(), 12u);
  EXPECT_EQ(table.begin(11), AnswerTable::Seen::answered);  // Still in its slot.
  EXPECT_EQ(table.begin(9), AnswerTable::Seen::forgotten);
  // 14..17 take every slot: 12 and 13 are evicted and refused from then on.
  for (uint64_t id = 14; id < 18; id++) EXPECT_EQ(table.begin(id), AnswerTable::Seen::fresh);
  EXPECT_EQ(table.begin(12), AnswerTable::Seen::forgotten);
  EXPECT_EQ(table.begin(13), AnswerTable::Seen::forgotten);
  EXPECT_GE(table.floor(), 14u);
  EXPECT_EQ(table.capacity(), 4u);
  // An in-progress id evicted by a newer one: its late answer is not stored over the newer.
  table.answered(13, as_bytes("late"));
  EXPECT_EQ(table.begin(17), AnswerTable::Seen::in_progress);
}

// Found by tests/fuzz/link_fuzz.cc: an empty slot was marked by the id UINT64_MAX, so a peer's
// first request with that id was taken for one in progress and never run nor answered.
TEST(AnswerTable, EveryIdIsFreshTheFirstTimeItComes) {
  AnswerTable table(4);
  EXPECT_EQ(table.begin(UINT64_MAX), AnswerTable::Seen::fresh);
  EXPECT_EQ(table.begin(UINT64_MAX), AnswerTable::Seen::in_progress);
  table.answered(UINT64_MAX, as_bytes("max"));
  EXPECT_EQ(table.begin(UINT64_MAX), AnswerTable::Seen::answered);
  EXPECT_EQ(table.answer(UINT64_MAX).size(), 3u);
  AnswerTable other(4);
  EXPECT_EQ(other.begin(0), AnswerTable::Seen::fresh);
}

TEST(ClusterSecret, MissingShortOrWorldReadableIsRefused) {
  char path[] = "/tmp/hark-secret-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::string why;
  EXPECT_FALSE(read_cluster_secret("", why).ok());
  EXPECT_NE(why.find("secret_file"), std::string::npos);
  EXPECT_FALSE(read_cluster_secret("/nonexistent/secret", why).ok());
  std::ofstream(path) << "short\n";
  ::chmod(path, 0600);
  EXPECT_FALSE(read_cluster_secret(path, why).ok());
  EXPECT_NE(why.find("at least"), std::string::npos) << why;
  std::ofstream(path) << secret_a << "\n";
  ::chmod(path, 0644);
  EXPECT_FALSE(read_cluster_secret(path, why).ok());
  EXPECT_NE(why.find("world-readable"), std::string::npos) << why;
  ::chmod(path, 0640);
  const Result<std::string> secret = read_cluster_secret(path, why);
  ASSERT_TRUE(secret.ok()) << why;
  EXPECT_EQ(*secret, secret_a);
  ::unlink(path);
}

}  // namespace
}  // namespace hark::server::cluster
