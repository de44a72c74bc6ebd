// Fuzzes what a node reads from a node-link peer (server/cluster/link_protocol.h), before the
// handshake and after it. The first input byte picks the side this node plays (acceptor: a
// hostile dialer; dialer: a hostile acceptor) and whether the harness first completes a real
// handshake with its own peer (so the fuzzer reaches what a node reads once authenticated);
// the second how the rest is cut into receives. The rest goes through a LinkReader as a
// LinkSocket feeds it (server/node_link.cc), and each frame is handled as InboundLink,
// OutboundLink and LinkHub::execute handle it: hello, proof and challenge by LinkAcceptor and
// LinkDialer; requests by parse_link_request, the AnswerTable (trimmed and begun as the owner
// does it) and the Iggy decoder of the forwarded command (a figures request's scope too);
// responses by parse_link_response and as a figures answer; cancels. Every input must end in a
// closed link or wait for more bytes, never a crash, an assertion, more buffered bytes than one
// frame's limit, or an AnswerTable that claims an id it was never given or answers one with
// another's answer.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <vector>

#include "hark/protocol/framing.h"
#include "hark/protocol/request.h"
#include "hark/server/cluster/link_protocol.h"

namespace {

using namespace hark::server::cluster;
using hark::protocol::Bytes;

const std::string secret(40, 's');
constexpr uint32_t dialer_node = 1;
constexpr uint32_t acceptor_node = 2;

LinkNonce nonce_of(uint8_t value) {
  LinkNonce nonce{};
  nonce.fill(std::byte{value});
  return nonce;
}

LinkIdentity identity(uint32_t node) {
  return {.secret = secret, .cluster = "fuzz", .node = node, .incarnation = node * 1000u};
}

LinkFrame only_frame(const Bytes& bytes) { return scan_link_frame(bytes, link_body_max); }

// The answer the harness records for `id`: its own bytes, so a mixed-up slot shows.
Bytes answer_of(uint64_t id) {
  Bytes answer(8);
  std::memcpy(answer.data(), &id, sizeof id);
  return answer;
}

// The owner's side of forwarded requests: a small AnswerTable (eviction comes quickly) and the
// ids it was given, to check its claims against.
struct Owner {
  AnswerTable table{16};
  std::set<uint64_t> begun;

  bool request(std::span<const std::byte> body) {
    const hark::Result<LinkRequest> request = parse_link_request(body);
    if (!request.ok()) return false;
    (void)hark::protocol::decode_request(request->code, request->payload);
    if (request->code == figures_code) (void)parse_figures_request(request->payload);
    if (request->code == replica_fetch_code) (void)parse_replica_fetch(request->payload);
    if ((request->flags & LinkRequest::deduplicated) == 0) return true;
    table.trim_below(request->answered_below);
    const AnswerTable::Seen seen = table.begin(request->id);
    if (seen == AnswerTable::Seen::fresh) {
      begun.insert(request->id);
      // Some writes stay in progress (their answer comes later), the others answer now.
      if ((request->wait_us & 1) == 0) table.answered(request->id, answer_of(request->id));
    } else if (seen != AnswerTable::Seen::forgotten && !begun.contains(request->id)) {
      __builtin_trap();  // Claims an id it was never given: that write would never run.
    } else if (seen == AnswerTable::Seen::answered) {
      const std::span<const std::byte> answer = table.answer(request->id);
      const Bytes expected = answer_of(request->id);
      if (!std::equal(answer.begin(), answer.end(), expected.begin(), expected.end())) {
        __builtin_trap();
      }
    }
    return true;
  }
};

// One side of a link, fed the hostile peer's bytes.
class Side {
 public:
  Side(bool acceptor, bool authenticate)
      : acceptor_(acceptor),
        accept_(identity(acceptor_node), nonce_of(2)),
        dial_(identity(dialer_node), 0, acceptor_node, nonce_of(1)) {
    Bytes hello;
    dial_.hello(hello);
    if (!authenticate) return;
    // The harness's own peer completes a real handshake first.
    Bytes challenge;
    Bytes proof;
    if (!accept_.on_hello(only_frame(hello), challenge).ok()) __builtin_trap();
    if (!dial_.on_challenge(only_frame(challenge), proof).ok()) __builtin_trap();
    if (!accept_.on_proof(only_frame(proof)).ok()) __builtin_trap();
    hello_seen_ = true;
    authenticated_ = true;
  }

