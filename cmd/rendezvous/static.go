package main

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// embedded is the browser build: web/index.html, and arena.wasm and
// wasm_exec.js when `make web` has put them there before the build.
//
//go:embed web
var embedded embed.FS

// webFS is the embedded web directory.
func webFS() fs.FS {
	sub, err := fs.Sub(embedded, "web")
	if err != nil {
		panic(err) // the directive above guarantees the directory
	}
	return sub
}

// static serves the files of fsys for GET and HEAD: a directory by its
// index.html (never a listing), .wasm as application/wasm.
type static struct {
	fsys  fs.FS
	files http.Handler
}

func newStatic(fsys fs.FS) *static {
	return &static{fsys: fsys, files: http.FileServerFS(fsys)}
}

func (s *static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, errorf(http.StatusMethodNotAllowed, lobby.CodeMethodNotAllowed, "only GET and HEAD here"))
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "."
	}
	info, err := fs.Stat(s.fsys, name)
	if err == nil && info.IsDir() {
		info, err = fs.Stat(s.fsys, path.Join(name, "index.html"))
	}
	if err != nil {
		writeError(w, errNotFound)
		return
	}
	if strings.HasSuffix(name, ".wasm") {
		w.Header().Set("Content-Type", "application/wasm")
	}
	s.files.ServeHTTP(w, r)
}
