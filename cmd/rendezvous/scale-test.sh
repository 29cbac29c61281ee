#!/usr/bin/env bash
# make scale-test: the rendezvous scaled out as an operator runs it
# (package scaletest), inside a network namespace of its own (unshare -n,
# as root) so that nothing it sends leaves this machine: a three-node NATS
# cluster (nats-server built from its Go module, the version the
# rendezvous embeds), three rendezvous instances on 127.0.0.11-13 behind
# a load balancer, and Debian's coturn on 127.0.0.5. The load's figures
# land in scale-test-out/load.json (docs/deployment.md quotes them).
# Then, in a namespace of its own, TestDeploymentDoc runs the blocks of
# docs/deployment.md marked for it as written (Debian's caddy balances).
# Installs its Debian packages when missing; modules are downloaded and
# the binaries built first: the namespace has no network.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
GO=${GO:-go}
export GOWORK=off

source cmd/arena/debian.sh
install_missing iproute2 util-linux coturn caddy

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd cmd/rendezvous && $GO mod download &&
	$GO build -o "$bin/rendezvous" . &&
	$GO build -o "$bin/nats-server" github.com/nats-io/nats-server/v2 &&
	$GO test -count=1 -run '^$' ./scaletest/ >/dev/null)
mkdir -p scale-test-out

export REWIND_SCALE_BIN="$bin" REWIND_SCALE_OUT="$root/scale-test-out/load.json"
unshare -n bash -c 'ip link set lo up &&
	cd cmd/rendezvous && GOPROXY=off '"$GO"' test -count=1 -timeout 25m -v -run "^TestScale$" ./scaletest/'
# docs/deployment.md followed as written, in a namespace of its own.
unshare -n bash -c 'ip link set lo up &&
	cd cmd/rendezvous && GOPROXY=off '"$GO"' test -count=1 -timeout 10m -v -run "^TestDeploymentDoc$" ./scaletest/'
