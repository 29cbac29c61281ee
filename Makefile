# Rewind. `make test` is what CI runs (.ci/run); `make soak` is the main job.
GO       ?= go
FUZZTIME ?= 30s
# The library's module is the root; the tools that need heavy dependencies
# have modules of their own, tied by go.work. make test covers the root
# module (ROOT: the library, its examples and the match harness), and
# stays within three minutes from a cold build cache on a two-core
# machine; make tools-test covers four tool modules (TOOLS: the soak with
# its gonum/plot report and WebRTC runner, cmd/soak; the determinism
# analyzer with golang.org/x/tools, cmd/rewindvet; the module proxy writer
# of make module-check with golang.org/x/mod, cmd/modcheck; the match
# relay with its Prometheus metrics, cmd/relay), and make race
# the packages whose code or tests run goroutines under the race detector.
# CI runs all three (.ci/run). In workspace mode ./... stops at a nested
# module's go.mod, so the tools' packages are named explicitly. The other
# modules have targets of their own: the arena demo (play-test), the
# WebRTC transport rtc and the rendezvous server (web-test).
ROOT     := ./...
TOOLMODS := ./cmd/soak ./cmd/rewindvet ./cmd/modcheck ./cmd/relay
TOOLS    := ./cmd/soak/... ./cmd/rewindvet/... ./cmd/modcheck/... ./cmd/relay/...
PKGS     := $(ROOT) $(TOOLS)
# The soak's adversary and the test hooks (rollback/liar.go) are compiled
# only with this tag: the tests run with it, a game's build never has it.
ADVERSARY := -tags rewind_adversary
# The library: what a game imports. Its module graph must not hold the tools'
# heavy dependencies (plotting, GUI, WebRTC, browsers). -deps covers what
# these import (the wire codecs through ./rollback).
LIBRARY  := ./rollback ./rollback/udp ./rollback/netsim ./relay ./determinism ./savestate ./predict ./advantage ./inputlag ./sound ./desync ./desync/bundle ./replay ./netlog ./pacer ./fixed ./rng
HEAVY    := gonum|ebiten|pion|chromedp

# STATICCHECK: pinned (v0.8.2 is staticcheck 2026.2.2, the newest release, for Go 1.26); go run
# fetches it from the module proxy once and keeps the binary in the build cache.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: relay-load scale-test module-check determinism test race tools-test lint check tools-check cross library-deps bench soak lockstep-table fuzz cover tidy play play-test web web-test rendezvous api

## test: check, then the root module's suite built with the adversary (ADVERSARY: the build tag rewind_adversary) in random order, every benchmark once (a broken one fails), the match tests in full; then rollback again as a game builds it (no tag). check has vetted everything, both ways: go test does not vet again. Within three minutes from a cold build cache on a quiet two-core machine: the race detector's builds (make race) and the tools' heavy dependencies (make tools-test) are not in it; CI runs both, and staticcheck (make lint).
# ELSEWHERE: the root module's tests that build what make test leaves to
# other targets: rtc's API listing (it compiles pion; make tools-test) and
# the determinism command run whole on this platform (make determinism,
# which runs it on seven).
ELSEWHERE := TestAPIRTC|TestHostMatrix
test: check
	$(GO) test $(ADVERSARY) -shuffle=on -count=1 -vet=off -parallel 4 -timeout=10m -bench . -benchtime 1x -skip '^($(ELSEWHERE))$$' $(ROOT)
	$(GO) test -count=1 -vet=off ./rollback/

## race: the packages whose code or tests run goroutines (RACE) under the race detector, built with the adversary: the UDP transport, the network simulator, and the match harness and the soak, which drive several sessions at once (the detector checks that they share nothing); their longest match tests play a sample under it. The session core has no goroutines: the detector has nothing to find in the other packages' tests, which it slowed 5-20 times, and it compiles the standard library and every package a second time.
RACE     := ./rollback/udp/ ./rollback/netsim/ ./internal/match/ ./cmd/relay/ ./cmd/soak/...
race:
	GORACE="$$GORACE atexit_sleep_ms=0" $(GO) test $(ADVERSARY) -race -shuffle=on -count=1 -vet=off -parallel 4 -timeout=10m $(RACE)

