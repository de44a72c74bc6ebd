#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace hark::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it by the destructor.
// Each object has its own, so tests that run in parallel never share a file name.
class TempDirectory {
 public:
  explicit TempDirectory(const std::string& prefix = "hark-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;

  // Empty if mkdtemp failed.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hark::test
