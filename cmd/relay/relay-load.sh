#!/usr/bin/env bash
# make relay-load: how many 4-player matches one relay process holds at
# 60 Hz (cmd/relay/relayload), on loopback inside a network namespace of
# its own (unshare -n, as root) so that nothing it sends leaves this
# machine. For each load of RELAY_LOAD_LEVELS (matches) it starts the
# relay, opens the matches by its admin call and plays their machines for
# RELAY_LOAD_SECONDS after a warm-up; the figures (the relay's CPU and
# resident memory, per match; loss; latency) land in
# relay-load-out/load.json (docs/deployment.md, "Match relay", quotes
# them). RELAY_LOAD_ARGS passes more flags to relayload (-relay-cpus 0
# pins the relay to one core; -relay-args '-cpuprofile f' profiles it),
# RELAY_LOAD_CPUS pins the generator.
# Installs its Debian packages when missing; the binaries are built first:
# the namespace has no network.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
GO=${GO:-go}

source cmd/arena/debian.sh
install_missing iproute2 util-linux

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd cmd/relay && $GO build -o "$bin/relay" . && $GO build -o "$bin/relayload" ./relayload)
mkdir -p relay-load-out
levels=${RELAY_LOAD_LEVELS:-100,250,500,1000,1500}
seconds=${RELAY_LOAD_SECONDS:-10}
# RELAY_LOAD_CPUS pins the generator (taskset -c), e.g. to the core -relay-cpus leaves.
pin=()
[ -z "${RELAY_LOAD_CPUS:-}" ] || pin=(taskset -c "$RELAY_LOAD_CPUS")
unshare -n "${pin[@]}" bash -c 'ip link set lo up && "$0" -relay "$1" -levels "$2" -duration "$3"s -stop=false -out relay-load-out/load.json '"${RELAY_LOAD_ARGS:-}" \
	"$bin/relayload" "$bin/relay" "$levels" "$seconds"
