#!/usr/bin/env bash
# A local hark cluster (docs/cluster.md §A local cluster): etcd from Debian with auth, and harkd
# nodes 1..N (3 by default) on 127.0.0.11:8090, 127.0.0.12:8090, ... 127.0.0.1N:8090, data and
# logs under ./cluster-data/.
#   tools/cluster.sh up [N]    start etcd and nodes 1..N (1 to 9, default 3); returns when all
#                              answer (a fourth node gives a replica somewhere to be replaced to)
#   tools/cluster.sh down      stop them (SIGTERM by PID, then SIGKILL after 10 s)
#   tools/cluster.sh kill N    SIGKILL node N
#   tools/cluster.sh start N   start node N again (on its data directory)
#   tools/cluster.sh leader S T P   print the node leading partition P of topic T of stream S
#                              (numeric ids, as etcd's assignment holds them; docs/cluster.md
#                              §Replication: the controller side)
#   tools/cluster.sh drain N   ask the controller to move node N's partitions off it
#                              (etcd key drain/N; docs/cluster.md §Moves); undrain N ends it
# Environment (for tests running beside another cluster): CLUSTER_DATA (./cluster-data),
# CLUSTER_PORT (8090), CLUSTER_ETCD_PORT (2379; the peer port is one above), HARKD and HARK (the
# binaries, default build/bin/harkd and build/bin/hark).
set -euo pipefail
cd "$(dirname "$0")/.."

data=${CLUSTER_DATA:-$PWD/cluster-data}
port=${CLUSTER_PORT:-8090}
etcd_port=${CLUSTER_ETCD_PORT:-2379}
harkd=${HARKD:-$PWD/build/bin/harkd}
hark=${HARK:-$PWD/build/bin/hark}
etcd_url="http://127.0.0.1:$etcd_port"
etcd_password=harkd-local-secret
# How many nodes the last `up` started (kill, start, drain and down read it).
node_count() { cat "$data/nodes" 2>/dev/null || echo 3; }

die() { echo "cluster.sh: $*" >&2; exit 1; }
address_of() { echo "127.0.0.1$1:$port"; }
pid_of() { [[ -f $data/$1.pid ]] && cat "$data/$1.pid"; }
running() { local pid; pid=$(pid_of "$1") && kill -0 "$pid" 2>/dev/null; }

ensure_etcd_installed() {
  command -v etcd >/dev/null && command -v etcdctl >/dev/null && return
  echo "cluster.sh: installing etcd from Debian (etcd-server, etcd-client)"
  apt-get install -y etcd-server etcd-client >/dev/null || die "cannot install etcd"
}

