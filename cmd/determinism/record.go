package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rewindgg/rewind/determinism"
)

// recordAll builds the program for this machine and runs its "record",
// filling m.Games; it returns the replays' paths, or an exit status.
func recordAll(ctx context.Context, c config, prog *program, m *matrix, stderr io.Writer) ([]string, int) {
	host := platform{Name: "host", Slug: "host"}
	bin := filepath.Join(c.out, "matrix-host")
	cctx, cancel := context.WithTimeout(ctx, c.buildTimeout)
	defer cancel()
	cmd := command(cctx, "go", "build", "-o", bin, prog.Pkg)
	cmd.Dir = prog.ModDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "determinism: building the games' program (%s): %v\n%s\n", host.Name, err, tail(string(out), 20))
		fmt.Fprintf(stderr, "(each -game package must export func %s() []determinism.Game)\n", c.fn)
		return nil, 2
	}
	rctx, cancel2 := context.WithTimeout(ctx, c.runTimeout)
	defer cancel2()
	var stdout, errs bytes.Buffer
	cmd = command(rctx, bin, "record", "-out", c.out, "-frames", strconv.Itoa(c.frames), "-seeds", c.seeds,
		"-profile", c.profile, "-synctest", strconv.Itoa(c.syncTest))
	cmd.Stdout, cmd.Stderr = &stdout, &errs
	err := cmd.Run()
	recs := parseRecordings(stdout.Bytes())
	failed := false
	for _, r := range recs {
		if r.Error != "" {
			failed = true
			fmt.Fprintf(stderr, "determinism: recording %s seed %d %s: %s\n", r.Game, r.Seed, r.Kind, r.Error)
		}
	}
	switch {
	case failed:
		if errs.Len() > 0 {
			fmt.Fprintf(stderr, "record printed:\n%s\n", tail(errs.String(), 20))
		}
		return nil, 1
	case err != nil || len(recs) == 0:
		fmt.Fprintf(stderr, "determinism: record: %v\n%s\n", err, tail(errs.String(), 20))
		return nil, 2
	}
	var paths []string
	rows := map[string]*gameRow{}
	for _, r := range recs {
		row := rows[r.Game]
		if row == nil {
			row = &gameRow{Name: r.Game}
			rows[r.Game] = row
			m.Games = append(m.Games, row)
		}
		row.Recs = append(row.Recs, r)
		paths = append(paths, r.File)
	}
	progress("recorded %d replays", len(recs))
	return paths, 0
}

// parseRecordings reads record's JSON lines.
func parseRecordings(out []byte) []determinism.Recording {
	var recs []determinism.Recording
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r determinism.Recording
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.File != "" {
			recs = append(recs, r)
		}
	}
	return recs
}

// splitList splits a comma-separated list, without empty items.
func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// slugList splits a comma-separated list of platform slugs, each known.
func slugList(s string) ([]string, error) {
	out := splitList(s)
	for _, f := range out {
		if _, err := choose(f); err != nil {
			return nil, err
		}
	}
	return out, nil
}
