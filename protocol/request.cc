#include "hark/protocol/request.h"

#include <array>
#include <utility>

#include "hark/protocol/codec.h"

namespace hark::protocol {
namespace {

using DecodeFunction = Result<DecodedRequest> (*)(std::span<const std::byte>);

struct Decoder {
  uint32_t code;
  DecodeFunction decode;
};

template <typename T>
Result<DecodedRequest> decode_as(std::span<const std::byte> payload) {
  HARK_TRY_ASSIGN(Decoded<T> decoded, decode_payload<T>(payload));
  return DecodedRequest{Request(std::in_place_type<T>, std::move(decoded.value)),
                        decoded.trailing_bytes};
}

// One entry per alternative of Request, built from the variant itself, so adding a request
// type to Request is all it takes to make it decodable.
template <size_t... indexes>
constexpr auto make_decoders(std::index_sequence<indexes...>) {
  return std::array<Decoder, sizeof...(indexes)>{
      Decoder{command_code(std::variant_alternative_t<indexes, Request>::code),
              &decode_as<std::variant_alternative_t<indexes, Request>>}...};
}

constexpr auto decoders = make_decoders(std::make_index_sequence<std::variant_size_v<Request>>());

}  // namespace

Result<DecodedRequest> decode_request(uint32_t code, std::span<const std::byte> payload) {
  for (const Decoder& decoder : decoders) {
    if (decoder.code == code) return decoder.decode(payload);
  }
  return Error::invalid_command;
}

uint32_t request_code(const Request& request) {
  return std::visit([](const auto& alternative) { return command_code(alternative.code); },
                    request);
}

Status encode_request_frame(const Request& request, Bytes& out) {
  return std::visit([&out](const auto& alternative) { return encode_request(alternative, out); },
                    request);
}

}  // namespace hark::protocol
