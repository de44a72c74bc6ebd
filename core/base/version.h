#pragma once

// hark's version: the one place it is written. The root CMakeLists.txt reads these lines for
// the package version (find_package(hark 0.1), hark.pc), so a program built against an
// installed hark sees the same numbers. Before 1.0 a minor version may change the API.
#define HARK_VERSION_MAJOR 0
#define HARK_VERSION_MINOR 1
#define HARK_VERSION_PATCH 0
#define HARK_VERSION_STRING "0.1.0"

// True if the hark being compiled against is at least major.minor.patch.
#define HARK_VERSION_AT_LEAST(major, minor, patch)                              \
  ((HARK_VERSION_MAJOR << 16 | HARK_VERSION_MINOR << 8 | HARK_VERSION_PATCH) >= \
   ((major) << 16 | (minor) << 8 | (patch)))
