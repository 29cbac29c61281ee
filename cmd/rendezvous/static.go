package main

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// embedded is the browser build: web/index.html, and the game's files
// when `make web` (cmd/arena/web-build.sh) has put them there before the
// build.
//
//go:embed web
var embedded embed.FS

// webFS is the embedded web directory (the same value at each call).
var webFS = sync.OnceValue(func() fs.FS {
	sub, err := fs.Sub(embedded, "web")
	if err != nil {
		panic(err) // the directive above guarantees the directory
	}
	return sub
})

// The browser build as cmd/arena/web-build.sh writes it: the game's files
// under names that carry a hash of their content (arena.<hash>.wasm,
// wasm_exec.<hash>.js), each with a brotli (.br) and a gzip (.gz) copy
// beside it, and manifestName, a JSON object that maps each plain name in
// gameFiles to its hashed name. The server writes that map into
// index.html where filesMarker stands, so a new build in a -web directory
// is found without a restart, and the page loads names that can be
// cached for ever.
const (
	indexName    = "index.html"
	manifestName = "files.json"
	filesMarker  = `<script type="application/json" id="rewind-files">{}</script>`
)

// gameFiles are the plain names of the files the page loads.
var gameFiles = []string{"wasm_exec.js", "arena.wasm"}

// What the page and the log say when the game's files are not there: in
// the embedded files, and in a -web directory.
const (
	missingBuild = "This server was built without the browser game: run make web, then rebuild the server " +
		"(or serve the build from disk with -web cmd/rendezvous/web)."
	missingDir = "The web directory this server serves (-web) has no browser game: run make web " +
		"(it builds into cmd/rendezvous/web), then reload this page."
)

// Cache-Control of a file whose name carries a hash of its content, and
// of every other file (index.html among them): used only after the
// browser has checked with the server that its copy is current (ETag).
const (
	cacheHashed = "public, max-age=31536000, immutable"
	cacheOther  = "no-cache"
)

// The precompressed copies a file may have beside it, in the order the
// server prefers them, with the suffix of their names.
var encodings = []struct{ name, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

// Bounds on the small files the server reads whole.
const (
	maxIndex    = 1 << 20
	maxManifest = 64 << 10
)

// static serves the files of fsys for GET and HEAD: a directory by its
// index.html (never a listing), each file in the best encoding the
// client accepts that has a precompressed copy, with an ETag and a
// Cache-Control that depends on whether its name is content-hashed.
type static struct {
	fsys    fs.FS
	missing string // what to say when the game's files are not in fsys

	mu    sync.Mutex
	etags map[etagKey]string // the ETags of files read so far
}

// etagKey identifies a version of a file: a -web directory's file that
// is rewritten changes its size or its modification time.
type etagKey struct {
	name string
	size int64
	mod  time.Time
}

// maxETags bounds the ETag cache; beyond, it starts again empty.
const maxETags = 1024

func newStatic(fsys fs.FS) *static {
	s := &static{fsys: fsys, missing: missingDir, etags: make(map[etagKey]string)}
	// Interfaces of different dynamic types compare unequal (a map's
	// included), and the embedded files' is a pointer.
	if fsys == webFS() {
		s.missing = missingBuild
	}
	return s
}

// check says what is wrong with the files for the browser game, or ""
// when the page can load it. The server logs it at start.
func (s *static) check() string {
	if _, err := fs.Stat(s.fsys, indexName); err != nil {
		return "the web files have no index.html: the browser game's page is not served"
	}
	_, missing := s.build()
	return missing
}

// build finds the game's files: a map from each name in gameFiles to the
// name of its file in fsys, from the manifest; without a manifest, the
// plain names themselves when those files are present (a build made by
// hand or by an older script). missing says why the game cannot load
// when it cannot.
func (s *static) build() (files map[string]string, missing string) {
	raw, err := readSmall(s.fsys, manifestName, maxManifest)
	if errors.Is(err, fs.ErrNotExist) {
		files = make(map[string]string, len(gameFiles))
		for _, name := range gameFiles {
			if !s.isFile(name) {
				return nil, s.missing
			}
			files[name] = name
		}
		return files, ""
	}
	if err == nil {
		err = json.Unmarshal(raw, &files)
	}
	if err != nil {
		return nil, fmt.Sprintf("The browser game's %s cannot be read (%v): run make web again.", manifestName, err)
	}
	for _, name := range gameFiles {
		target := files[name]
		if target == "" || strings.Contains(target, "/") || !fs.ValidPath(target) || !s.isFile(target) {
			return nil, fmt.Sprintf("The browser game's %s names %q for %s, which is not there: run make web again.",
				manifestName, target, name)
		}
	}
	return files, ""
}

// isFile reports whether name is a regular file of fsys.
func (s *static) isFile(name string) bool {
	info, err := fs.Stat(s.fsys, name)
	return err == nil && info.Mode().IsRegular()
}

func (s *static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, errorf(http.StatusMethodNotAllowed, lobby.CodeMethodNotAllowed, "only GET and HEAD here"))
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" || name == indexName {
		s.servePage(w, r)
		return
	}
	info, err := fs.Stat(s.fsys, name)
	if err == nil && info.IsDir() {
		if !strings.HasSuffix(r.URL.Path, "/") {
			// Relative links in the directory's page need the slash.
			target := path.Base(name) + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		name = path.Join(name, indexName)
		info, err = fs.Stat(s.fsys, name)
	}
	if err == nil && info.Mode().IsRegular() {
		cache := cacheOther
		if hashedName(name) {
			cache = cacheHashed
		}
		s.serveFile(w, r, name, cache)
		return
	}
	// A plain name of the game's files is its hashed file, revalidated
	// each time: for pages that load the plain names.
	if slices.Contains(gameFiles, name) {
		if files, _ := s.build(); files[name] != "" && files[name] != name {
			s.serveFile(w, r, files[name], cacheOther)
			return
		}
	}
	writeError(w, errNotFound)
}

