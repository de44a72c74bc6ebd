# Every dependency comes from a Debian 12 package (tools/install-deps.sh installs them).
# liburing and xxhash ship pkg-config files only.
find_package(PkgConfig REQUIRED)
pkg_check_modules(liburing REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(libxxhash REQUIRED IMPORTED_TARGET libxxhash)
# harkd hashes passwords and tokens with yescrypt (server/users/secret_hash.cc).
pkg_check_modules(libcrypt REQUIRED IMPORTED_TARGET libcrypt)
find_package(absl REQUIRED)
find_package(Threads REQUIRED)
find_package(tomlplusplus REQUIRED)  # harkd's config file (server/config.cc)
# TLS on harkd's listener (server/tls.h) and in the client library (tools/client/tls.h).
find_package(OpenSSL 3 REQUIRED)
# harkd talks to etcd over its HTTP/JSON gateway (server/cluster/etcd_gateway.cc); tests also
# parse harkd's JSON log lines with nlohmann-json (docs/operations.md §Logs).
find_package(CURL REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
if(NOT HARK_FUZZ)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
  find_package(rapidcheck REQUIRED)
endif()
if(HARK_MIMALLOC AND HARK_SANITIZE STREQUAL "" AND NOT HARK_FUZZ)
  find_package(mimalloc REQUIRED)
  set(HARK_USE_MIMALLOC ON)
else()
  set(HARK_USE_MIMALLOC OFF)
endif()
