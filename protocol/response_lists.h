#pragma once

#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Helpers for the list shapes of responses, shared by the response codecs. Allocation is
// driven by bytes actually present, never by a count taken from the input: each element
// decoded consumes at least one byte (every response element has a fixed part), so a hostile
// count fails on truncation before it can make a large vector.

// Elements to the end of the payload ("a run of X").
template <typename T>
Status decode_run(Reader& reader, std::vector<T>& items) {
  items.clear();
  while (!reader.empty()) {
    T item{};
    HARK_TRY(decode(reader, item));
    items.push_back(std::move(item));
  }
  return ok_status();
}

// Exactly `count` elements, the count having been read from the input.
template <typename T>
Status decode_counted(Reader& reader, uint64_t count, std::vector<T>& items) {
  items.clear();
  for (uint64_t i = 0; i < count; ++i) {
    T item{};
    HARK_TRY(decode(reader, item));
    items.push_back(std::move(item));
  }
  return ok_status();
}

template <typename T>
void encode_all(const std::vector<T>& items, Writer& writer) {
  for (const T& item : items) encode(item, writer);
}

}  // namespace hark::protocol
