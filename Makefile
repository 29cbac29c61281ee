# Rewind. `make test` is what CI runs (.ci/run); `make soak` is the main job.
GO       ?= go
FUZZTIME ?= 30s
PKGS     := ./...

.PHONY: test lint bench soak fuzz cover tidy

## test: lint, then the whole suite with the race detector, in random order, the long match tests in full without it, and every benchmark once.
test: lint
	$(GO) test -race -shuffle=on -count=1 -timeout=10m $(PKGS)
	$(GO) test -count=1 -run '^TestNoFalseDesync$$' ./internal/match
	$(GO) test -run '^$$' -bench . -benchtime 1x $(PKGS) > /dev/null

## lint: go vet, gofmt, a package comment on every package, go.mod tidiness, and a 32-bit build (frame counters and checksums are width-sensitive).
lint:
	$(GO) vet $(PKGS)
	@missing=$$($(GO) list -f '{{if not .Doc}}{{.ImportPath}}{{end}}' $(PKGS)); \
		if [ -n "$$missing" ]; then echo "package comment missing:"; echo "$$missing"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	GOARCH=386 $(GO) vet $(PKGS)

## bench: every benchmark, 5 runs each (quote medians; see docs/architecture.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 $(PKGS)

## soak: the default soak (20 matches, 2 players, wifi) with its summary; JSON in soak.json, the HTML report with plots in soak-report/.
soak:
	$(GO) run ./cmd/soak -json soak.json -report soak-report

## fuzz: each fuzz target for FUZZTIME.
fuzz:
	$(GO) test ./rollback/wire -run '^$$' -fuzz '^FuzzParseInput$$' -fuzztime $(FUZZTIME)
	$(GO) test ./rollback/wire -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime $(FUZZTIME)
	for f in FuzzHandshake FuzzQuality FuzzQualityReply FuzzDisconnect FuzzReady FuzzStart FuzzGo FuzzChecksum FuzzState; do $(GO) test ./rollback/wire -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done
	$(GO) test ./rollback -run '^$$' -fuzz '^FuzzMatch$$' -fuzztime $(FUZZTIME)
	$(GO) test ./rollback -run '^$$' -fuzz '^FuzzSessionPackets$$' -fuzztime $(FUZZTIME)
	$(GO) test ./replay -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	$(GO) test ./sound -run '^$$' -fuzz '^FuzzLedger$$' -fuzztime $(FUZZTIME)

## cover: test coverage per package.
cover:
	$(GO) test -cover $(PKGS)