## tools-test: tools-check, then the tools' modules' tests (TOOLS) with the adversary in random order (the soak's match tests in full: make race plays a sample of them), every benchmark once; then the soak as a game builds the library (no tag), and rtc's API listing (api/rtc.txt, TestAPIRTC: loading rtc compiles pion).
tools-test: tools-check
	$(GO) test $(ADVERSARY) -shuffle=on -count=1 -vet=off -parallel 4 -timeout=10m -bench . -benchtime 1x $(TOOLS)
	$(GO) test -count=1 -run '^TestAPIRTC$$' ./internal/apilist/
	$(GO) test -count=1 -vet=off ./cmd/soak/

## lint: check, tools-check, and staticcheck (its default checks, over the root and tools' modules and rtc).
lint: check tools-check
	$(STATICCHECK) $(PKGS) ./rtc/...

## check: for the root module: go vet (with and without the adversary's tag), the shape limits (internal/shapecheck: a rollback file ≤ 500 lines, a library function ≤ 80, Session ≤ 25 fields and ≤ 60 methods), gofmt (every file), a package comment on every package, go.mod's tidiness, and the library's dependencies. The API listing (api/*.txt, TestAPI) and the Go blocks of README.md and docs/ (TestDocs) are checked by tests, in internal/apilist and internal/doccheck. tools-check is the same for the tools' modules.
check: library-deps
	$(GO) vet $(ADVERSARY) $(ROOT)
	$(GO) vet $(TAGGED)
	$(GO) run ./internal/shapecheck -doc docs/architecture.md
	@missing=$$($(GO) list -f '{{if not .Doc}}{{.ImportPath}}{{end}}' $(ROOT)); \
		if [ -n "$$missing" ]; then echo "package comment missing:"; echo "$$missing"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	GOWORK=off $(GO) mod tidy -diff

# TAGGED: the root module's packages with files of their own that the
# adversary's tag leaves out or puts in: vetted again as a game builds them
# (the others are the same either way).
TAGGED   := ./rollback/ ./internal/match/

## tools-check: go vet (both ways), package comments and go.mod's tidiness for the tools' modules.
tools-check:
	$(GO) vet $(TOOLS)
	$(GO) vet $(ADVERSARY) $(TOOLS)
	@missing=$$($(GO) list -f '{{if not .Doc}}{{.ImportPath}}{{end}}' $(TOOLS)); \
		if [ -n "$$missing" ]; then echo "package comment missing:"; echo "$$missing"; exit 1; fi
	@for m in $(TOOLMODS); do echo "(cd $$m && GOWORK=off $(GO) mod tidy -diff)"; (cd $$m && GOWORK=off $(GO) mod tidy -diff) || exit 1; done

## api: rewrites api/*.txt, the exported API of the library's and rtc's packages (internal/apilist), after a deliberate change to it; name the change in CHANGELOG.md.
api:
	$(GO) test ./internal/apilist -run '^TestAPI(RTC)?$$' -count=1 -update

## cross: a 32-bit build of the library (its frame counters and checksums are width-sensitive at compile time) and of the arena example (its state's size is asserted at compile time: the same layout on 32- and 64-bit platforms); the tools are not built for 32-bit targets. CI runs it after make test: cross-compiling the standard library costs half a minute of a cold make test.
cross:
	GOARCH=386 $(GO) build $(LIBRARY) ./examples/arena

## play: the arena demo in a window (cmd/arena, a module of its own: Ebitengine needs cgo and the X11, GL and ALSA headers; play-test installs them). ARGS passes flags, e.g. make play ARGS='-host :7000'.
play:
	cd cmd/arena && $(GO) run . $(ARGS)

## play-test: the demo as a person uses it (cmd/arena/play-test.sh): each error situation with the line a person sees and the exit code (TestErrors), then two games over UDP under Xvfb with injected key presses and a null audio sink; equal final states and standings, screenshots in play-test-out/; then Escape at a round-end screen (TestLeave): both machines back on their title screens, the other told its opponent left; then one game alone with 4 ships pinned to one core (TestDrawCost: FPS, Draw and render p50/p95, CPU per drawn frame in play-test-out/solo.json). Installs its Debian packages when missing.
play-test:
	cmd/arena/play-test.sh

