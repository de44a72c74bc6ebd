#!/usr/bin/env bash
# Runs Apache Iggy Node SDK 0.8.0's TCP e2e suite (src/e2e/tcp.*.e2e.ts) against node 2 of a
# three-node cluster (tools/cluster.sh: etcd and harkd on 127.0.0.11-13), as issue 18 asks
# (docs/cluster.md §Tests). The one file left out is tcp.cluster.e2e.ts, which compares code
# 12 with Iggy's sample two-node cluster: it runs against a single harkd instead, never against
# faked membership. The cluster lives in a temporary data directory, on ports that leave a
# running `make cluster` alone, and is stopped at exit.
# Usage: tools/node-sdk-cluster.sh [build/bin]   (where harkd and hark are)
# The suite lives in $NODE_SDK_DIR (default /tmp/node-sdk; prepared with npm install
# --ignore-scripts).
set -u
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-build/bin}")
SDK_DIR=${NODE_SDK_DIR:-/tmp/node-sdk}
[ -x "$BIN/harkd" ] || { echo "no harkd in $BIN" >&2; exit 2; }
[ -d "$SDK_DIR/src/e2e" ] || { echo "the suite is not prepared in $SDK_DIR" >&2; exit 2; }

WORK=$(mktemp -d /tmp/hark-node-cluster.XXXXXX)
export CLUSTER_DATA="$WORK/cluster" CLUSTER_PORT=${CLUSTER_PORT:-18290}
export CLUSTER_ETCD_PORT=${CLUSTER_ETCD_PORT:-23790} HARKD="$BIN/harkd" HARK="$BIN/hark"
SINGLE_PID=
cleanup() {
  tools/cluster.sh down >/dev/null 2>&1
  if [ -n "$SINGLE_PID" ] && kill -0 "$SINGLE_PID" 2>/dev/null; then
    kill "$SINGLE_PID"
    wait "$SINGLE_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run_suite() {  # run_suite ADDRESS LOG FILES...
  local address=$1 log=$2
  shift 2
  (cd "$SDK_DIR" && IGGY_TCP_ADDRESS="$address" node --import @swc-node/register/esm-register \
    --test --test-force-exit "$@" >"$log" 2>&1)
}

summary() {  # summary NAME LOG RC
  echo "---- $1 ----"
  grep -E '^(# |ℹ )(tests|pass|fail|cancelled|skipped|duration_ms) ' "$2"
  grep -E '^[[:space:]]*not ok ' "$2"
  echo "node exit code: $3"
}

tools/cluster.sh up || exit 3
files=()
for file in "$SDK_DIR"/src/e2e/tcp.*.e2e.ts; do
  [[ $(basename "$file") == tcp.cluster.e2e.ts ]] || files+=("src/e2e/$(basename "$file")")
done
run_suite "127.0.0.12:$CLUSTER_PORT" "$WORK/cluster.log" "${files[@]}"
cluster_rc=$?
summary "node 2 of three (${#files[@]} files)" "$WORK/cluster.log" "$cluster_rc"
[ "$cluster_rc" = 0 ] || tail -n 40 "$CLUSTER_DATA/node2.log"

# tcp.cluster.e2e.ts against one harkd, as for a single node (docs/operations.md §Cluster
# metadata: IGGY_CLUSTER_ENABLED makes code 12 answer as Iggy's sample does).
mkfifo "$WORK/ready"
IGGY_CLUSTER_ENABLED=true "$BIN/harkd" --address "127.0.0.1:$((CLUSTER_PORT + 1))" \
  --advertised-address 127.0.0.1:8090 --shards 2 --data-dir "$WORK/single" \
  >"$WORK/ready" 2>"$WORK/single.log" &
SINGLE_PID=$!
if ! timeout 30 grep -q -m1 '^harkd listening on' "$WORK/ready"; then
  echo "harkd did not start; its log:" >&2
  tail -n 30 "$WORK/single.log" >&2
  exit 3
fi
cat "$WORK/ready" >/dev/null &
run_suite "127.0.0.1:$((CLUSTER_PORT + 1))" "$WORK/single-node.log" src/e2e/tcp.cluster.e2e.ts
single_rc=$?
summary "tcp.cluster.e2e.ts on one node" "$WORK/single-node.log" "$single_rc"
[ "$cluster_rc" = 0 ] && [ "$single_rc" = 0 ]
