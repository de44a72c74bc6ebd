#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Generic glue over the per-type codecs. Every request and response type T in protocol/ has
//   void encode(const T&, Writer&);      // appends the payload
//   Status decode(Reader&, T&);          // reads the payload, Iggy 0.8.0's errors
// found by argument-dependent lookup; request types also have `static constexpr Command code`.

template <typename T>
struct Decoded {
  T value;
  // Bytes after the decoded fields. 0.8.0 accepts them and only logs a warning; a server
  // should do the same (rate-limited), a client may ignore them.
  size_t trailing_bytes = 0;
};

// Decodes a whole payload into a T.
template <typename T>
Result<Decoded<T>> decode_payload(std::span<const std::byte> payload) {
  Reader reader(payload);
  T value{};
  HARK_TRY(decode(reader, value));
  return Decoded<T>{std::move(value), reader.remaining()};
}

// Decodes a response that 0.8.0 sends with an empty payload for "not found" (get_stream,
// get_topic, get_user, get_consumer_group, get_client, get_consumer_offset): nullopt then.
template <typename T>
Result<std::optional<T>> decode_optional_payload(std::span<const std::byte> payload) {
  if (payload.empty()) return std::optional<T>();
  HARK_TRY_ASSIGN(Decoded<T> decoded, decode_payload<T>(payload));
  return std::optional<T>(std::move(decoded.value));
}

// Appends T's payload to `out`. On error (a value the wire cannot carry) `out` is restored.
template <typename T>
Status encode_payload(const T& value, Bytes& out) {
  const size_t start = out.size();
  Writer writer(out);
  encode(value, writer);
  if (!writer.status().ok()) out.resize(start);
  return writer.status();
}

// Appends a whole request frame (header and payload) to `out`; restores `out` on error.
template <typename T>
Status encode_request(const T& request, Bytes& out) {
  const size_t start = out.size();
  Writer writer(out);
  writer.u32(0);  // Patched below, once the payload size is known.
  writer.u32(command_code(T::code));
  encode(request, writer);
  if (out.size() - start - 4 > UINT32_MAX) writer.fail(Error::invalid_size_bytes);
  writer.patch_u32(start, static_cast<uint32_t>(out.size() - start - 4));
  if (!writer.status().ok()) out.resize(start);
  return writer.status();
}

// Appends a whole OK response frame (status 0, length, payload) to `out`.
template <typename T>
Status encode_response(const T& response, Bytes& out) {
  const size_t start = out.size();
  Writer writer(out);
  writer.u32(0);
  writer.u32(0);  // Patched below.
  encode(response, writer);
  if (out.size() - start - 8 > UINT32_MAX) writer.fail(Error::invalid_size_bytes);
  writer.patch_u32(start + 4, static_cast<uint32_t>(out.size() - start - 8));
  if (!writer.status().ok()) out.resize(start);
  return writer.status();
}

}  // namespace hark::protocol
