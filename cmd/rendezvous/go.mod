module github.com/rewindgg/rewind/cmd/rendezvous

go 1.26

require (
	github.com/pion/logging v0.2.4
	github.com/pion/turn/v4 v4.1.4
	github.com/rewindgg/rewind/rtc v0.0.0-00010101000000-000000000000
	golang.org/x/time v0.14.0
)

require (
	github.com/pion/dtls/v3 v3.1.15 // indirect
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/stun/v3 v3.0.1 // indirect
	github.com/pion/transport/v3 v3.0.8 // indirect
	github.com/pion/transport/v4 v4.0.1 // indirect
	github.com/pion/transport/v5 v5.1.4 // indirect
	github.com/wlynxg/anet v0.0.5 // indirect
	golang.org/x/crypto v0.48.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)

replace github.com/rewindgg/rewind/rtc => ../../rtc
