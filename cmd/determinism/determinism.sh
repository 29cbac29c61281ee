#!/usr/bin/env bash
# make determinism: the determinism matrix (cmd/determinism). It records
# replays on this machine of a seeded bot match of the arena example
# (fixed point) and of the float game (cmd/determinism/floatgame, which
# diverges across platforms on purpose), re-simulates them with the
# re-simulator built for linux/amd64 (GOAMD64=v1 and v3), linux/386 (SSE2
# and softfloat), linux/arm64 and js/wasm, and prints a table of what
# verified and what diverged, at which frame and in which field.
#
# It installs what it needs when missing (qemu-user-static for arm64, and
# for 386 on kernels without 32-bit support; nodejs for js/wasm). Exit
# status: 0 when the table was produced and the arena verified on every
# platform that ran (the float game diverging where the compiler fuses
# x*y+z, or where math.Exp is other code, is the expected finding, not a
# failure); 1 when the arena did not verify somewhere or a build failed;
# 2 when the matrix could not be run. A platform that lays the arena out
# differently (386: 64-bit fields 4-byte aligned) cannot match the
# whole-arena checksums; its states are then compared field by field with
# the host's, and the arena passes if every field matches (the table and
# the findings say so: such checksums and replays are not portable).
#
# Environment: DETERMINISM_OUT, the work directory (default
# $TMPDIR/rewind-determinism); arguments are passed to the harness (e.g.
# -frames 5000, -platforms amd64-v3,arm64).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out="${DETERMINISM_OUT:-${TMPDIR:-/tmp}/rewind-determinism}"
mkdir -p "$out"
start=$(date +%s)

missing=()
{ command -v qemu-aarch64-static && command -v qemu-i386-static; } >/dev/null || missing+=(qemu-user-static)
{ command -v node || command -v nodejs; } >/dev/null || missing+=(nodejs)
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	if ! { timeout 600 $sudo apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive timeout 900 $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
		echo "warning: could not install ${missing[*]}: the platforms that need them are skipped" >&2
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
	echo "note: this CPU lacks fma or avx2: amd64 v3 runs under qemu-x86_64-static -cpu max, or is skipped"
fi

timeout 900 go build -o "$out/determinism" ./cmd/determinism
status=0
timeout 3600 "$out/determinism" -out "$out" -root "$root" "$@" || status=$?
echo "determinism.sh: $(($(date +%s) - start)) s, exit status $status"
exit "$status"
