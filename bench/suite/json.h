#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hark::bench {

// A parsed JSON value: enough to read back the SCENARIO.json files Report writes.
struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  // The field, or a null value when absent (so lookups chain).
  const Json& operator[](const std::string& key) const;
  double number_or(double fallback) const { return kind == Kind::number ? number : fallback; }
};

// nullopt on malformed input.
std::optional<Json> parse_json(const std::string& text);
// Reads and parses a file; nullopt if it is missing or malformed.
std::optional<Json> read_json_file(const std::string& path);

}  // namespace hark::bench
