// Covers the wire's hashes against vectors computed with libxxhash 0.8.1 (wire-notes §e):
// XXH3-64 seed 0 (including the published XXH3("") reference), the message checksum over
// bytes [8, end) of a real message, and XXH32 seed 0 for keys and named consumers.
#include "hark/protocol/hash.h"

#include <gtest/gtest.h>

#include "hark/protocol/message.h"
#include "hark/protocol/reader.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;
using test::text_bytes;

TEST(Hash, Xxh3MatchesReferenceVectors) {
  EXPECT_EQ(xxh3_64({}), 0x2d06800538d394c2u);
  EXPECT_EQ(xxh3_64(text_bytes("a")), 0xe6c632b61e964e1fu);
  EXPECT_EQ(xxh3_64(text_bytes("abc")), 0x78af5f94892f3950u);
  EXPECT_EQ(xxh3_64(text_bytes("hello")), 0x9555e8555c62dcfdu);
  EXPECT_EQ(xxh3_64(text_bytes("iggy")), 0xb421037ed388f177u);
  Bytes all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<std::byte>(i));
  EXPECT_EQ(xxh3_64(all_bytes), 0x9408a4433b952d71u);
}

TEST(Hash, Xxh32MatchesReferenceVectors) {
  EXPECT_EQ(xxh32({}), 0x02cc5d05u);
  EXPECT_EQ(xxh32(text_bytes("a")), 0x550d7456u);
  EXPECT_EQ(xxh32(text_bytes("hello")), 0xfb0077f9u);
  EXPECT_EQ(xxh32(text_bytes("iggy")), 0x96377a10u);
  EXPECT_EQ(consumer_id_of_name("iggy"), 0x96377a10u);
}

// id=1, offset=0, timestamp=1700000000000000, origin=0, no user headers, payload "hello".
Bytes example_message() {
  return hex(
      "0000000000000000 01000000000000000000000000000000 0000000000000000 00401e18240a0600 "
      "0000000000000000 00000000 05000000 0000000000000000 68656c6c6f");
}

TEST(Hash, MessageChecksumCoversBytesAfterTheChecksumField) {
  Bytes message = example_message();
  EXPECT_EQ(message_checksum(message), 0x0b05e71ba88fdef0u);
  // The checksum field itself is not covered.
  message[0] = std::byte{0xff};
  EXPECT_EQ(message_checksum(message), 0x0b05e71ba88fdef0u);
  // Every other byte is.
  message[message.size() - 1] = std::byte{'O'};
  EXPECT_NE(message_checksum(message), 0x0b05e71ba88fdef0u);
}

TEST(Hash, ChecksumOfATooShortSpanIsTheEmptyHash) {
  EXPECT_EQ(message_checksum(hex("0102")), xxh3_64({}));
}

TEST(Hash, StampSetsServerFieldsThenTheChecksum) {
  Bytes message = example_message();
  // Clear the fields the server fills, as a client sends them.
  for (size_t i = message_timestamp_at; i < message_timestamp_at + 8; ++i) message[i] = {};
  stamp_message(message, {.offset = 0, .timestamp = 1700000000000000, .id_if_zero = {9, 9}});
  EXPECT_EQ(load_u64(message, message_checksum_at), 0x0b05e71ba88fdef0u);
  EXPECT_EQ(load_u64(message, message_id_at), 1u);  // A non-zero id is kept.

  for (size_t i = message_id_at; i < message_id_at + 16; ++i) message[i] = {};
  stamp_message(message, {.offset = 7, .timestamp = 5, .id_if_zero = {9, 8}});
  EXPECT_EQ(load_u64(message, message_id_at), 9u);
  EXPECT_EQ(load_u64(message, message_id_at + 8), 8u);
  EXPECT_EQ(load_u64(message, message_offset_at), 7u);
  EXPECT_EQ(load_u64(message, message_checksum_at), message_checksum(message));
}

TEST(Hash, KeyPartitionIsXxh32ModuloCount) {
  EXPECT_EQ(*partition_of_key(text_bytes("hello"), 7), 0xfb0077f9u % 7);
  EXPECT_EQ(*partition_of_key({}, 1), 0u);
  EXPECT_EQ(partition_of_key(text_bytes("hello"), 0).error(), Error::no_partitions);
}

}  // namespace
}  // namespace hark::protocol
