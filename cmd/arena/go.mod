module github.com/rewindgg/rewind/cmd/arena

go 1.26

require github.com/rewindgg/rewind v0.0.0-00010101000000-000000000000

replace github.com/rewindgg/rewind => ../..
