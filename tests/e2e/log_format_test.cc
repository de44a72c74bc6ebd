// harkd's JSON log lines (docs/operations.md §Logs): started with --log-format json, everything
// it writes to stderr through a start, a failed login and a stop is one JSON object per line
// with the documented fields, parsed here by nlohmann-json.
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "hark/protocol/request.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/timestamp.h"

namespace hark::test {
namespace {

class HarkdJsonLog : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--log-format", "json"};
    return options;
  }
};

TEST_F(HarkdJsonLog, EveryStderrLineIsAJsonObjectFromStartToStop) {
  RawConnection guesser;
  ASSERT_TRUE(guesser.connect(address()));
  const std::optional<RawResponse> refused =
      guesser.exchange(request_frame(protocol::LoginUserRequest{
          .username = "iggy", .password = "wrong \"quoted\"\\", .version = {}, .context = {}}));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 42u);  // InvalidCredentials.
  admin_.reset();
  const ProcessExit exit = harkd_.stop();
  ASSERT_TRUE(exit.clean()) << describe(exit);

  const std::set<std::string> levels = {"debug", "info", "warn", "error"};
  std::ifstream stderr_file(harkd_.stderr_path());
  std::string all;
  size_t lines = 0;
  for (std::string line; std::getline(stderr_file, line); lines++) {
    const nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(object.is_discarded()) << "not JSON: " << line;
    ASSERT_TRUE(object.is_object()) << line;
    ASSERT_TRUE(object["ts"].is_string() && object["level"].is_string() &&
                object["thread"].is_string() && object["site"].is_string() &&
                object["msg"].is_string())
        << line;
    EXPECT_TRUE(is_log_timestamp(object["ts"].get<std::string>())) << line;
    EXPECT_EQ(levels.count(object["level"].get<std::string>()), 1u) << line;
    all += object["thread"].get<std::string>() + " " + object["msg"].get<std::string>() + "\n";
  }
  EXPECT_GE(lines, 3u);
  EXPECT_NE(all.find("listening on 127.0.0.1:"), std::string::npos) << all;
  EXPECT_NE(all.find("hark-shard-"), std::string::npos) << all;
  EXPECT_NE(all.find("login failed: InvalidCredentials"), std::string::npos) << all;
  EXPECT_NE(all.find("stopped"), std::string::npos) << all;
}

}  // namespace
}  // namespace hark::test
