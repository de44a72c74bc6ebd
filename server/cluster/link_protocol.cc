#include "hark/server/cluster/link_protocol.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include "hark/core/base/assert.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/reader.h"

namespace hark::server::cluster {
namespace {

constexpr size_t frame_size_max_header = 4;

bool known_kind(uint8_t kind) {
  return kind >= static_cast<uint8_t>(LinkKind::hello) &&
         kind <= static_cast<uint8_t>(LinkKind::cancel);
}

// Starts a frame of `kind`; returns where its length goes (patched by end_frame).
size_t begin_frame(protocol::Writer& writer, LinkKind kind) {
  const size_t at = writer.size();
  writer.u32(0);
  writer.u8(static_cast<uint8_t>(kind));
  return at;
}

void end_frame(protocol::Writer& writer, size_t at) {
  writer.patch_u32(at, static_cast<uint32_t>(writer.size() - at - frame_size_max_header));
}

template <size_t N>
Status read_array(protocol::Reader& reader, std::array<std::byte, N>& out) {
  HARK_TRY_ASSIGN(const std::span<const std::byte> bytes, reader.bytes(N));
  std::memcpy(out.data(), bytes.data(), N);
  return ok_status();
}

void put_u32(std::vector<std::byte>& out, uint32_t value) {
  for (int i = 0; i < 4; i++) out.push_back(static_cast<std::byte>(value >> (8 * i)));
}

void put_u64(std::vector<std::byte>& out, uint64_t value) {
  for (int i = 0; i < 8; i++) out.push_back(static_cast<std::byte>(value >> (8 * i)));
}

}  // namespace

LinkFrame scan_link_frame(std::span<const std::byte> received, size_t body_max) {
  LinkFrame frame;
  if (received.size() < link_header_size) return frame;
  const uint32_t length = protocol::load_u32(received, 0);
  const auto kind = static_cast<uint8_t>(received[4]);
  if (length == 0 || length - 1 > body_max || !known_kind(kind)) {
    frame.state = LinkScanState::rejected;
    return frame;
  }
  if (received.size() < frame_size_max_header + size_t{length}) return frame;
  frame.state = LinkScanState::ready;
  frame.kind = static_cast<LinkKind>(kind);
  frame.body = received.subspan(link_header_size, length - 1);
  frame.frame_size = frame_size_max_header + length;
  return frame;
}

LinkFrame LinkReader::next(bool authenticated) {
  const LinkFrame frame =
      scan_link_frame(std::span<const std::byte>(in_).subspan(head_),
                      authenticated ? link_body_max : link_body_max_unauthenticated);
  if (frame.state == LinkScanState::ready) head_ += frame.frame_size;
  return frame;
}

void LinkReader::compact() {
  if (head_ == in_.size()) {
    in_.clear();
    head_ = 0;
  } else if (head_ > compact_after) {
    in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

void LinkReader::clear() {
  in_.clear();
  head_ = 0;
}

void append_link_request(const LinkRequest& request, protocol::Bytes& out) {
  protocol::Writer writer(out);
  const size_t at = begin_frame(writer, LinkKind::request);
  writer.u64(request.id);
  writer.u64(request.answered_below);
  writer.u32(request.user);
  writer.u32(request.client);
  writer.u32(request.code);
  writer.u8(request.flags);
  writer.u64(request.wait_us);
  writer.bytes(request.payload);
  end_frame(writer, at);
}

Result<LinkRequest> parse_link_request(std::span<const std::byte> body) {
  protocol::Reader reader(body);
  LinkRequest request;
  HARK_TRY_ASSIGN(request.id, reader.u64());
  HARK_TRY_ASSIGN(request.answered_below, reader.u64());
  HARK_TRY_ASSIGN(request.user, reader.u32());
  HARK_TRY_ASSIGN(request.client, reader.u32());
  HARK_TRY_ASSIGN(request.code, reader.u32());
  HARK_TRY_ASSIGN(request.flags, reader.u8());
  HARK_TRY_ASSIGN(request.wait_us, reader.u64());
  request.payload = reader.rest();
  return request;
}

void append_link_fetch(const LinkFetch& fetch, protocol::Bytes& payload) {
  protocol::Writer writer(payload);
  writer.u32(fetch.stream);
  writer.u32(fetch.topic);
  writer.u32(fetch.partition);
  writer.u64(fetch.epoch);
  writer.u64(fetch.from);
  writer.u32(fetch.count);
  writer.u8(fetch.fence ? 1 : 0);
}

Result<LinkFetch> parse_link_fetch(std::span<const std::byte> payload) {
  protocol::Reader reader(payload);
  LinkFetch fetch;
  HARK_TRY_ASSIGN(fetch.stream, reader.u32());
  HARK_TRY_ASSIGN(fetch.topic, reader.u32());
  HARK_TRY_ASSIGN(fetch.partition, reader.u32());
  HARK_TRY_ASSIGN(fetch.epoch, reader.u64());
  HARK_TRY_ASSIGN(fetch.from, reader.u64());
  HARK_TRY_ASSIGN(fetch.count, reader.u32());
  HARK_TRY_ASSIGN(const uint8_t fence, reader.u8());
  if (fence > 1 || !reader.empty()) return Error::invalid_command;
  fetch.fence = fence == 1;
  return fetch;
}

void append_replica_fetch(const ReplicaFetchRequest& fetch, protocol::Bytes& payload) {
  protocol::Writer writer(payload);
  writer.u32(fetch.stream);
  writer.u32(fetch.topic);
  writer.u32(fetch.partition);
  writer.u64(fetch.epoch);
  writer.u64(fetch.set);
  writer.u64(fetch.from);
  writer.u32(fetch.count);
  writer.u64(fetch.offsets_version);
}

Result<ReplicaFetchRequest> parse_replica_fetch(std::span<const std::byte> payload) {
  protocol::Reader reader(payload);
  ReplicaFetchRequest fetch;
  HARK_TRY_ASSIGN(fetch.stream, reader.u32());
  HARK_TRY_ASSIGN(fetch.topic, reader.u32());
  HARK_TRY_ASSIGN(fetch.partition, reader.u32());
  HARK_TRY_ASSIGN(fetch.epoch, reader.u64());
  HARK_TRY_ASSIGN(fetch.set, reader.u64());
  HARK_TRY_ASSIGN(fetch.from, reader.u64());
  HARK_TRY_ASSIGN(fetch.count, reader.u32());
  HARK_TRY_ASSIGN(fetch.offsets_version, reader.u64());
  if (!reader.empty()) return Error::invalid_command;
  return fetch;
}

namespace {

// Stored offsets: [count u32] then [kind u8][id u32][offset u64] each.
constexpr size_t stored_offset_bytes = 13;

void write_offsets(protocol::Writer& writer, const LinkStoredOffsets& offsets) {
  writer.u32(static_cast<uint32_t>(offsets.size()));
  for (const auto& [consumer, offset] : offsets) {
    writer.u8(static_cast<uint8_t>(consumer.kind));
    writer.u32(consumer.id);
    writer.u64(offset);
  }
}

Result<LinkStoredOffsets> read_offsets(protocol::Reader& reader, size_t bytes) {
  HARK_TRY_ASSIGN(const uint32_t count, reader.u32());
  if (count > bytes / stored_offset_bytes) return Error::invalid_command;
  LinkStoredOffsets offsets(count);
  for (auto& [consumer, offset] : offsets) {
    HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
    if (kind != static_cast<uint8_t>(core::ConsumerRef::Kind::consumer) &&
        kind != static_cast<uint8_t>(core::ConsumerRef::Kind::group)) {
      return Error::invalid_command;
    }
    consumer.kind = static_cast<core::ConsumerRef::Kind>(kind);
    HARK_TRY_ASSIGN(consumer.id, reader.u32());
    HARK_TRY_ASSIGN(offset, reader.u64());
  }
  return offsets;
}

// In a replica fetch's answer, where the count would be: the fetch held the leader's offsets.
constexpr uint8_t offsets_held = 0;
constexpr uint8_t offsets_follow = 1;

// [u64 start][u64 end], an end of 0 for none.
void write_sealed_segment(protocol::Writer& writer,
                          const std::optional<storage::SegmentBounds>& sealed) {
  writer.u64(sealed ? sealed->start.value() : 0);
  writer.u64(sealed ? sealed->end.value() : 0);
}

Result<std::optional<storage::SegmentBounds>> read_sealed_segment(protocol::Reader& reader) {
  HARK_TRY_ASSIGN(const uint64_t start, reader.u64());
  HARK_TRY_ASSIGN(const uint64_t end, reader.u64());
  if (end == 0) return std::optional<storage::SegmentBounds>();
  if (start >= end) return Error::invalid_command;
  return std::optional(storage::SegmentBounds{.start = Offset(start), .end = Offset(end)});
}

}  // namespace

void append_link_fetch_head(const LinkFetchAnswer& answer, protocol::Bytes& payload) {
  protocol::Writer writer(payload);
  write_sealed_segment(writer, answer.sealed_segment);
}

Result<LinkFetchAnswer> parse_link_fetch_answer(std::span<const std::byte> payload) {
  protocol::Reader reader(payload);
  LinkFetchAnswer answer;
  HARK_TRY_ASSIGN(answer.sealed_segment, read_sealed_segment(reader));
  answer.poll = reader.rest();
  return answer;
}

void append_replica_fetch_head(const ReplicaFetchAnswer& answer, protocol::Bytes& payload) {
  protocol::Writer writer(payload);
  writer.u64(answer.commit);
  writer.u64(answer.appended);
  writer.u64(answer.epoch_start);
  writer.u64(answer.offsets_version);
  write_sealed_segment(writer, answer.sealed_segment);
  writer.u8(answer.offsets.has_value() ? offsets_follow : offsets_held);
  if (answer.offsets.has_value()) write_offsets(writer, *answer.offsets);
}

Result<ReplicaFetchAnswer> parse_replica_fetch_answer(std::span<const std::byte> payload) {
  protocol::Reader reader(payload);
  ReplicaFetchAnswer answer;
  HARK_TRY_ASSIGN(answer.commit, reader.u64());
  HARK_TRY_ASSIGN(answer.appended, reader.u64());
  HARK_TRY_ASSIGN(answer.epoch_start, reader.u64());
  HARK_TRY_ASSIGN(answer.offsets_version, reader.u64());
  if (answer.commit > answer.appended) return Error::invalid_command;
  HARK_TRY_ASSIGN(answer.sealed_segment, read_sealed_segment(reader));
  if (answer.sealed_segment && answer.sealed_segment->end > Offset(answer.appended)) {
    return Error::invalid_command;
  }
  HARK_TRY_ASSIGN(const uint8_t offsets, reader.u8());
  if (offsets == offsets_follow) {
    HARK_TRY_ASSIGN(answer.offsets, read_offsets(reader, payload.size()));
  } else if (offsets != offsets_held) {
    return Error::invalid_command;
  }
  answer.poll = reader.rest();
  return answer;
}

void append_link_fence_answer(const LinkFenceAnswer& answer, protocol::Bytes& payload) {
  protocol::Writer writer(payload);
  writer.u64(answer.end);
  write_offsets(writer, answer.offsets);
}

Result<LinkFenceAnswer> parse_link_fence_answer(std::span<const std::byte> payload) {
  protocol::Reader reader(payload);
  LinkFenceAnswer answer;
  HARK_TRY_ASSIGN(answer.end, reader.u64());
  HARK_TRY_ASSIGN(answer.offsets, read_offsets(reader, payload.size()));
  if (!reader.empty()) return Error::invalid_command;
  return answer;
}

void append_link_response(uint64_t id, std::span<const std::byte> response, protocol::Bytes& out) {
  protocol::Writer writer(out);
  const size_t at = begin_frame(writer, LinkKind::response);
  writer.u64(id);
  writer.bytes(response);
  end_frame(writer, at);
}

std::array<std::byte, 8> not_hosted_response() {
  static_assert(protocol::response_header_size == 8);
  std::array<std::byte, 8> header{};
  const uint32_t status = link_status_not_hosted;
  std::memcpy(header.data(), &status, sizeof status);  // Little-endian, as every field.
  return header;
}

bool not_hosted(std::span<const std::byte> response) {
  return response.size() >= protocol::response_header_size &&
         protocol::load_u32(response, 0) == link_status_not_hosted;
}

Result<LinkResponse> parse_link_response(std::span<const std::byte> body) {
  protocol::Reader reader(body);
  LinkResponse response;
  HARK_TRY_ASSIGN(response.id, reader.u64());
  response.response = reader.rest();
  // A whole Iggy response and nothing else: it is relayed to a client as it is.
  if (response.response.size() < protocol::response_header_size ||
      protocol::load_u32(response.response, 4) !=
          response.response.size() - protocol::response_header_size) {
    return Error::invalid_command;
  }
  return response;
}

void append_link_cancel(uint64_t id, protocol::Bytes& out) {
  protocol::Writer writer(out);
  const size_t at = begin_frame(writer, LinkKind::cancel);
  writer.u64(id);
  end_frame(writer, at);
}

Result<uint64_t> parse_link_cancel(std::span<const std::byte> body) {
  protocol::Reader reader(body);
  HARK_TRY_ASSIGN(const uint64_t id, reader.u64());
  if (!reader.empty()) return Error::invalid_command;
  return id;
}

void append_figures_request(const FiguresScope& scope, protocol::Bytes& out) {
  protocol::Writer writer(out);
  writer.u8(scope.stream ? 1 : 0);
  writer.u32(scope.stream.value_or(0));
  writer.u8(scope.topic ? 1 : 0);
  writer.u32(scope.topic.value_or(0));
}

Result<FiguresScope> parse_figures_request(std::span<const std::byte> payload) {
  protocol::Reader reader(payload);
  FiguresScope scope;
  HARK_TRY_ASSIGN(const uint8_t has_stream, reader.u8());
  HARK_TRY_ASSIGN(const uint32_t stream, reader.u32());
  HARK_TRY_ASSIGN(const uint8_t has_topic, reader.u8());
  HARK_TRY_ASSIGN(const uint32_t topic, reader.u32());
  if (!reader.empty() || has_stream > 1 || has_topic > 1 || (has_topic == 1 && has_stream == 0)) {
    return Error::invalid_command;
  }
  if (has_stream == 1) scope.stream = stream;
  if (has_topic == 1) scope.topic = topic;
  return scope;
}

void append_figures_answer(std::span<const core::PartitionFigures> figures, protocol::Bytes& out) {
  const size_t count = std::min(figures.size(), figures_max);
  const auto header = protocol::ok_response_header(4 + count * figures_entry_size);
  out.insert(out.end(), header.begin(), header.end());
  protocol::Writer writer(out);
  writer.u32(static_cast<uint32_t>(count));
  for (const core::PartitionFigures& entry : figures.first(count)) {
    writer.u32(entry.key.stream.value());
    writer.u32(entry.key.topic.value());
    writer.u32(entry.key.partition.value());
    writer.u32(entry.info.segments_count);
    writer.u64(entry.info.current_offset);
    writer.u64(entry.info.size_bytes);
    writer.u64(entry.info.messages_count);
  }
}

Status parse_figures_answer(std::span<const std::byte> response,
                            std::vector<core::PartitionFigures>& out) {
  out.clear();
  protocol::Reader reader(response);
  HARK_TRY_ASSIGN(const uint32_t status, reader.u32());
  HARK_TRY_ASSIGN(const uint32_t length, reader.u32());
  if (status != 0) return Error::shard_communication_error;  // The owner refused it.
  HARK_TRY_ASSIGN(const uint32_t count, reader.u32());
  if (count > figures_max || length != reader.remaining() + 4 ||
      reader.remaining() != count * figures_entry_size) {
    return Error::invalid_command;
  }
  out.reserve(count);
  for (uint32_t i = 0; i < count; i++) {
    core::PartitionFigures entry;
    HARK_TRY_ASSIGN(const uint32_t stream, reader.u32());
    HARK_TRY_ASSIGN(const uint32_t topic, reader.u32());
    HARK_TRY_ASSIGN(const uint32_t partition, reader.u32());
    entry.key = core::PartitionKey{
        .stream = StreamId(stream), .topic = TopicId(topic), .partition = PartitionId(partition)};
    entry.info.id = partition;
    HARK_TRY_ASSIGN(entry.info.segments_count, reader.u32());
    HARK_TRY_ASSIGN(entry.info.current_offset, reader.u64());
    HARK_TRY_ASSIGN(entry.info.size_bytes, reader.u64());
    HARK_TRY_ASSIGN(entry.info.messages_count, reader.u64());
    out.push_back(entry);
  }
  return ok_status();
}

LinkMac link_mac(LinkDirection direction, std::string_view secret, std::string_view cluster,
                 uint32_t dialer, uint32_t acceptor, uint64_t dialer_incarnation,
                 uint64_t acceptor_incarnation, const LinkNonce& dialer_nonce,
                 const LinkNonce& acceptor_nonce) {
  std::vector<std::byte> message;
  const std::string_view label =
      direction == LinkDirection::accept ? "hark-link-accept" : "hark-link-dial";
  const auto* label_bytes = reinterpret_cast<const std::byte*>(label.data());
  message.insert(message.end(), label_bytes, label_bytes + label.size());
  put_u32(message, dialer);
  put_u32(message, acceptor);
  put_u64(message, dialer_incarnation);
  put_u64(message, acceptor_incarnation);
  message.insert(message.end(), dialer_nonce.begin(), dialer_nonce.end());
  message.insert(message.end(), acceptor_nonce.begin(), acceptor_nonce.end());
  const auto* cluster_bytes = reinterpret_cast<const std::byte*>(cluster.data());
  message.insert(message.end(), cluster_bytes, cluster_bytes + cluster.size());
  LinkMac mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
       reinterpret_cast<unsigned char*>(mac.data()), &length);
  HARK_ASSERT(length == link_mac_size);
  return mac;
}

bool link_mac_equal(const LinkMac& a, std::span<const std::byte> b) {
  return b.size() == a.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

LinkNonce random_nonce() {
  LinkNonce nonce{};
  HARK_ASSERT(RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()),
                         static_cast<int>(nonce.size())) == 1);
  return nonce;
}

uint64_t random_incarnation() {
  uint64_t value = 0;
  HARK_ASSERT(RAND_bytes(reinterpret_cast<unsigned char*>(&value), sizeof(value)) == 1);
  return value == 0 ? 1 : value;  // 0 means "none" to the entry side.
}

LinkDialer::LinkDialer(const LinkIdentity& self, uint32_t entry_shard, uint32_t expected_node,
                       const LinkNonce& nonce)
    : self_(self), entry_shard_(entry_shard), expected_node_(expected_node), nonce_(nonce) {}

void LinkDialer::hello(protocol::Bytes& out) const {
  protocol::Writer writer(out);
  const size_t at = begin_frame(writer, LinkKind::hello);
  writer.u16(link_version);
  writer.u32(self_.node);
  writer.u32(entry_shard_);
  writer.u64(self_.incarnation);
  writer.bytes(nonce_);
  writer.u8(static_cast<uint8_t>(self_.cluster.size()));
  writer.chars(self_.cluster);
  end_frame(writer, at);
}

Result<LinkPeer> LinkDialer::on_challenge(const LinkFrame& frame, protocol::Bytes& out) {
  if (frame.kind != LinkKind::challenge) return Error::invalid_command;
  protocol::Reader reader(frame.body);
  LinkPeer peer;
  LinkNonce nonce{};
  LinkMac mac{};
  HARK_TRY_ASSIGN(peer.node, reader.u32());
  HARK_TRY_ASSIGN(peer.incarnation, reader.u64());
  HARK_TRY(read_array(reader, nonce));
  HARK_TRY(read_array(reader, mac));
  if (!reader.empty()) return Error::invalid_command;
  // The node the dialer meant to reach, proving it knows the secret for this very hello.
  const LinkMac expected =
      link_mac(LinkDirection::accept, self_.secret, self_.cluster, self_.node, expected_node_,
               self_.incarnation, peer.incarnation, nonce_, nonce);
  if (peer.node != expected_node_ || !link_mac_equal(expected, mac)) return Error::unauthenticated;
  const LinkMac proof = link_mac(LinkDirection::dial, self_.secret, self_.cluster, self_.node,
                                 peer.node, self_.incarnation, peer.incarnation, nonce_, nonce);
  protocol::Writer writer(out);
  const size_t at = begin_frame(writer, LinkKind::proof);
  writer.bytes(proof);
  end_frame(writer, at);
  return peer;
}

LinkAcceptor::LinkAcceptor(const LinkIdentity& self, const LinkNonce& nonce)
    : self_(self), nonce_(nonce) {}

Status LinkAcceptor::on_hello(const LinkFrame& frame, protocol::Bytes& out) {
  if (frame.kind != LinkKind::hello || peer_.has_value()) return Error::invalid_command;
  protocol::Reader reader(frame.body);
  LinkPeer peer;
  HARK_TRY_ASSIGN(const uint16_t version, reader.u16());
  if (version != link_version) return Error::invalid_version;
  HARK_TRY_ASSIGN(peer.node, reader.u32());
  HARK_TRY_ASSIGN(peer.entry_shard, reader.u32());
  HARK_TRY_ASSIGN(peer.incarnation, reader.u64());
  HARK_TRY(read_array(reader, peer_nonce_));
  HARK_TRY_ASSIGN(const uint8_t name_size, reader.u8());
  HARK_TRY_ASSIGN(const std::span<const std::byte> name, reader.bytes(name_size));
  if (!reader.empty()) return Error::invalid_command;
  // Another cluster's name is not refused here: its MAC will not match (the name is in it),
  // and the dialer learns nothing from a different answer.
  (void)name;
  peer_ = peer;
  const LinkMac mac =
      link_mac(LinkDirection::accept, self_.secret, self_.cluster, peer.node, self_.node,
               peer.incarnation, self_.incarnation, peer_nonce_, nonce_);
  protocol::Writer writer(out);
  const size_t at = begin_frame(writer, LinkKind::challenge);
  writer.u32(self_.node);
  writer.u64(self_.incarnation);
  writer.bytes(nonce_);
  writer.bytes(mac);
  end_frame(writer, at);
  return ok_status();
}

Result<LinkPeer> LinkAcceptor::on_proof(const LinkFrame& frame) {
  if (frame.kind != LinkKind::proof || !peer_.has_value()) return Error::invalid_command;
  const LinkMac expected =
      link_mac(LinkDirection::dial, self_.secret, self_.cluster, peer_->node, self_.node,
               peer_->incarnation, self_.incarnation, peer_nonce_, nonce_);
  if (!link_mac_equal(expected, frame.body)) return Error::unauthenticated;
  return *peer_;
}

AnswerTable::AnswerTable(size_t capacity) : slots_(capacity) { HARK_ASSERT(capacity > 0); }

AnswerTable::Seen AnswerTable::begin(uint64_t id) {
  Slot& found = slot(id);
  if (found.used && found.id == id) return found.done ? Seen::answered : Seen::in_progress;
  // Below the floor, or a newer id holds its slot: it may have run and been forgotten.
  if (id < floor_ || (found.used && found.id > id)) return Seen::forgotten;
  // The slot's previous id (if any) is forgotten from now on: raise the floor past it, so it
  // is refused rather than executed again.
  if (found.used && found.id >= floor_) floor_ = found.id + 1;
  found.id = id;
  found.used = true;
  found.done = false;
  found.answer.clear();
  return Seen::fresh;
}

void AnswerTable::answered(uint64_t id, std::span<const std::byte> answer) {
  Slot& found = slot(id);
  if (!found.used || found.id != id) return;
  found.done = true;
  found.answer.assign(answer.begin(), answer.end());
}

std::span<const std::byte> AnswerTable::answer(uint64_t id) const {
  const Slot& found = slot(id);
  HARK_ASSERT(found.used && found.id == id && found.done);
  return found.answer;
}

void AnswerTable::trim_below(uint64_t mark) {
  // Lazily: a slot below the floor is taken by the next id that maps to it.
  if (mark > floor_) floor_ = mark;
}

Result<std::string> read_cluster_secret(const std::string& path, std::string& why) {
  struct stat info {};
  if (path.empty()) {
    why = "cluster mode needs cluster.secret_file (--cluster-secret-file)";
    return Error::invalid_configuration;
  }
  if (::stat(path.c_str(), &info) != 0) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return Error::invalid_configuration;
  }
  if ((info.st_mode & S_IROTH) != 0) {
    why = path + " is world-readable (chmod o-r it)";
    return Error::invalid_configuration;
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  std::string secret = content.str();
  if (!file) {
    why = "cannot read " + path;
    return Error::invalid_configuration;
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.size() < link_secret_min) {
    why = path + " holds " + std::to_string(secret.size()) + " bytes; at least " +
          std::to_string(link_secret_min) + " are needed";
    return Error::invalid_configuration;
  }
  return secret;
}

}  // namespace hark::server::cluster
