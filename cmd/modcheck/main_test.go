package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeModule(t *testing.T, gomod string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = gomod
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWrite: the proxy holds the version's list line, info, go.mod and a
// zip of the module without its nested modules.
func TestWrite(t *testing.T) {
	dir := writeModule(t, "module example.com/Game\n\ngo 1.26\n", map[string]string{
		"game.go":         "package game\n",
		"sub/sub.go":      "package sub\n",
		"nested/go.mod":   "module example.com/Game/nested\n",
		"nested/inner.go": "package nested\n",
	})
	out := t.TempDir()
	const v = "v0.0.0-20261127000000-0123456789ab"
	path, err := write(out, dir, v, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if path != "example.com/Game" {
		t.Fatalf("path %q", path)
	}
	at := filepath.Join(out, "example.com", "!game", "@v") // upper case escaped as GOPROXY wants
	list, err := os.ReadFile(filepath.Join(at, "list"))
	if err != nil || string(list) != v+"\n" {
		t.Fatalf("list %q %v", list, err)
	}
	for _, ext := range []string{".info", ".mod"} {
		if _, err := os.Stat(filepath.Join(at, v+ext)); err != nil {
			t.Error(err)
		}
	}
	zr, err := zip.OpenReader(filepath.Join(at, v+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"example.com/Game@" + v + "/game.go", "example.com/Game@" + v + "/sub/sub.go"} {
		if !strings.Contains(got, want) {
			t.Errorf("zip has %s, not %s", got, want)
		}
	}
	if strings.Contains(got, "nested") {
		t.Errorf("zip has the nested module: %s", got)
	}
}

// TestRefusesReplace: a go.mod with a replace is refused, naming it.
func TestRefusesReplace(t *testing.T) {
	dir := writeModule(t, "module example.com/game\n\ngo 1.26\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ../lib\n", map[string]string{"game.go": "package game\n"})
	_, err := write(t.TempDir(), dir, "v0.1.0", time.Unix(0, 0))
	if err == nil || !strings.Contains(err.Error(), "replaces example.com/lib") {
		t.Fatalf("err = %v, want a refusal naming the replace", err)
	}
}