# Waits up to 20 s for `$@` to succeed.
wait_for() {
  for _ in $(seq 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

start_etcd() {
  running etcd && return
  mkdir -p "$data/etcd"
  local peer="http://127.0.0.1:$((etcd_port + 1))"
  etcd --name local --data-dir "$data/etcd/data" --listen-client-urls "$etcd_url" \
    --advertise-client-urls "$etcd_url" --listen-peer-urls "$peer" \
    --initial-advertise-peer-urls "$peer" --initial-cluster "local=$peer" \
    --auto-compaction-mode periodic --auto-compaction-retention 1h \
    --logger zap --log-outputs "$data/etcd/etcd.log" >/dev/null 2>&1 &
  echo $! >"$data/etcd.pid"
  local ctl=(env ETCDCTL_API=3 etcdctl --endpoints="$etcd_url")
  local probe=("${ctl[@]}")
  [[ -f $data/etcd/auth-enabled ]] && probe+=(--user root:root-secret)
  wait_for "${probe[@]}" endpoint health ||
    die "etcd did not answer on $etcd_url (log: $data/etcd/etcd.log)"
  [[ -f $data/etcd/auth-enabled ]] && return
  # A fresh etcd: root, and a user for harkd limited to /hark/ (docs/cluster.md §etcd auth).
  "${ctl[@]}" user add root:root-secret >/dev/null
  "${ctl[@]}" role add harkd >/dev/null
  "${ctl[@]}" role grant-permission harkd --prefix=true readwrite /hark/ >/dev/null
  "${ctl[@]}" user add "harkd:$etcd_password" >/dev/null
  "${ctl[@]}" user grant-role harkd harkd >/dev/null
  "${ctl[@]}" auth enable >/dev/null
  touch "$data/etcd/auth-enabled"
}

# write_once FILE COMMAND...: FILE holds COMMAND's output unless it exists already.
write_once() {
  local file=$1
  shift
  [[ -f $file ]] && return
  "$@" >"$file.tmp" && mv "$file.tmp" "$file"
}

random_secret() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

start_node() {
  local id=$1
  running "$id" && return
  [[ -x $harkd ]] || die "no harkd at $harkd (make build)"
  mkdir -p "$data/node$id"
  umask 077
  # Written once, whole (a rename): nodes started just before read these files while this one
  # starts, and a rewrite in place once showed them an empty file.
  write_once "$data/etcd-password" echo "$etcd_password"
  local extra=()
  # Node links need a shared secret once harkd has them (--cluster-secret-file).
  if "$harkd" --help 2>&1 | grep -q -- --cluster-secret-file; then
    write_once "$data/cluster-secret" random_secret
    extra+=(--cluster-secret-file "$data/cluster-secret")
  fi
  "$harkd" --address "$(address_of "$id")" --data-dir "$data/node$id" --node-id "$id" \
    --cluster-name local --etcd "$etcd_url" --etcd-user harkd \
    --etcd-password-file "$data/etcd-password" "${extra[@]}" \
    >>"$data/node$id.log" 2>&1 &
  echo $! >"$data/$id.pid"
}

wait_answers() {
  local id
  for id in "$@"; do
    wait_for "$hark" --address "$(address_of "$id")" ping ||
      die "node $id does not answer on $(address_of "$id") (log: $data/node$id.log)"
  done
}

stop_pid() {
  local name=$1 pid
  pid=$(pid_of "$name") || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$data/$name.pid"
}

node_id() {
  [[ ${1:-} =~ ^[1-9]$ && $1 -le $(node_count) ]] || die "a node id is 1 to $(node_count)"
  echo "$1"
}

case ${1:-} in
  up)
    count=${2:-3}
    [[ $count =~ ^[1-9]$ ]] || die "a node count is 1 to 9"
    ensure_etcd_installed
    mkdir -p "$data"
    echo "$count" >"$data/nodes"
    start_etcd
    nodes=$(seq "$count")
    for id in $nodes; do start_node "$id"; done
    # shellcheck disable=SC2086 # One id per word.
    wait_answers $nodes
    echo "cluster up: $(for id in $nodes; do printf '%s ' "$(address_of "$id")"; done)(etcd" \
      "$etcd_url, data $data)"
    ;;
  down)
    for id in $(seq 9); do stop_pid "$id"; done
    stop_pid etcd
    echo "cluster down"
    ;;
  kill)
    id=$(node_id "${2:-}")
    pid=$(pid_of "$id") || die "node $id is not running"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$data/$id.pid"
    ;;
  start)
    id=$(node_id "${2:-}")
    running etcd || die "etcd is not running (tools/cluster.sh up)"
    start_node "$id"
    wait_answers "$id"
    ;;
  leader)
    [[ ${2:-} =~ ^[0-9]+$ && ${3:-} =~ ^[0-9]+$ && ${4:-} =~ ^[0-9]+$ ]] ||
      die "usage: leader STREAM TOPIC PARTITION (numeric ids)"
    running etcd || die "etcd is not running (tools/cluster.sh up)"
    value=$(ETCDCTL_API=3 etcdctl --endpoints="$etcd_url" --user "harkd:$etcd_password" get \
      --print-value-only "/hark/local/assignments/$2/$3/$4") || die "cannot read etcd"
    [[ $value =~ \"node\":([0-9]+) ]] || die "partition $2/$3/$4 has no assignment"
    echo "${BASH_REMATCH[1]}"
    ;;
  drain | undrain)
    id=$(node_id "${2:-}")
    running etcd || die "etcd is not running (tools/cluster.sh up)"
    ctl=(env ETCDCTL_API=3 etcdctl --endpoints="$etcd_url" --user "harkd:$etcd_password")
    if [[ $1 == drain ]]; then
      "${ctl[@]}" put "/hark/local/drain/$id" "" >/dev/null || die "cannot write drain/$id"
      echo "node $id draining: no new partitions; a move planned for each of its factor-1" \
        "partitions, a replicated one's leadership and replica handed over (docs/cluster.md)"
    else
      "${ctl[@]}" del "/hark/local/drain/$id" >/dev/null || die "cannot delete drain/$id"
      echo "node $id no longer draining"
    fi
    ;;
  *)
    echo "usage: $0 up [NODES]|down|kill N|start N|leader S T P|drain N|undrain N" >&2
    exit 2
    ;;
esac
