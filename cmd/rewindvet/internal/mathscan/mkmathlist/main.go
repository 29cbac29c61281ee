// Command mkmathlist writes the analyzer's list of platform-dependent math
// functions (see package mathscan) for the Go installation that runs it:
//
//	go run ./internal/mathscan/mkmathlist -o determinism/mathfuncs.go
//
// The determinism package's go:generate line runs it.
package main

import (
	"flag"
	"log"
	"os"
	"os/exec"
	"strings"

	"github.com/rewindgg/rewind/cmd/rewindvet/internal/mathscan"
)

func main() {
	out := flag.String("o", "mathfuncs.go", "the file to write")
	pkg := flag.String("pkg", "determinism", "its package name")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mkmathlist: ")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		log.Fatalf("go env GOROOT: %v", err)
	}
	t, err := mathscan.Scan(strings.TrimSpace(string(goroot)))
	if err != nil {
		log.Fatal(err)
	}
	src, err := t.Source(*pkg)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