## web: the arena's browser build (cmd/arena/web-build.sh): arena.<hash>.wasm and wasm_exec.<hash>.js, each with .br and .gz copies, and files.json naming them, into cmd/rendezvous/web/, which the rendezvous embeds when built after it (or serves with -web).
web:
	cmd/arena/web-build.sh

## rendezvous: the browser build, then the rendezvous on :8080 (TURN on :3478) serving it; open http://localhost:8080/. ARGS passes flags.
rendezvous: web
	cd cmd/rendezvous && $(GO) run . $(ARGS)

## web-test: the WebRTC transport (rtc), the rendezvous server (cmd/rendezvous) and the game in a browser, on loopback inside a network namespace of their own (cmd/rendezvous/web-test.sh; unshare -n needs root). Installs its Debian packages when missing.
web-test:
	cmd/rendezvous/web-test.sh

## scale-test: the rendezvous scaled out (cmd/rendezvous/scale-test.sh, package cmd/rendezvous/scaletest) in a network namespace: a 3-node NATS cluster, 3 instances behind a load balancer, coturn; a match across instances, through coturn, past a dead instance and a dead NATS node; a load of 20,000 matches (REWIND_SCALE_MATCHES) whose latencies and memory land in scale-test-out/load.json. Installs coturn when missing.
scale-test:
	cmd/rendezvous/scale-test.sh

## relay-load: how many 4-player matches one relay process (cmd/relay) holds at 60 Hz (cmd/relay/relay-load.sh, cmd/relay/relayload) in a network namespace: for 100 to 1,500 matches (RELAY_LOAD_LEVELS), the relay's CPU and resident memory per match, loss and latency, into relay-load-out/load.json. Not in make test; installs iproute2 and util-linux when missing.
relay-load:
	cmd/relay/relay-load.sh

## module-check: a program outside the repository that imports rtc, rtc/lobby, rollback and rollback/udp is built against a file:// module proxy written from this checkout (cmd/modcheck/module-check.sh), as a game's module gets them: no replace, no other module's internal/.
module-check:
	cmd/modcheck/module-check.sh

## determinism: the determinism matrix (cmd/determinism/determinism.sh), through the command a game outside the repository runs (go run github.com/rewindgg/rewind/cmd/determinism -game ./yourgame; docs/integration.md): the arena example and a floating-point test game (both implement determinism.Game), recorded here with rollbacks (per seed a sync-test match and a two-machine match on a simulated network), re-simulated on amd64 GOAMD64=v1 and v3, amd64 v1 without FMA (qemu-x86_64-static -cpu Nehalem, checked), 386 (SSE2 and softfloat), arm64 (qemu-user-static) and js/wasm (Node); a table of verified or the first divergent frame and field. Then a game in a module outside the repository with an x*y+z in its Step (cmd/determinism/external.sh), which must be named diverged exactly where the build fuses it. Fails unless the arena verifies everywhere, or when a platform is skipped. Installs qemu-user-static and nodejs when missing.
determinism:
	cmd/determinism/determinism.sh

## tidy: go mod tidy in every module (tidy ignores go.work: each module's go.mod must stand on its own); play-test checks the demo's.
tidy:
	for m in . $(TOOLMODS) ./cmd/arena ./rtc ./cmd/rendezvous; do (cd $$m && GOWORK=off $(GO) mod tidy) || exit 1; done

## library-deps: fails if the root module's graph, or the packages the library imports, include a module matching HEAVY.
library-deps:
	@adv=$$($(GO) list -deps ./rollback/ ./rollback/udp/ ./rollback/netsim/ | grep -E '/internal/liar$$'); \
		if [ -n "$$adv" ]; then echo "a game's build of rollback must not hold the adversary (it needs the build tag rewind_adversary):"; echo "$$adv"; exit 1; fi
	@mods=$$(GOWORK=off $(GO) list -m all) || exit 1; \
		deps=$$(GOWORK=off $(GO) list -deps -f '{{with .Module}}{{.Path}}{{end}}' $(LIBRARY)) || exit 1; \
		heavy=$$(printf '%s\n%s\n' "$$mods" "$$deps" | grep -E '$(HEAVY)' | sort -u); \
		if [ -n "$$heavy" ]; then echo "the library module must not depend on these (give the tool that needs them a module of its own):"; echo "$$heavy"; exit 1; fi

