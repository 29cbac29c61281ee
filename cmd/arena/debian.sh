# debian.sh is sourced by the scripts that test the arena demo
# (play-test.sh, and the rendezvous's web-test.sh): what building the
# native game needs from Debian, and install_missing, which installs the
# packages it is given that are not installed yet (CI starts bare).

# arena_build_packages: a C compiler and the GL, X11 and ALSA headers
# that Ebitengine's cgo build needs.
arena_build_packages=(gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxi-dev libxinerama-dev
	libxrandr-dev libxxf86vm-dev libasound2-dev)

install_missing() {
	local missing=() p sudo=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	echo "installing: ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get -o DPkg::Lock::Timeout=300 update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
