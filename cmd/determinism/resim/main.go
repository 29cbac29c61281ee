// Command resim is the determinism matrix's re-simulator: the harness
// (cmd/determinism) cross-compiles it for each platform and runs it on the
// replays it recorded on the host.
//
//	resim FILE...
//
// For each replay it prints one JSON line on stdout (package
// cmd/determinism/internal/check describes its fields): verified, with the
// frames and checksums; layout, when the checksums differ only because
// this platform lays the state out otherwise and every field equals the
// host's (from FILE.states); diverged, with the first frame whose state
// differs and, from FILE.states (the host's states) when present, the
// field; or an error (an unreadable or truncated file). Exit status: 0
// when every replay verified, 1 otherwise, 2 for bad usage.
package main

import (
	"os"

	"github.com/rewindgg/rewind/cmd/determinism/internal/check"
)

func main() { os.Exit(check.Main(os.Args[1:], os.Stdout, os.Stderr)) }
