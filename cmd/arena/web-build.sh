#!/usr/bin/env bash
# web-build.sh: the arena's browser build, for the rendezvous to serve. It
# compiles the demo for js/wasm and copies Go's wasm_exec.js into
# cmd/rendezvous/web/ under names that carry the first 16 hex digits of
# their SHA-256 (arena.<hash>.wasm, wasm_exec.<hash>.js), each with a
# brotli copy (.br, quality 11) and a gzip copy (.gz, level 9) beside it,
# and writes files.json, which maps the plain names to the hashed ones.
# The server writes that map into index.html and sends each file in the
# best encoding the browser accepts, cached for a year (a new build has
# new names). The files of earlier builds are removed; all are gitignored.
# The rendezvous embeds the directory when it is built after this, or
# serves it from disk with -web cmd/rendezvous/web (a new build needs no
# restart then). Then open the server's URL: without ?code= the page
# creates a match and shows the link that joins it.
#
# Brotli is Debian's brotli command, installed when missing: its encoder
# (C) takes about a minute for the wasm at quality 11 on a 2-core machine,
# and the server module needs no encoder of its own. A file whose hashed
# name and copies are already there is not compressed again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
web="$(cd "$here/../rendezvous/web" && pwd)"

if ! command -v brotli >/dev/null; then
	echo "installing: brotli"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq -o DPkg::Lock::Timeout=300
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		-o DPkg::Lock::Timeout=300 brotli >/dev/null
fi

rm -f "$web"/.*.tmp # left by a build that was interrupted
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$here"
GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o "$tmp/arena.wasm" .
goroot="$(go env GOROOT)"
exec_js="$goroot/lib/wasm/wasm_exec.js"
[ -f "$exec_js" ] || exec_js="$goroot/misc/wasm/wasm_exec.js" # Go before 1.24
cp "$exec_js" "$tmp/wasm_exec.js"

# hashed prints the hashed name of the file $1 in $tmp.
hashed() {
	local h
	h="$(sha256sum "$tmp/$1" | cut -c1-16)"
	echo "${1%.*}.$h.${1##*.}"
}

# place puts the file $1 of $tmp into the web directory under its hashed
# name $2, with its compressed copies: each written beside under a
# temporary name and renamed, so that a server reading the directory
# meanwhile sees whole files only; the copies go first.
place() {
	local plain="$1" name="$2"
	if cmp -s "$tmp/$plain" "$web/$name" && [ -f "$web/$name.br" ] && [ -f "$web/$name.gz" ]; then
		echo "$name: unchanged"
		return
	fi
	gzip -9 -n -c "$tmp/$plain" >"$web/.$name.gz.tmp"
	brotli -q 11 -c "$tmp/$plain" >"$web/.$name.br.tmp"
	cp "$tmp/$plain" "$web/.$name.tmp"
	chmod 0644 "$web/.$name.gz.tmp" "$web/.$name.br.tmp" "$web/.$name.tmp"
	mv -f "$web/.$name.gz.tmp" "$web/$name.gz"
	mv -f "$web/.$name.br.tmp" "$web/$name.br"
	mv -f "$web/.$name.tmp" "$web/$name"
}

wasm="$(hashed arena.wasm)"
exec_name="$(hashed wasm_exec.js)"
place arena.wasm "$wasm"
place wasm_exec.js "$exec_name"
printf '{"arena.wasm": "%s", "wasm_exec.js": "%s"}\n' "$wasm" "$exec_name" >"$web/.files.json.tmp"
chmod 0644 "$web/.files.json.tmp"
mv -f "$web/.files.json.tmp" "$web/files.json"

# The files of earlier builds (and the plain names older builds wrote).
for f in "$web"/arena.wasm "$web"/wasm_exec.js "$web"/arena.*.wasm* "$web"/wasm_exec.*.js*; do
	[ -e "$f" ] || continue
	case "$(basename "$f")" in
	"$wasm" | "$wasm.br" | "$wasm.gz" | "$exec_name" | "$exec_name.br" | "$exec_name.gz") ;;
	*) rm -f "$f" ;;
	esac
done

size() { stat -c %s "$web/$1"; }
echo "built $web: $wasm ($(size "$wasm") bytes; br $(size "$wasm.br"), gzip $(size "$wasm.gz"))," \
	"$exec_name ($(size "$exec_name") bytes; br $(size "$exec_name.br"), gzip $(size "$exec_name.gz")), files.json"
