#!/usr/bin/env bash
# make module-check: a game outside the repository gets Rewind's library
# and its WebRTC transport as any module, from a module proxy, with no
# replace of its own. The checkout's root module and rtc are written to a
# file:// proxy directory at one pseudo-version (cmd/modcheck, which
# refuses a go.mod with a replace), and a program in a temporary directory
# that imports rtc, rtc/lobby, rollback and rollback/udp is `go get` and
# built against it, with the module cache's downloads as the proxy of
# everything else (pion, msgpack...): nothing is fetched from the network
# once both modules' dependencies are downloaded.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
GO=${GO:-go}
export GOWORK=off

(cd . && $GO mod download) && (cd rtc && $GO mod download)
cache="$($GO env GOMODCACHE)/cache/download"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo 000000000000)
stamp=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S 2>/dev/null || date -u +%Y%m%d%H%M%S)
version="v0.0.0-$stamp-$commit"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd cmd/modcheck && $GO run . -out "$work/proxy" -version "$version" "$root" "$root/rtc")

mkdir "$work/game"
cat >"$work/game/main.go" <<'GO'
// A game's program: the rollback session over UDP or over WebRTC, and the
// rendezvous's lobby client.
package main

import (
	"fmt"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/udp"
	"github.com/rewindgg/rewind/rtc"
	"github.com/rewindgg/rewind/rtc/lobby"
)

func main() {
	var _ rollback.Transport = (*udp.Transport)(nil)
	var _ rollback.Transport = (*rtc.Transport)(nil)
	var _ rtc.Signaler = (*lobby.Client)(nil)
	fmt.Println("ok", rtc.MaxMachines, lobby.MaxSeats)
}
GO
cd "$work/game"
export GOFLAGS=-mod=mod GOPROXY="file://$work/proxy,file://$cache" GONOSUMDB=github.com/rewindgg GOSUMDB=off GOTOOLCHAIN=local
$GO mod init example.com/game >/dev/null 2>&1
# rtc alone first, as a game that only wants the transport: its own
# requirements must resolve (a requirement of the root module at a version
# no proxy serves, once hidden by a replace, fails here).
$GO get "github.com/rewindgg/rewind/rtc@$version"
$GO get "github.com/rewindgg/rewind@$version"
$GO build -o "$work/game-bin" .
out="$("$work/game-bin")"
[ "${out%% *}" = ok ] || { echo "module-check: the game printed $out"; exit 1; }
if grep -q '^replace' go.mod; then echo "module-check: the game's go.mod has a replace"; exit 1; fi
echo "module-check: a game outside the repository built rtc, rtc/lobby, rollback and rollback/udp at $version from the proxy ($out)"
