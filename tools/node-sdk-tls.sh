#!/usr/bin/env bash
# Runs Apache Iggy Node SDK 0.8.0's TLS e2e file (src/e2e/tls.system.e2e.ts) against harkd with
# TLS on. The CA and the server's certificate (DNS:localhost, IP:127.0.0.1: the file connects
# to 'localhost' and verifies the name) are made here with the openssl CLI, in a temporary
# directory removed at exit: no key is kept (Iggy's own test certificates are expired).
# Usage: tools/node-sdk-tls.sh /path/to/harkd [extra harkd args]
# The suite lives in $NODE_SDK_DIR (default /tmp/node-sdk; prepared with npm install
# --ignore-scripts). docs/operations.md §TLS.
set -u

if [ $# -lt 1 ]; then
  echo "usage: $0 /path/to/harkd [extra harkd args]" >&2
  exit 2
fi
HARKD=$(realpath "$1"); shift
SDK_DIR=${NODE_SDK_DIR:-/tmp/node-sdk}
PORT=${PORT:-18192}
[ -x "$HARKD" ] || { echo "harkd not executable: $HARKD" >&2; exit 2; }
[ -f "$SDK_DIR/src/e2e/tls.system.e2e.ts" ] || { echo "no TLS e2e file in $SDK_DIR" >&2; exit 2; }

WORK=$(mktemp -d /tmp/hark-node-tls.XXXXXX)
HARKD_PID=
cleanup() {
  if [ -n "$HARKD_PID" ] && kill -0 "$HARKD_PID" 2>/dev/null; then
    kill "$HARKD_PID" 2>/dev/null
    wait "$HARKD_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A CA, and a server certificate it signs, valid for a day.
ssl() { openssl "$@" 2>>"$WORK/openssl.log" || { cat "$WORK/openssl.log" >&2; exit 3; }; }
ssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj "/CN=hark node-sdk test CA" -keyout "$WORK/ca.key" -out "$WORK/ca.pem"
ssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
  -keyout "$WORK/server.key" -out "$WORK/server.csr"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$WORK/ext"
ssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial \
  -days 1 -extfile "$WORK/ext" -out "$WORK/server.pem"

# harkd prints its ready line on stdout once it listens.
mkfifo "$WORK/ready"
"$HARKD" --address "127.0.0.1:$PORT" --shards 2 --data-dir "$WORK/data" \
  --tls-cert "$WORK/server.pem" --tls-key "$WORK/server.key" "$@" \
  >"$WORK/ready" 2>"$WORK/harkd.log" &
HARKD_PID=$!
if ! timeout 30 grep -q -m1 '^harkd listening on' "$WORK/ready"; then
  echo "harkd did not start; its log:" >&2
  tail -n 30 "$WORK/harkd.log" >&2
  exit 3
fi
cat "$WORK/ready" >/dev/null &  # Keeps draining stdout.

cd "$SDK_DIR" || exit 2
IGGY_TCP_TLS_ENABLED=true IGGY_TCP_ADDRESS="127.0.0.1:$PORT" E2E_ROOT_CA_CERT="$WORK/ca.pem" \
  node --import @swc-node/register/esm-register --test --test-force-exit \
  src/e2e/tls.system.e2e.ts >"$WORK/node.log" 2>&1
RC=$?
grep -E '^(# |ℹ )(tests|pass|fail|skipped|duration_ms) ' "$WORK/node.log"
if [ "$RC" != 0 ]; then
  echo "---- node output ----"; tail -n 60 "$WORK/node.log"
  echo "---- harkd log ----"; tail -n 20 "$WORK/harkd.log"
fi
echo "node exit code: $RC"
exit "$RC"
