// Command modcheck writes a Go module proxy directory (the layout GOPROXY
// serves, for a file:// URL) holding the modules of this checkout at one
// version, so that a program outside the repository can be built against
// them exactly as a game's module would be: `make module-check` builds
// one that imports rtc, rtc/lobby, rollback and rollback/udp. It refuses a
// module whose go.mod has a replace directive (a dependency's replace is
// ignored, so it would build here and not for the game).
//
//	modcheck -out DIR -version v0.0.0-20261127171500-f14df9c0a1b2 . ./rtc
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy `directory` to write (created)")
	version := flag.String("version", "", "the `version` every module gets")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modcheck -out DIR -version VERSION MODULE_DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *version == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		path, err := write(*out, dir, *version, time.Now().UTC())
		if err != nil {
			fmt.Fprintln(os.Stderr, "modcheck:", err)
			os.Exit(1)
		}
		fmt.Printf("%s@%s from %s\n", path, *version, dir)
	}
}

// write adds the module in dir to the proxy at out as version, and
// returns its path.
func write(out, dir, version string, at time.Time) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	f, err := modfile.Parse(filepath.Join(dir, "go.mod"), data, nil)
	if err != nil {
		return "", err
	}
	if f.Module == nil {
		return "", fmt.Errorf("%s/go.mod: no module line", dir)
	}
	path := f.Module.Mod.Path
	if len(f.Replace) > 0 {
		return "", fmt.Errorf("%s/go.mod replaces %s: a game's build ignores a dependency's replace", dir, f.Replace[0].Old.Path)
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return "", err
	}
	esc, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	at2 := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at2, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(at2, version)
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at})
	zf, err := os.Create(base + ".zip")
	if err != nil {
		return "", err
	}
	err = zip.CreateFromDir(zf, mv, dir)
	err = errors.Join(err, zf.Close())
	if err != nil {
		return "", fmt.Errorf("zipping %s: %w", dir, err)
	}
	list, err := os.OpenFile(filepath.Join(at2, "list"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintln(list, version)
	err = errors.Join(err, list.Close(),
		os.WriteFile(base+".mod", data, 0o644),
		os.WriteFile(base+".info", info, 0o644))
	return path, err
}