  // One receive; false once the link is closed.
  bool receive(std::span<const std::byte> bytes) {
    reader_.append(bytes);
    while (true) {
      const LinkFrame frame = reader_.next(authenticated_);
      if (frame.state == LinkScanState::rejected) return false;
      if (frame.state == LinkScanState::need_more) break;
      const size_t limit = authenticated_ ? link_body_max : link_body_max_unauthenticated;
      if (frame.body.size() > limit || frame.frame_size != link_header_size + frame.body.size()) {
        __builtin_trap();
      }
      if (!(acceptor_ ? as_acceptor(frame) : as_dialer(frame))) return false;
    }
    reader_.compact();
    const size_t limit = authenticated_ ? link_body_max : link_body_max_unauthenticated;
    if (reader_.buffered() > link_header_size + limit) __builtin_trap();
    return true;
  }

 private:
  // InboundLink::on_frame.
  bool as_acceptor(const LinkFrame& frame) {
    Bytes out;
    if (!hello_seen_ && frame.kind == LinkKind::hello) {
      hello_seen_ = true;
      return accept_.on_hello(frame, out).ok();
    }
    if (!authenticated_) {
      authenticated_ = accept_.on_proof(frame).ok();
      return authenticated_;
    }
    switch (frame.kind) {
      case LinkKind::request: return owner_.request(frame.body);
      case LinkKind::cancel: return parse_link_cancel(frame.body).ok();
      default: return false;
    }
  }

  // OutboundLink::on_frame.
  bool as_dialer(const LinkFrame& frame) {
    Bytes out;
    if (!authenticated_) {
      authenticated_ = dial_.on_challenge(frame, out).ok();
      return authenticated_;
    }
    if (frame.kind != LinkKind::response) return false;
    const hark::Result<LinkResponse> response = parse_link_response(frame.body);
    if (!response.ok()) return false;
    // Relayed to a client as it is: it must be one whole Iggy response.
    const std::span<const std::byte> bytes = response->response;
    if (bytes.size() < hark::protocol::response_header_size ||
        hark::protocol::load_u32(bytes, 4) != bytes.size() - hark::protocol::response_header_size) {
      __builtin_trap();
    }
    // A figures answer (connection_figures.cc): parsed whole or refused, within figures_max.
    std::vector<hark::core::PartitionFigures> figures;
    if (parse_figures_answer(bytes, figures).ok() && figures.size() > figures_max) {
      __builtin_trap();
    }
    // A replica fetch's answer (server/replication.cc): a commit past the end is refused, and
    // the poll answer is what follows the head, within the bytes.
    const std::span<const std::byte> body = bytes.subspan(hark::protocol::response_header_size);
    const auto fetched = parse_replica_fetch_answer(body);
    if (fetched.ok() &&
        (fetched->commit > fetched->appended ||
         (fetched->sealed_segment &&
          (fetched->sealed_segment->start >= fetched->sealed_segment->end ||
           fetched->sealed_segment->end.value() > fetched->appended)) ||
         fetched->poll.data() + fetched->poll.size() != body.data() + body.size())) {
      __builtin_trap();
    }
    // A move fetch's answer (server/move_copy.cc): an empty or backwards segment is refused.
    const auto moved = parse_link_fetch_answer(body);
    if (moved.ok() &&
        ((moved->sealed_segment && moved->sealed_segment->start >= moved->sealed_segment->end) ||
         moved->poll.data() + moved->poll.size() != body.data() + body.size())) {
      __builtin_trap();
    }
    return true;
  }

  bool acceptor_;
  bool authenticated_ = false;
  bool hello_seen_ = false;
  LinkAcceptor accept_;
  LinkDialer dial_;
  LinkReader reader_;
  Owner owner_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool acceptor = (data[0] & 1) == 0;
  const bool authenticate = (data[0] & 2) != 0;
  const size_t chunk = size_t{data[1]} + 1;
  Side side(acceptor, authenticate);
  std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data) + 2, size - 2);
  while (!rest.empty()) {
    const size_t n = std::min(chunk, rest.size());
    if (!side.receive(rest.first(n))) break;
    rest = rest.subspan(n);
  }
  return 0;
}
