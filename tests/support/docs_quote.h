#pragma once

// Checks that a document quotes a test's example code verbatim: the test marks the regions
// with "// docs:begin NAME" and "// docs:end", and the document must contain each region,
// de-indented. docs/embedding.md and docs/notifications.md are checked this way.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hark::test {

// The regions between "// docs:begin NAME" and "// docs:end" in `source`, de-indented.
inline std::vector<std::string> docs_regions(const std::string& source) {
  std::vector<std::string> regions;
  std::istringstream lines(source);
  std::string line;
  std::string region;
  bool inside = false;
  size_t indent = 0;
  while (std::getline(lines, line)) {
    const size_t text_at = line.find_first_not_of(' ');
    const std::string text = text_at == std::string::npos ? "" : line.substr(text_at);
    if (text.rfind("// docs:begin", 0) == 0) {
      inside = true;
      indent = text_at;
      region.clear();
    } else if (text.rfind("// docs:end", 0) == 0) {
      inside = false;
      regions.push_back(region);
    } else if (inside) {
      region += (line.size() > indent ? line.substr(indent) : std::string()) + '\n';
    }
  }
  return regions;
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Expects `regions_count` marked regions in the file at `source_path`, each quoted in the
// document at `docs_path`.
inline void expect_docs_quote(const std::string& source_path, const std::string& docs_path,
                              size_t regions_count) {
  const std::string source = read_text_file(source_path);
  const std::string docs = read_text_file(docs_path);
  ASSERT_FALSE(source.empty()) << source_path;
  ASSERT_FALSE(docs.empty()) << docs_path;
  const std::vector<std::string> regions = docs_regions(source);
  EXPECT_EQ(regions.size(), regions_count);
  for (const std::string& region : regions) {
    EXPECT_NE(docs.find(region), std::string::npos)
        << docs_path << " no longer quotes this part of the example:\n"
        << region;
  }
}

}  // namespace hark::test