## bench: every benchmark, 5 runs each (quote medians; see docs/architecture.md), saved in bench.txt, then the session's benchmarks against their floors, measured in the same run (internal/benchratio, which fails when a package failed).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 $(PKGS) 2>&1 | tee bench.txt
	$(GO) run ./internal/benchratio < bench.txt

## soak: the default soak (20 matches, 2 players, wifi) with its summary; JSON in soak.json, the HTML report with plots in soak-report/.
soak:
	$(GO) run ./cmd/soak -json soak.json -report soak-report

## lockstep-table: the TCP-versus-UDP table of docs/lockstep.md (lockstep, 20 one-minute matches a row); JSON in lockstep-table/.
LOCKSTEP := $(GO) run ./cmd/soak -mode lockstep -matches 20
lockstep-table:
	mkdir -p lockstep-table
	$(LOCKSTEP) -profile latency=100ms,loss=1% -transport tcp-model -json lockstep-table/100ms-1pct-tcp.json
	$(LOCKSTEP) -profile latency=100ms,loss=1% -transport sim -json lockstep-table/100ms-1pct-udp.json
	$(LOCKSTEP) -profile latency=250ms,loss=5% -transport tcp-model -json lockstep-table/250ms-5pct-tcp.json
	$(LOCKSTEP) -profile latency=250ms,loss=5% -transport sim -json lockstep-table/250ms-5pct-udp.json
	$(LOCKSTEP) -profile latency=2s,loss=25% -transport sim -playout 250ms -handshake-timeout 60s -json lockstep-table/2s-25pct-udp-250ms.json
	$(LOCKSTEP) -profile latency=2s,loss=25% -transport sim -playout 100ms -handshake-timeout 60s -json lockstep-table/2s-25pct-udp-100ms.json
	$(LOCKSTEP) -profile latency=2s,loss=50% -transport sim -playout 250ms -handshake-timeout 120s -json lockstep-table/2s-50pct-udp-250ms.json
	-$(LOCKSTEP) -profile latency=2s,loss=25% -transport tcp-model -playout 250ms -handshake-timeout 120s -json lockstep-table/2s-25pct-tcp-250ms.json
	$(LOCKSTEP) -profile wifi -json lockstep-table/wifi-lockstep.json
	$(GO) run ./cmd/soak -matches 20 -profile wifi -json lockstep-table/wifi-rollback.json
	$(LOCKSTEP) -players 4 -tick 10 -frames 600 -profile latency=250ms,loss=5% -transport tcp-model -json lockstep-table/rts-10hz-tcp.json
	$(LOCKSTEP) -players 4 -tick 10 -frames 600 -profile latency=250ms,loss=5% -transport sim -json lockstep-table/rts-10hz-udp.json

## fuzz: each fuzz target for FUZZTIME.
fuzz:
	$(GO) test ./rollback/internal/wire -run '^$$' -fuzz '^FuzzParseInput$$' -fuzztime $(FUZZTIME)
	$(GO) test ./rollback/internal/wire -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime $(FUZZTIME)
	for f in FuzzHandshake FuzzQuality FuzzQualityReply FuzzDisconnect FuzzReady FuzzStart FuzzGo FuzzChecksum FuzzState FuzzTrace FuzzOpen; do $(GO) test ./rollback/internal/wire -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done
	$(GO) test ./rollback -run '^$$' -fuzz '^FuzzMatch$$' -fuzztime $(FUZZTIME)
	$(GO) test ./rollback -run '^$$' -fuzz '^FuzzSessionPackets$$' -fuzztime $(FUZZTIME)
	$(GO) test ./rollback -run '^$$' -fuzz '^FuzzJudgeInput$$' -fuzztime $(FUZZTIME)
	$(GO) test ./replay -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./desync/bundle -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./netlog -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./netlog -run '^$$' -fuzz '^FuzzRecord$$' -fuzztime $(FUZZTIME)
	$(GO) test ./sound -run '^$$' -fuzz '^FuzzLedger$$' -fuzztime $(FUZZTIME)

## cover: test coverage per package.
cover:
	$(GO) test -cover $(PKGS)
