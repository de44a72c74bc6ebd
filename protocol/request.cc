#include "hark/protocol/request.h"

#include <array>
#include <utility>

#include "hark/protocol/codec.h"

namespace hark::protocol {
namespace {

// The decoder table, built from the Request variant itself, so adding a request type to the
// variant is all it takes to make it decodable.
template <typename Decoded>
struct Decoder {
  uint32_t code;
  Result<Decoded> (*decode)(std::span<const std::byte>);
};

template <typename Decoded, typename T>
Result<Decoded> decode_as(std::span<const std::byte> payload) {
  HARK_TRY_ASSIGN(protocol::Decoded<T> decoded, decode_payload<T>(payload));
  return Decoded{decltype(Decoded::request)(std::in_place_type<T>, std::move(decoded.value)),
                 decoded.trailing_bytes};
}

template <typename Decoded, size_t... indexes>
constexpr auto make_decoders(std::index_sequence<indexes...>) {
  using Variant = decltype(Decoded::request);
  return std::array<Decoder<Decoded>, sizeof...(indexes)>{
      Decoder<Decoded>{command_code(std::variant_alternative_t<indexes, Variant>::code),
                       &decode_as<Decoded, std::variant_alternative_t<indexes, Variant>>}...};
}

template <typename Decoded>
Result<Decoded> decode_with_table(uint32_t code, std::span<const std::byte> payload) {
  using Variant = decltype(Decoded::request);
  static constexpr auto decoders =
      make_decoders<Decoded>(std::make_index_sequence<std::variant_size_v<Variant>>());
  for (const Decoder<Decoded>& decoder : decoders) {
    if (decoder.code == code) return decoder.decode(payload);
  }
  return Error::invalid_command;
}

template <typename Variant>
uint32_t code_of(const Variant& request) {
  return std::visit([](const auto& alternative) { return command_code(alternative.code); },
                    request);
}

template <typename Variant>
Status encode_frame_of(const Variant& request, Bytes& out) {
  return std::visit([&out](const auto& alternative) { return encode_request(alternative, out); },
                    request);
}

}  // namespace

Result<DecodedRequest> decode_request(uint32_t code, std::span<const std::byte> payload) {
  return decode_with_table<DecodedRequest>(code, payload);
}

uint32_t request_code(const Request& request) { return code_of(request); }

Status encode_request_frame(const Request& request, Bytes& out) {
  return encode_frame_of(request, out);
}

}  // namespace hark::protocol
