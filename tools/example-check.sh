#!/usr/bin/env bash
# Installs hark from a build directory into a temporary prefix, then builds the example custom
# broker (docs/examples/embedded-broker) against it twice — with find_package(hark) and with
# pkg-config (hark.pc) — and runs both. Run by ctest (label install) in the release stage.
# Usage: tools/example-check.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?build dir}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
echo "installed: $(find "$prefix/include" -name '*.h' | wc -l) headers under include/hark," \
     "$(cd "$prefix/lib" && ls ./*.a | xargs) in lib, $(cd "$prefix" && find lib -name '*.cmake' -o -name '*.pc' | sort | xargs)"

example=docs/examples/embedded-broker
cmake -S "$example" -B "$prefix/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$prefix/build" >/dev/null
echo "find_package(hark): $("$prefix/build/embedded-broker")"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046  # pkg-config prints several flags.
g++ -o "$prefix/embedded-broker-pc" "$example/main.cc" $(pkg-config --cflags --libs hark)
echo "pkg-config hark: $("$prefix/embedded-broker-pc")"
