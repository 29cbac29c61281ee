package typecheck

import (
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	l, err := Load(".", "github.com/rewindgg/rewind/pacer")
	if err != nil {
		t.Fatal(err)
	}
	var root, time bool
	for _, p := range l.Packages {
		root = root || p.Root && p.ImportPath == "github.com/rewindgg/rewind/pacer" && p.Module == "github.com/rewindgg/rewind"
		time = time || !p.Root && p.ImportPath == "time" && p.Module == ""
	}
	if !root || !time {
		t.Errorf("pacer named: %v, time a dependency: %v, in %+v", root, time, l.Packages)
	}
	pkg, err := l.Import("github.com/rewindgg/rewind/pacer")
	if err != nil {
		t.Fatal(err)
	}
	if pkg.Scope().Lookup("New") == nil {
		t.Errorf("pacer.New missing from %v", pkg.Scope().Names())
	}
	if again, _ := l.Import("github.com/rewindgg/rewind/pacer"); again != pkg {
		t.Error("a package imported twice is two packages")
	}
	if _, err := l.Import("net/http"); err == nil || !strings.Contains(err.Error(), "not among the packages loaded") {
		t.Errorf("a package not loaded: %v", err)
	}
	if _, err := Load(".", "github.com/rewindgg/rewind/nosuchpackage"); err == nil {
		t.Error("a package that does not exist: no error")
	}
}
