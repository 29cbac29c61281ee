#!/usr/bin/env bash
# web-build.sh: the arena's browser build. It compiles the demo for
# js/wasm into cmd/rendezvous/web/arena.wasm and copies Go's wasm_exec.js
# next to it (both gitignored); the rendezvous serves them with
# index.html, embedded when it is built after this, or from disk with
# -web cmd/rendezvous/web. Then open the server's URL: without ?code= the
# page creates a match and shows the link that joins it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
web="$here/../rendezvous/web"
cd "$here"
GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o "$web/arena.wasm" .
goroot="$(go env GOROOT)"
exec_js="$goroot/lib/wasm/wasm_exec.js"
[ -f "$exec_js" ] || exec_js="$goroot/misc/wasm/wasm_exec.js" # Go before 1.24
cp "$exec_js" "$web/wasm_exec.js"
chmod 0644 "$web/wasm_exec.js"
echo "built $(cd "$web" && pwd)/arena.wasm ($(du -h "$web/arena.wasm" | cut -f1)) and wasm_exec.js"
