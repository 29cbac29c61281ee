module github.com/rewindgg/rewind/cmd/arena

go 1.26

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/hajimehoshi/ebiten/v2 v2.8.8
	github.com/rewindgg/rewind v0.0.0-00010101000000-000000000000
)

require (
	github.com/ebitengine/gomobile v0.0.0-20240911145611-4856209ac325 // indirect
	github.com/ebitengine/hideconsole v1.0.0 // indirect
	github.com/ebitengine/oto/v3 v3.3.3 // indirect
	github.com/ebitengine/purego v0.8.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/jezek/xgb v1.1.1 // indirect
	golang.org/x/sync v0.17.0 // indirect
	golang.org/x/sys v0.25.0 // indirect
)

replace github.com/rewindgg/rewind => ../..
