// Covers the /metrics output against Prometheus' own checker: a real scrape of a harkd that
// has streams, a consumer group, stored offsets, appends and a woken poll (so
// every family, histograms included, has samples) passes `promtool check metrics`
// (Debian's `prometheus` package, installed by tools/install-deps.sh), which parses the text
// format strictly and applies Prometheus' naming lint; and every query of docs/grafana-hark.json
// parses as PromQL (`promtool check rules` over them, Grafana's variables replaced); a single
// node exports no cluster series. Label
// promtool: it starts promtool beside harkd, so it runs in the release stage only.
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/e2e/metrics_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

class MetricsPromtool : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--metrics-address", "127.0.0.1:0"};
    return options;
  }
};

TEST_F(MetricsPromtool, ARealScrapePassesPromtoolCheckMetrics) {
  create_stream_and_topic(2);
  ASSERT_TRUE(admin_
                  ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .name = "workers \"quoted\"\\"})
                  .ok());
  AsyncPoll parked(address(), poll_request(1, 1, next_strategy(), 10, 30s));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(send_text(1, "wake").ok());
  ASSERT_TRUE(parked.wait(at_once_bound).answered);
  ASSERT_TRUE(send_text(0, "more").ok());
  ASSERT_TRUE(admin_
                  ->store_consumer_offset({.consumer = {.kind = protocol::ConsumerKind::group,
                                                        .id = Identifier::numeric(0)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = 1,
                                           .offset = 0})
                  .ok());

  const std::optional<Scrape> scraped = scrape(harkd_.metrics_port());
  ASSERT_TRUE(scraped.has_value());
  ASSERT_EQ(scraped->status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ((*scraped)["hark_wake_latency_seconds_count"], 1) << scraped->body;
  EXPECT_EQ((*scraped)["hark_consumer_lag_messages{stream=\"s\",topic=\"t\",group=\"workers "
                       "\\\"quoted\\\"\\\\\"}"],
            1)
      << scraped->body;
  // One node: no cluster series (docs/operations.md §Metrics).
  EXPECT_EQ(scraped->body.find("hark_cluster_"), std::string::npos);
  std::string output;
  EXPECT_EQ(promtool_check("metrics", scraped->body, output), 0) << output << "\nscrape:\n"
                                                                 << scraped->body;
  EXPECT_EQ(output, "") << "promtool's lint found something";
}

TEST(MetricsDashboard, EveryGrafanaQueryParsesAsPromQL) {
  std::ifstream file(std::string(HARK_SOURCE_DIR) + "/docs/grafana-hark.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json dashboard = nlohmann::json::parse(file);
  std::string rules = "groups:\n- name: grafana-hark\n  rules:\n";
  int count = 0;
  for (const auto& panel : dashboard.at("panels")) {
    for (const auto& target : panel.at("targets")) {
      std::string expr = target.at("expr").get<std::string>();
      expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "5m");
      expr = std::regex_replace(expr, std::regex(R"(\$instance)"), ".*");
      rules +=
          "  - record: hark:dashboard_" + std::to_string(count++) + "\n    expr: '" + expr + "'\n";
    }
  }
  EXPECT_GE(count, 20);
  std::string output;
  EXPECT_EQ(promtool_check("rules", rules, output), 0) << output << "\nrules:\n" << rules;
}

}  // namespace
}  // namespace hark::test
