#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hark::test {

// A plain HTTP exchange with harkd's metrics listener (server/metrics_server.h), byte-level so
// tests can also send what no HTTP client would.

// A blocking loopback socket to 127.0.0.1:port; -1 (and a test failure) if it cannot connect.
int connect_loopback(uint16_t port);
// Everything the peer sends until it closes, or nullopt if it has not closed by `deadline`.
std::optional<std::string> read_until_closed(int fd,
                                             std::chrono::steady_clock::time_point deadline);
// Sends `request` on a new connection and returns the whole answer (harkd closes after it).
std::optional<std::string> http_exchange(uint16_t port, std::string_view request);

// One scrape of GET /metrics, parsed: every sample line as "name{labels}" -> value.
struct Scrape {
  std::string status_line;
  std::string body;
  std::map<std::string, double> samples;

  // The sample's value; NaN (which compares unequal to everything) if it is absent.
  double operator[](const std::string& key) const;
};
std::optional<Scrape> scrape(uint16_t port);

// Runs Prometheus' `promtool check <what>` ("metrics", "rules") on `text` (a file); its exit
// code (-1 if it could not run), and its output in `output`.
int promtool_check(const std::string& what, const std::string& text, std::string& output);

}  // namespace hark::test