// servePage serves index.html with the game's file names, or the reason
// there are none, written where filesMarker stands.
func (s *static) servePage(w http.ResponseWriter, r *http.Request) {
	page, err := readSmall(s.fsys, indexName, maxIndex)
	if err != nil {
		writeError(w, errNotFound)
		return
	}
	if bytes.Contains(page, []byte(filesMarker)) {
		var v any
		files, missing := s.build()
		if missing != "" {
			v = map[string]string{"missing": missing}
		} else {
			v = files
		}
		js, err := json.Marshal(v) // escapes <, > and &: nothing in it can end the script element
		if err != nil {
			writeError(w, errInternal)
			return
		}
		filled := strings.Replace(filesMarker, "{}", string(js), 1)
		page = bytes.Replace(page, []byte(filesMarker), []byte(filled), 1)
	}
	sum := sha256.Sum256(page)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", cacheOther)
	h.Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(page))
}

// serveFile serves the file name of fsys, or the precompressed copy of it
// that the request accepts, best first. Ranges apply to the bytes sent
// (the encoded ones), which have an ETag of their own.
func (s *static) serveFile(w http.ResponseWriter, r *http.Request, name, cache string) {
	h := w.Header()
	var f fs.File
	encoding := ""
	var has []string // the encodings name has copies in
	for _, e := range encodings {
		if s.isFile(name + e.suffix) {
			has = append(has, e.name)
		}
	}
	if len(has) > 0 {
		h.Add("Vary", "Accept-Encoding")
		accepted := acceptedEncodings(r.Header.Get("Accept-Encoding"))
		for _, e := range encodings {
			if !accepted[e.name] || !slices.Contains(has, e.name) {
				continue
			}
			if ef, err := s.fsys.Open(name + e.suffix); err == nil {
				f, encoding = ef, e.name
				name += e.suffix
				break
			}
		}
	}
	if f == nil {
		var err error
		if f, err = s.fsys.Open(name); err != nil {
			writeError(w, errNotFound)
			return
		}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		writeError(w, errNotFound)
		return
	}
	content, ok := f.(io.ReadSeeker)
	if !ok {
		// Not seekable: read it whole (no file system of this server's does this).
		b, err := io.ReadAll(f)
		if err != nil {
			writeError(w, errInternal)
			return
		}
		content = bytes.NewReader(b)
	}
	etag, err := s.etag(name, info, content)
	if err != nil {
		writeError(w, errInternal)
		return
	}
	ctype := contentType(strings.TrimSuffix(strings.TrimSuffix(name, ".br"), ".gz"))
	if encoding != "" {
		// The plain file's type; the encoding says how it is packed.
		// ServeContent leaves Content-Length out when Content-Encoding is
		// set, unless it sends a range: it is the encoded size.
		h.Set("Content-Encoding", encoding)
		h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
	}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	h.Set("Cache-Control", cache)
	h.Set("ETag", etag)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", info.ModTime(), content)
}

// etag is the ETag of the file name: a hash of its content, read once for
// each version of the file.
func (s *static) etag(name string, info fs.FileInfo, content io.ReadSeeker) (string, error) {
	key := etagKey{name: name, size: info.Size(), mod: info.ModTime()}
	s.mu.Lock()
	tag, ok := s.etags[key]
	s.mu.Unlock()
	if ok {
		return tag, nil
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, content); err != nil {
		return "", err
	}
	if _, err := content.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	tag = `"` + hex.EncodeToString(sum.Sum(nil)[:16]) + `"`
	s.mu.Lock()
	if len(s.etags) >= maxETags {
		clear(s.etags)
	}
	s.etags[key] = tag
	s.mu.Unlock()
	return tag, nil
}

// hashedName reports whether a file's name carries a hash of its content,
// as the build names them: base.<16 to 64 lower-case hex digits>.ext.
func hashedName(name string) bool {
	parts := strings.Split(path.Base(name), ".")
	if len(parts) < 3 || parts[0] == "" || parts[len(parts)-1] == "" {
		return false
	}
	h := parts[len(parts)-2]
	if len(h) < 16 || len(h) > 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// contentType is the Content-Type of a file by its name's extension, ""
// when unknown (ServeContent then looks at the bytes).
func contentType(name string) string {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".wasm":
		return "application/wasm"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".json":
		return "application/json"
	default:
		return mime.TypeByExtension(ext)
	}
}

// acceptedEncodings reads an Accept-Encoding header (RFC 9110, 12.5.3):
// which of the encodings the server has copies in the client accepts. A
// coding is accepted when named with a weight above 0, or covered by "*"
// with a weight above 0 and not named; a weight that does not parse
// refuses it. The server's order of preference (br, then gzip) decides
// between accepted codings, not their weights.
func acceptedEncodings(header string) map[string]bool {
	named := make(map[string]bool)
	ok := make(map[string]bool)
	star := false // "*" with a weight above 0
	for item := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(item, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding == "" {
			continue
		}
		if coding == "x-gzip" {
			coding = "gzip"
		}
		weight := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || q < 0 || q > 1 {
					q = 0
				}
				weight = q
			}
		}
		if coding == "*" {
			star = weight > 0
			continue
		}
		named[coding] = true
		ok[coding] = weight > 0
	}
	accepted := make(map[string]bool)
	for _, e := range encodings {
		accepted[e.name] = ok[e.name] || (!named[e.name] && star)
	}
	return accepted
}

// readSmall reads the file name of fsys whole, if it is at most max bytes.
func readSmall(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return b, nil
}
