#!/usr/bin/env bash
# make play-test: the arena demo tested as a person uses it. It installs
# what it needs when missing (a C compiler and the GL, X11 and ALSA
# headers for Ebitengine; Xvfb, xdotool and xwd for a real X server, key
# presses and a screenshot; PulseAudio for a null sink that plays in real
# time), runs the demo module's vet and unit tests, then under Xvfb
# TestErrors (each error situation: the lines a person sees and the exit
# status; none panics), TestPlay, with the sound going to PulseAudio's
# null sink, TestLeave (Escape at the round-end screen: both machines
# back on their title screens, the peer told its opponent left), and
# TestDrawCost (one game alone, 4 ships, pinned to one core: its FPS, Draw
# and render p50/p95 and CPU per drawn frame, in solo.json). Screenshots
# and results land in play-test-out/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root/cmd/arena"

source "$root/cmd/arena/debian.sh"
# mesa-utils: Ebitengine runs glxinfo to choose GLX over EGL. Without it,
# it draws through EGL, whose software path (Mesa 22) sends each frame
# to the X server through the socket; GLX's uses shared memory: a
# presented frame costs about 8 ms of CPU instead of about 12.
install_missing "${arena_build_packages[@]}" xvfb xauth xdotool x11-apps pulseaudio libasound2-plugins mesa-utils

# The module stands on its own (no go.work) and is tidy.
GOWORK=off go mod tidy -diff
go vet ./...
go test -race -count=1 ./internal/...

# A null sink that consumes sound in real time (ALSA's own null device
# takes it as fast as it is produced), reached through ALSA like any
# sound card: Ebitengine opens ALSA's default device.
run="$(mktemp -d)"
trap 'kill "$(cat "$run/pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$run"' EXIT
cat >"$run/default.pa" <<PA
load-module module-native-protocol-unix auth-anonymous=1 socket=$run/native
load-module module-null-sink sink_name=null
set-default-sink null
PA
cat >"$run/asound.conf" <<ALSA
pcm.!default { type pulse server "unix:$run/native" }
ctl.!default { type pulse server "unix:$run/native" }
ALSA
HOME="$run" XDG_RUNTIME_DIR="$run" pulseaudio -n -F "$run/default.pa" --exit-idle-time=-1 --daemonize=yes \
	--use-pid-file=no --log-target=file:"$run/pulse.log" 2>/dev/null
for _ in $(seq 50); do
	[ -S "$run/native" ] && break
	sleep 0.1
done
[ -S "$run/native" ] || { echo "pulseaudio did not start"; cat "$run/pulse.log"; exit 1; }
pgrep -f "pulseaudio -n -F $run/default.pa" >"$run/pid" || true

mkdir -p "$root/play-test-out"
ALSA_CONFIG_PATH="$run/asound.conf" ARENA_PLAY_TEST=1 ARENA_PLAY_OUT="$root/play-test-out" \
	xvfb-run -a -s "-screen 0 1600x800x24" go test -count=1 -v -run 'TestErrors|TestPlay|TestLeave|TestDrawCost' ./playtest
