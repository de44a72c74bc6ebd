#!/usr/bin/env bash
# Installs the Debian 12 packages hark builds, tests and lints with. Idempotent and quiet when
# everything is present, so `make run` and `make test` can call it every time.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  liburing-dev libmimalloc-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  librapidcheck-dev libxxhash-dev libtomlplusplus-dev libcrypt-dev relacy-dev libssl-dev openssl
  nlohmann-json3-dev prometheus libcurl4-openssl-dev etcd-server etcd-client
  clang-16 libclang-rt-16-dev clang-tidy-16 clang-format-16
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root or install them with apt-get" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
