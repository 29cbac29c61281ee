#!/usr/bin/env bash
# make determinism: the determinism matrix (cmd/determinism) for the
# project's games, then for a game outside the repository
# (external.sh). The project's games are the arena example (fixed point,
# must verify everywhere) and the float game (cmd/determinism/floatgame,
# which diverges across platforms on purpose: -may-diverge floatgame/);
# both implement determinism.Game and go through the same command a game
# outside the repository runs:
#
#   go run github.com/rewindgg/rewind/cmd/determinism -game ./path/to/yourgame
#
# It records, per seed, a sync-test match and a two-machine match that
# rolls back, re-simulates them on linux/amd64 (GOAMD64=v1 and v3),
# linux/amd64 v1 under qemu-x86_64-static -cpu Nehalem (no FMA, checked),
# linux/386 (SSE2 and softfloat), linux/arm64 (qemu-user-static) and
# js/wasm (Node.js), and prints a table of verified or the first divergent
# frame and field.
#
# It installs what it needs when missing (qemu-user-static, nodejs), with
# apt-get. Exit status: 0 when both matrices passed: every platform ran
# (a skipped platform fails), the arena verified on each, and the external
# game diverged exactly where x*y+z fuses; 1 otherwise; 2 when the matrix
# could not be run.
#
# Environment: DETERMINISM_OUT, the work directory (default
# $TMPDIR/rewind-determinism); arguments are passed to the project's run
# (e.g. -frames 3000, -seeds 1,2,3,4).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out="${DETERMINISM_OUT:-${TMPDIR:-/tmp}/rewind-determinism}"
export DETERMINISM_OUT="$out"
mkdir -p "$out"
start=$(date +%s)

# The command's own test, run whole on this platform (make test leaves it
# here: it builds the program).
go test -count=1 -run '^TestHostMatrix$' ./cmd/determinism/

missing=()
{ command -v qemu-aarch64-static && command -v qemu-i386-static && command -v qemu-x86_64-static; } >/dev/null || missing+=(qemu-user-static)
{ command -v node || command -v nodejs; } >/dev/null || missing+=(nodejs)
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	if ! { timeout 900 $sudo apt-get update -qq -o DPkg::Lock::Timeout=300 &&
		DEBIAN_FRONTEND=noninteractive timeout 900 $sudo apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}" >/dev/null; }; then
		echo "warning: could not install ${missing[*]}: the platforms that need them are skipped, which fails the run" >&2
	fi
fi
echo "tools: $(go version)"
if command -v qemu-aarch64-static >/dev/null; then
	echo "tools: $(timeout 30 qemu-aarch64-static --version | head -n1)"
fi
if command -v node >/dev/null; then
	echo "tools: node $(timeout 30 node --version)"
fi
if ! grep -qw fma /proc/cpuinfo || ! grep -qw avx2 /proc/cpuinfo; then
	echo "note: this CPU lacks fma or avx2: amd64 v3 runs under qemu-x86_64-static -cpu max"
fi

status=0
echo
echo "== the project's games: examples/arena (must verify) and cmd/determinism/floatgame (may diverge)"
timeout 3600 go run ./cmd/determinism -game ./examples/arena -game ./cmd/determinism/floatgame \
	-may-diverge floatgame/ -out "$out/project" "$@" || status=$?
mid=$(date +%s)
echo "project matrix: $((mid - start)) s, exit status $status"
echo
echo "== a game outside the repository: fusegame (x*y+z on float64), cmd/determinism/external.sh"
ext=0
timeout 3600 cmd/determinism/external.sh -v=false || ext=$?
echo "external matrix: $(($(date +%s) - mid)) s, exit status $ext"
if [ "$status" -eq 0 ] && [ "$ext" -ne 0 ]; then
	status=1
fi
echo "determinism.sh: $(($(date +%s) - start)) s, exit status $status"
exit "$status"
