#!/bin/sh
# Installs what `hark-bench peers`, `throughput` and `plot` use, from Debian: redis-server (Redis
# Streams), nats-server (NATS JetStream), iperf3 (the wire's ceiling in the throughput rows)
# and gnuplot-nox (the PNG plots). Idempotent: installs only what is missing. The bench starts
# its own servers on loopback ports with temporary state; it never uses a service the package
# may have started (Debian's redis on 6379, or an iperf3 daemon).
# Run as root, or with sudo available.
set -eu

missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v nats-server >/dev/null 2>&1 || missing="$missing nats-server"
command -v iperf3 >/dev/null 2>&1 || missing="$missing iperf3"
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
if [ -z "$missing" ]; then
  echo "bench peers: redis-server, nats-server, iperf3 and gnuplot are installed"
  exit 0
fi

run_as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

echo "bench peers: installing$missing"
run_as_root apt-get update -q
# --no-install-recommends: no redis-tools or extra fonts; the bench needs only the servers.
run_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
