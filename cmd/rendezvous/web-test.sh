#!/usr/bin/env bash
# make web-test: the WebRTC transport (rtc), the rendezvous server and the
# browser build, tested on this machine's loopback inside a network
# namespace of their own (unshare -n, as root), so that nothing the tests
# send can leave it. Installs what it needs from Debian's packages when it
# is missing (iproute2 for `ip`, util-linux for unshare). Modules are
# downloaded first: the namespace has no other network.
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}

need=()
command -v ip >/dev/null || need+=(iproute2)
command -v unshare >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
	echo "installing ${need[*]}"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

MODS=(rtc cmd/rendezvous)
for m in "${MODS[@]}"; do
	(cd "$m" && GOWORK=off $GO mod tidy -diff && GOWORK=off $GO mod download)
done
(cd rtc && $GO vet ./... && GOOS=js GOARCH=wasm $GO vet . ./lobby)
(cd cmd/rendezvous && $GO vet ./...)
# Build the tests outside the namespace (the build cache is shared), run them inside.
(cd rtc && $GO test -race -count=1 -run '^$' ./... >/dev/null)
(cd cmd/rendezvous && $GO test -race -count=1 -run '^$' ./... >/dev/null)

inside='ip link set lo up &&
	(cd rtc && GOPROXY=off '"$GO"' test -race -count=1 -timeout 5m ./...) &&
	(cd cmd/rendezvous && GOPROXY=off '"$GO"' test -race -count=1 -timeout 5m ./...)'
if [ "${WEB_TEST_NETNS:-1}" = 0 ]; then
	echo "WEB_TEST_NETNS=0: running on the host's loopback, not in a namespace"
	sh -c "${inside#ip link set lo up &&}"
else
	unshare -n sh -c "$inside"
fi
