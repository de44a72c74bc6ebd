// Covers the Error table: wire codes are Iggy's numbers, and each has Iggy's name and message
// (what the client library and CLI print).
#include "hark/core/base/error.h"

#include <gtest/gtest.h>

namespace hark {
namespace {

TEST(Error, ValuesAreIggyWireCodes) {
  EXPECT_EQ(error_code(Error::invalid_command), 3u);
  EXPECT_EQ(error_code(Error::invalid_format), 4u);
  EXPECT_EQ(error_code(Error::unauthenticated), 40u);
  EXPECT_EQ(error_code(Error::invalid_size_bytes), 80u);
  EXPECT_EQ(error_code(Error::stream_id_not_found), 1009u);
  EXPECT_EQ(error_code(Error::topic_id_not_found), 2010u);
  EXPECT_EQ(error_code(Error::partition_not_found), 3007u);
  EXPECT_EQ(error_code(Error::invalid_offset), 4100u);
}

TEST(Error, NamesAndMessagesComeFromIggy) {
  EXPECT_EQ(error_name(Error::stream_id_not_found), "StreamIdNotFound");
  EXPECT_EQ(error_name(Error::invalid_command), "InvalidCommand");
  EXPECT_NE(error_message(Error::stream_id_not_found).find("was not found"),
            std::string_view::npos);
}

TEST(Error, UnknownCodesAreNamedUnknown) {
  EXPECT_FALSE(error_known(999'999));
  EXPECT_EQ(error_name(static_cast<Error>(999'999)), "Unknown");
  EXPECT_TRUE(error_known(1009));
}

}  // namespace
}  // namespace hark
