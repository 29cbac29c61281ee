// Command netlog compares two peers' detailed network logs
// (rollback.Config.Log; cmd/soak -log DIR writes them) and prints the
// first frame where they diverge and what differed.
//
//	netlog A.jsonl B.jsonl
//
// Exit status: 0 when every frame final in both logs agrees, 1 when they
// diverge or a log is unreadable, 2 for bad usage.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rewindgg/rewind/netlog"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: netlog A.jsonl B.jsonl")
		return 2
	}
	var logs [2]*netlog.Log
	for i, name := range args {
		l, err := read(name)
		if err != nil {
			fmt.Fprintf(stderr, "netlog: %s: %v\n", name, err)
			return 1
		}
		logs[i] = l
		fmt.Fprintf(stdout, "%s: %d records, frames simulated %d, final %d\n", name, l.Records, len(l.Steps), l.Final)
		if l.Desync != "" {
			fmt.Fprintf(stdout, "  %s\n", l.Desync)
		}
	}
	d, n := netlog.Diff(logs[0], logs[1])
	if d == nil {
		fmt.Fprintf(stdout, "no divergence: %d frames agree\n", n)
		return 0
	}
	fmt.Fprintln(stdout, d)
	return 1
}

func read(name string) (*netlog.Log, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return netlog.Read(f)
}
