#!/usr/bin/env bash
# tools/cluster.sh end to end (label cluster, release stage only): `up 4` returns with four
# nodes answering and seeing each other; a stream created through node 1 is listed by node 3;
# `drain 3` keeps a new topic's partitions off node 3 (its data directory holds none of them);
# `kill 2` stops node 2 (it no longer answers), `start 2` brings it back with what was created
# while it was down; `kill` on a partition's leader (`leader S T P`) keeps every acknowledged
# message readable through another node; `down` stops everything by PID. Runs on free ports in its own directory,
# so it never meets a cluster a developer runs. Usage: cluster_script_test.sh BIN_DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:?bin dir}
export HARKD=$bin/harkd HARK=$bin/hark
export CLUSTER_DATA
CLUSTER_DATA=$(mktemp -d /tmp/hark-cluster-script.XXXXXX)
# A port nothing listens on at 127.0.0.1 and .11-.14 (and the one above it, etcd's peer port).
free_port() {
  local port host
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 30000))
    for host in 127.0.0.1 127.0.0.11 127.0.0.12 127.0.0.13 127.0.0.14; do
      (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && continue 2
      (exec 3<>"/dev/tcp/$host/$((port + 1))") 2>/dev/null && continue 2
    done
    echo "$port"
    return 0
  done
  return 1
}
export CLUSTER_PORT CLUSTER_ETCD_PORT
CLUSTER_PORT=$(free_port)
CLUSTER_ETCD_PORT=$(free_port)
script=$root/tools/cluster.sh
failed=0
fail() { echo "FAILED: $*"; failed=1; }
cli() { local id=$1; shift; "$HARK" --address "127.0.0.1$id:$CLUSTER_PORT" "$@"; }
cleanup() { "$script" down >/dev/null 2>&1; rm -rf "$CLUSTER_DATA"; }
trap cleanup EXIT

"$script" up 4 || { fail "up 4"; for f in "$CLUSTER_DATA"/node*.log; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }
for id in 1 2 3 4; do cli "$id" ping >/dev/null || fail "node $id does not answer after up 4"; done
"$script" kill 5 >/dev/null 2>&1 && fail "kill 5 accepted on a cluster of 4"
cli 1 stream create alpha >/dev/null || fail "create via node 1"
cli 3 stream list | grep -q alpha || fail "node 3 does not list what node 1 created"
# A draining node is assigned nothing new: it opens none of a new topic's partitions.
"$script" drain 3 >/dev/null || fail "drain 3"
cli 1 topic create alpha t --partitions 4 >/dev/null || fail "create a topic while node 3 drains"
ls "$CLUSTER_DATA"/node3/streams/*/topics/*/partitions/* >/dev/null 2>&1 &&
  fail "draining node 3 opened a partition"
ls "$CLUSTER_DATA"/node1/streams/*/topics/*/partitions/* >/dev/null 2>&1 ||
  fail "node 1 opened none of the new partitions"
"$script" undrain 3 >/dev/null || fail "undrain 3"

"$script" kill 2 || fail "kill 2"
cli 2 ping >/dev/null 2>&1 && fail "node 2 answers after kill"
cli 1 stream create beta >/dev/null || fail "create via node 1 while node 2 is down"
"$script" start 2 || fail "start 2"
for _ in $(seq 100); do cli 2 stream list 2>/dev/null | grep -q beta && break; sleep 0.1; done
cli 2 stream list | grep -q beta || fail "node 2 did not catch up on beta"

# Replication (docs/cluster.md §The data path): `kill` on a partition's leader during sends
# leaves every acknowledged message readable through the other nodes (factor 3 of 4 nodes).
cli 1 stream create gamma >/dev/null || fail "create gamma"
cli 1 topic create gamma r --partitions 1 >/dev/null || fail "create gamma/r"
stream_id=$(cli 1 stream get gamma | sed -n 's/^.*id[^0-9]*\([0-9][0-9]*\).*$/\1/p' | head -n 1)
leader=$("$script" leader "$stream_id" 0 0) || fail "leader of gamma/r/0"
for i in $(seq 50); do echo "r$i"; done | cli "$leader" produce gamma r --partition 0 --batch 1 \
  >/dev/null || fail "produce to gamma/r via its leader $leader"
"$script" kill "$leader" || fail "kill the leader $leader"
other=1; [[ $leader == 1 ]] && other=2
read_back=""
for _ in $(seq 300); do
  read_back=$(cli "$other" consume gamma r --partition 0 --from first --no-auto-commit 2>/dev/null |
    tr '\n' ' ')
  [[ $read_back == "$(seq -f 'r%g' -s ' ' 50) " ]] && break
  sleep 0.1
done
[[ $read_back == "$(seq -f 'r%g' -s ' ' 50) " ]] ||
  fail "after killing leader $leader, node $other read: $read_back"
"$script" start "$leader" || fail "start $leader"

# On a failure, what each node logged (CI shows the end of the output).
if [[ $failed != 0 ]]; then
  for f in "$CLUSTER_DATA"/node*.log; do echo "== $f"; tail -n 20 "$f"; done
fi
"$script" down || fail "down"
for id in 1 2 3 4; do cli "$id" ping >/dev/null 2>&1 && fail "node $id answers after down"; done
ls "$CLUSTER_DATA"/*.pid >/dev/null 2>&1 && fail "pid files left after down"
exit $failed
