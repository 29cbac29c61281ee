#!/usr/bin/env bash
# make web-test: the WebRTC transport (rtc), the rendezvous server and the
# game in a browser, tested on this machine's loopback inside a network
# namespace of their own (unshare -n, as root), so that nothing the tests
# send can leave it. The rendezvous's tests run twice: on the store in
# its memory, and on NATS (REWIND_STORE=nats: a NATS server embedded in
# each test's server). The rendezvous's browser tests (browser_test.go) play
# the page in headless Chromium, driven with chromedp, against the native
# arena under Xvfb; their screenshots land in web-test-out/. Installs what
# it needs from Debian's packages when it is missing. Modules are
# downloaded and everything is built first: the namespace has no network.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
GO=${GO:-go}
# Every module stands on its own here (tidy -diff checks it): the
# workspace would select newer versions some other module needs, which
# the namespace cannot download.
export GOWORK=off

source cmd/arena/debian.sh
install_missing iproute2 util-linux chromium xvfb xauth coturn "${arena_build_packages[@]}"

MODS=(rtc cmd/rendezvous cmd/relay)
for m in "${MODS[@]}"; do
	(cd "$m" && $GO mod tidy -diff && $GO mod download)
done
(cd rtc && $GO vet ./... && GOOS=js GOARCH=wasm $GO vet . ./lobby)
(cd cmd/rendezvous && $GO vet ./...)

# The page (arena.wasm, which the rendezvous embeds: built before its
# tests) and the native game the browser plays against.
cmd/arena/web-build.sh
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd cmd/arena && $GO build -o "$bin/arena" .)
# The match relay the relayed lobbies' tests place their matches on.
(cd cmd/relay && $GO build -o "$bin/relay" .)
mkdir -p web-test-out

# Build the tests outside the namespace (the build cache is shared), run them inside.
(cd rtc && $GO test -race -count=1 -run '^$' ./... >/dev/null)
(cd cmd/rendezvous && $GO test -race -count=1 -run '^$' ./... >/dev/null)

export REWIND_ARENA="$bin/arena" REWIND_RELAY="$bin/relay" REWIND_WEB_OUT="$root/web-test-out"
inside='ip link set lo up &&
	(cd rtc && GOPROXY=off '"$GO"' test -race -count=1 -timeout 5m ./...) &&
	(cd cmd/rendezvous && GOPROXY=off '"$GO"' test -race -count=1 -timeout 5m -skip "^TestBrowser" ./...) &&
	(cd cmd/rendezvous && REWIND_STORE=nats GOPROXY=off '"$GO"' test -race -count=1 -timeout 5m -skip "^TestBrowser" .) &&
	(cd cmd/rendezvous && GOPROXY=off '"$GO"' test -count=1 -run "^TestLongPollMemory$" . &&
		REWIND_STORE=nats GOPROXY=off '"$GO"' test -count=1 -run "^TestLongPollMemory$" .) &&
	(cd cmd/rendezvous && GOPROXY=off xvfb-run -a -s "-screen 0 1024x768x24" '"$GO"' test -race -count=1 -timeout 15m -v -run "^TestBrowser" .)'
if [ "${WEB_TEST_NETNS:-1}" = 0 ]; then
	echo "WEB_TEST_NETNS=0: running on the host's loopback, not in a namespace"
	bash -c "${inside#ip link set lo up &&}"
else
	unshare -n bash -c "$inside"
fi
