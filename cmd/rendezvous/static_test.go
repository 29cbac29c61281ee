package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// Hashed names as cmd/arena/web-build.sh writes them.
const (
	testWasm = "arena.0123456789abcdef.wasm"
	testExec = "wasm_exec.fedcba9876543210.js"
)

// buildFS is a web directory as `make web` leaves it, with made-up
// contents: the compressed copies' bytes differ from the plain file's, so
// a test sees which one it got.
func buildFS(t testing.TB) fstest.MapFS {
	t.Helper()
	page, err := fs.ReadFile(webFS(), indexName)
	if err != nil {
		t.Fatal(err)
	}
	wasm := bytes.Repeat([]byte("\x00asm\x01\x00\x00\x00 the game "), 100)
	manifest := fmt.Sprintf(`{"arena.wasm": %q, "wasm_exec.js": %q}`, testWasm, testExec)
	return fstest.MapFS{
		indexName:            {Data: page},
		manifestName:         {Data: []byte(manifest)},
		testWasm:             {Data: wasm},
		testWasm + ".br":     {Data: []byte("brotli bytes of the wasm")},
		testWasm + ".gz":     {Data: gzipped(t, wasm)},
		testExec:             {Data: []byte("// Go's wasm_exec.js")},
		testExec + ".br":     {Data: []byte("brotli bytes of wasm_exec.js")},
		testExec + ".gz":     {Data: gzipped(t, []byte("// Go's wasm_exec.js"))},
		"notes.txt":          {Data: []byte("not hashed, not compressed")},
		"empty/readme.txt":   {Data: []byte("x")},
		"sub/index.html":     {Data: []byte("<p>another page</p>")},
		"arena.nothex!.wasm": {Data: []byte("x")},
	}
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := z.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lockedFS is a MapFS that a test may change while a server reads it.
type lockedFS struct {
	mu sync.RWMutex
	m  fstest.MapFS
}

func (l *lockedFS) Open(name string) (fs.File, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.m.Open(name)
}

func (l *lockedFS) set(name string, data []byte) {
	l.mu.Lock()
	l.m[name] = &fstest.MapFile{Data: data}
	l.mu.Unlock()
}

// startStatic serves fsys as a server's web files.
func startStatic(t testing.TB, fsys fs.FS) string {
	t.Helper()
	cfg := testConfig(newFakeClock())
	cfg.Web = fsys
	_, base := start(t, cfg)
	return base
}

// rawClient sends the request's Accept-Encoding as it is (none when
// none) and does not decode the answer: what a test reads is what the
// server sent. It does not follow redirects either.
var rawClient = &http.Client{
	Transport:     &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// fetch sends one request with the given headers ("Name: value").
func fetch(t testing.TB, base, method, path string, headers ...string) answer {
	t.Helper()
	return fetchBody(t, base, method, path, nil, headers...)
}

// fetchBody sends one request with a body and the given headers.
func fetchBody(t testing.TB, base, method, path string, body []byte, headers ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	return roundTrip(t, rawClient, req)
}

// TestStaticEncodings: a hashed file is sent as its brotli copy to a
// client that accepts br, as its gzip copy to one that accepts gzip and
// not br, else as it is; with the plain file's type, the encoded length,
// Vary: Accept-Encoding, an ETag of its own for each encoding, and cached
// for a year.
func TestStaticEncodings(t *testing.T) {
	fsys := buildFS(t)
	base := startStatic(t, fsys)
	etags := map[string]string{}
	for _, c := range []struct {
		accept, want string // want: "" for the plain file
	}{
		{"", ""},
		{"br", "br"},
		{"gzip, deflate, br, zstd", "br"}, // Chromium's
		{"gzip, deflate", "gzip"},
		{"x-gzip", "gzip"},
		{"br;q=0, gzip", "gzip"},
		{"br;q=0.1, gzip;q=1", "br"}, // the server's preference decides between accepted codings
		{"*", "br"},
		{"gzip;q=0, *", "br"},
		{"br;q=0, *;q=0.5", "gzip"},
		{"br;q=0, gzip;q=0", ""},
		{"*;q=0", ""},
		{"identity", ""},
		{"deflate", ""},
		{"BR", "br"},
		{"br;q=junk, gzip", "gzip"},
	} {
		ans := fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: "+c.accept)
		want := map[string]string{"": testWasm, "br": testWasm + ".br", "gzip": testWasm + ".gz"}[c.want]
		h := ans.header
		if ans.status != 200 || !bytes.Equal(ans.body, fsys[want].Data) || h.Get("Content-Encoding") != c.want {
			t.Errorf("Accept-Encoding %q: %d, Content-Encoding %q, %d bytes; want %s", c.accept, ans.status,
				h.Get("Content-Encoding"), len(ans.body), want)
			continue
		}
		if h.Get("Content-Type") != "application/wasm" || h.Get("Content-Length") != fmt.Sprint(len(fsys[want].Data)) ||
			h.Get("Vary") != "Accept-Encoding" || h.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("Accept-Encoding %q: headers %v", c.accept, h)
		}
		etag := h.Get("ETag")
		if prev, ok := etags[c.want]; (ok && prev != etag) || etag == "" {
			t.Errorf("Accept-Encoding %q: ETag %q, before %q", c.accept, etag, prev)
		}
		etags[c.want] = etag
	}
	if len(etags) == 3 && (etags[""] == etags["br"] || etags["br"] == etags["gzip"] || etags[""] == etags["gzip"]) {
		t.Errorf("the encodings share an ETag: %v", etags)
	}

	// wasm_exec.js likewise, as JavaScript.
	ans := fetch(t, base, "GET", "/"+testExec, "Accept-Encoding: gzip, br")
	if ans.status != 200 || ans.header.Get("Content-Encoding") != "br" || !bytes.Equal(ans.body, fsys[testExec+".br"].Data) ||
		ans.header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("%s: %d %v %q", testExec, ans.status, ans.header, ans.body)
	}

	// A file without copies: no Vary, no encoding, revalidated.
	ans = fetch(t, base, "GET", "/notes.txt", "Accept-Encoding: br, gzip")
	if ans.status != 200 || ans.header.Get("Content-Encoding") != "" || ans.header.Get("Vary") != "" ||
		ans.header.Get("Cache-Control") != "no-cache" || ans.header.Get("ETag") == "" || string(ans.body) != "not hashed, not compressed" {
		t.Errorf("notes.txt: %d %v %q", ans.status, ans.header, ans.body)
	}
	// Not a hash: not immutable.
	if ans := fetch(t, base, "GET", "/arena.nothex!.wasm"); ans.status != 200 || ans.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("a name without a hash: %d %v", ans.status, ans.header)
	}
}

// TestStaticConditionalAndRange: an ETag the client holds answers 304; a
// range is a range of the bytes sent (the encoded ones), and If-Range
// with another encoding's ETag sends the whole.
func TestStaticConditionalAndRange(t *testing.T) {
	fsys := buildFS(t)
	base := startStatic(t, fsys)
	br := fsys[testWasm+".br"].Data
	first := fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: br")
	etag := first.header.Get("ETag")

	ans := fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: br", "If-None-Match: "+etag)
	if ans.status != 304 || len(ans.body) != 0 || ans.header.Get("Content-Encoding") != "" {
		t.Errorf("If-None-Match with the br ETag: %d %v", ans.status, ans.header)
	}
	if ans := fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: gzip", "If-None-Match: "+etag); ans.status != 200 ||
		ans.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("If-None-Match with the br ETag, asking for gzip: %d %v (the gzip copy is another representation)", ans.status, ans.header)
	}

	ans = fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: br", "Range: bytes=2-5")
	if ans.status != 206 || !bytes.Equal(ans.body, br[2:6]) || ans.header.Get("Content-Encoding") != "br" ||
		ans.header.Get("Content-Range") != fmt.Sprintf("bytes 2-5/%d", len(br)) || ans.header.Get("Content-Length") != "4" {
		t.Errorf("a range of the br copy: %d %v %q", ans.status, ans.header, ans.body)
	}
	ans = fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: br", "Range: bytes=2-5", "If-Range: "+etag)
	if ans.status != 206 || !bytes.Equal(ans.body, br[2:6]) {
		t.Errorf("a range with If-Range of its own ETag: %d %q", ans.status, ans.body)
	}
	ans = fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: gzip", "Range: bytes=2-5", "If-Range: "+etag)
	if ans.status != 200 || !bytes.Equal(ans.body, fsys[testWasm+".gz"].Data) {
		t.Errorf("a range of the gzip copy with If-Range of the br ETag: %d, %d bytes (want the whole gzip copy)", ans.status, len(ans.body))
	}
	ans = fetch(t, base, "GET", "/"+testWasm, "Accept-Encoding: br", fmt.Sprintf("Range: bytes=%d-", len(br)+10))
	if ans.status != 416 || ans.header.Get("Content-Encoding") != "" {
		t.Errorf("a range past the end: %d %v", ans.status, ans.header)
	}

	// HEAD: the headers of the GET, no body.
	ans = fetch(t, base, "HEAD", "/"+testWasm, "Accept-Encoding: br")
	if ans.status != 200 || len(ans.body) != 0 || ans.header.Get("Content-Length") != fmt.Sprint(len(br)) ||
		ans.header.Get("Content-Encoding") != "br" || ans.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d %v", ans.status, ans.header)
	}
}

// TestStaticPage: index.html gets the build's hashed names (from
// files.json, read at each request: a new build in a -web directory is
// found without a restart), is revalidated (no-cache, ETag), and the
// plain names still answer, revalidated too.
func TestStaticPage(t *testing.T) {
	fsys := buildFS(t)
	locked := &lockedFS{m: fsys}
	base := startStatic(t, locked)
	files := func(ans answer) map[string]string {
		t.Helper()
		_, rest, ok := strings.Cut(string(ans.body), `<script type="application/json" id="rewind-files">`)
		js, _, ok2 := strings.Cut(rest, "</script>")
		var m map[string]string
		if !ok || !ok2 || json.Unmarshal([]byte(js), &m) != nil {
			t.Fatalf("the page has no file names: %q", ans.body)
		}
		return m
	}
	for _, path := range []string{"/", "/index.html", "/?code=abc"} {
		ans := fetch(t, base, "GET", path, "Accept-Encoding: br, gzip")
		m := files(ans)
		if ans.status != 200 || m["arena.wasm"] != testWasm || m["wasm_exec.js"] != testExec ||
			ans.header.Get("Content-Type") != "text/html; charset=utf-8" || ans.header.Get("Cache-Control") != "no-cache" ||
			ans.header.Get("ETag") == "" || ans.header.Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d %v %v", path, ans.status, ans.header, m)
		}
	}
	page := fetch(t, base, "GET", "/")
	if ans := fetch(t, base, "GET", "/", "If-None-Match: "+page.header.Get("ETag")); ans.status != 304 {
		t.Errorf("the page with its own ETag: %d", ans.status)
	}

	// A new build: new names in the page, a new ETag.
	const newWasm = "arena.1111111111111111.wasm"
	locked.set(newWasm, []byte("\x00asm new"))
	locked.set(manifestName, fmt.Appendf(nil, `{"arena.wasm": %q, "wasm_exec.js": %q}`, newWasm, testExec))
	ans := fetch(t, base, "GET", "/", "If-None-Match: "+page.header.Get("ETag"))
	if ans.status != 200 || files(ans)["arena.wasm"] != newWasm || ans.header.Get("ETag") == page.header.Get("ETag") {
		t.Errorf("after a new build: %d %v %v", ans.status, ans.header, files(ans))
	}

	// The plain name: the hashed file, in the encoding accepted, revalidated.
	ans = fetch(t, base, "GET", "/wasm_exec.js", "Accept-Encoding: br")
	if ans.status != 200 || !bytes.Equal(ans.body, fsys[testExec+".br"].Data) || ans.header.Get("Cache-Control") != "no-cache" ||
		ans.header.Get("Content-Encoding") != "br" || ans.header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("/wasm_exec.js: %d %v %q", ans.status, ans.header, ans.body)
	}
	if ans := fetch(t, base, "GET", "/arena.wasm"); ans.status != 200 || string(ans.body) != "\x00asm new" {
		t.Errorf("/arena.wasm after the new build: %d %q", ans.status, ans.body)
	}

	// Other pages and directories: a directory's index.html (after the
	// slash), never a listing.
	if ans := fetch(t, base, "GET", "/sub/"); ans.status != 200 || string(ans.body) != "<p>another page</p>" {
		t.Errorf("/sub/: %d %q", ans.status, ans.body)
	}
	if ans := fetch(t, base, "GET", "/sub"); ans.status != 301 || ans.header.Get("Location") != "/sub/" {
		t.Errorf("/sub: %d %v", ans.status, ans.header)
	}
	if ans := fetch(t, base, "GET", "/empty/"); ans.status != 404 {
		t.Errorf("a directory without index.html: %d %q (no listings)", ans.status, ans.body)
	}
	for _, path := range []string{"/nope.js", "/arena.2222222222222222.wasm", "/" + manifestName + "x", "/../index.html.br"} {
		if ans := fetch(t, base, "GET", path, "Accept-Encoding: br"); ans.status != 404 {
			t.Errorf("GET %s: %d %q", path, ans.status, ans.body)
		}
	}
	if ans := fetch(t, base, "HEAD", "/nope.js"); ans.status != 404 {
		t.Errorf("HEAD /nope.js: %d", ans.status)
	}
	if ans := fetch(t, base, "POST", "/"+testWasm); ans.status != 405 || ans.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", ans.status, ans.header)
	}
}

// TestStaticMissingBuild: without the game's files (a server built
// without make web), the page says so instead of loading for ever, and
// check (which main logs at start) says the same; a build whose
// manifest names a file that is gone, or that cannot be read, likewise.
// Plain names without a manifest (a build by hand) load.
func TestStaticMissingBuild(t *testing.T) {
	page, err := fs.ReadFile(webFS(), indexName)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(filesMarker)) {
		t.Fatalf("the embedded index.html lacks %s, where the server writes the file names", filesMarker)
	}
	for _, c := range []struct {
		name string
		fsys fstest.MapFS
		want string // in the page and the warning; "" when the game loads
	}{
		{"no build", fstest.MapFS{indexName: {Data: page}}, "has no browser game: run make web"},
		{"a file gone", fstest.MapFS{indexName: {Data: page}, testExec: {Data: []byte("js")},
			manifestName: {Data: fmt.Appendf(nil, `{"arena.wasm": %q, "wasm_exec.js": %q}`, testWasm, testExec)}},
			"names \"" + testWasm + "\" for arena.wasm, which is not there: run make web again"},
		{"a bad manifest", fstest.MapFS{indexName: {Data: page}, manifestName: {Data: []byte("{")}},
			"cannot be read"},
		{"a name outside", fstest.MapFS{indexName: {Data: page}, "sub/x.wasm": {Data: []byte("x")}, testExec: {Data: []byte("js")},
			manifestName: {Data: fmt.Appendf(nil, `{"arena.wasm": "sub/x.wasm", "wasm_exec.js": %q}`, testExec)}},
			"which is not there"},
		{"plain names", fstest.MapFS{indexName: {Data: page}, "arena.wasm": {Data: []byte("\x00asm")},
			"wasm_exec.js": {Data: []byte("js")}}, ""},
	} {
		note := newStatic(c.fsys).check()
		ans := fetch(t, startStatic(t, c.fsys), "GET", "/")
		switch {
		case c.want == "" && (note != "" || strings.Contains(string(ans.body), `"missing"`)):
			t.Errorf("%s: the warning %q, the page %q; want none", c.name, note, ans.body)
		case c.want != "" && !strings.Contains(note, c.want):
			t.Errorf("%s: the warning %q, want %q in it", c.name, note, c.want)
		case c.want != "" && (ans.status != 200 || !strings.Contains(string(ans.body), `{"missing":"`) ||
			!strings.Contains(string(ans.body), jsonText(c.want))):
			t.Errorf("%s: the page %d %q does not say %q", c.name, ans.status, ans.body, c.want)
		}
	}
	// Whether the build is in the embedded files is known: a server built
	// without make web says to rebuild it.
	if s := newStatic(webFS()); s.missing != missingBuild || !strings.Contains(s.missing, "built without the browser game: run make web, then rebuild") {
		t.Errorf("the embedded files' warning is %q", s.missing)
	}
	if note := newStatic(fstest.MapFS{}).check(); !strings.Contains(note, "no index.html") {
		t.Errorf("no index.html: the warning %q", note)
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestStaticHashedName(t *testing.T) {
	for name, want := range map[string]bool{
		testWasm:                                 true,
		testExec:                                 true,
		"dir/" + testWasm:                        true,
		"a.b." + strings.Repeat("f", 64) + ".js": true,
		"arena.wasm":                             false,
		"arena.0123456789abcde.wasm":             false, // 15 digits
		"arena.0123456789ABCDEF.wasm":            false, // upper case
		"arena." + strings.Repeat("0", 65) + ".wasm": false,
		".0123456789abcdef.wasm":                     false,
		"arena.0123456789abcdef.":                    false,
		"0123456789abcdef.wasm":                      false,
		testWasm + ".br":                             false, // asked for by its plain name
	} {
		if got := hashedName(name); got != want {
			t.Errorf("hashedName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestStaticWire checks the bytes on the wire: the real build (embedded
// by make web before this test was built) fetched over a TCP connection
// with Accept-Encoding br, and with gzip, is at most a third of
// arena.wasm's size counted at the connection, and decodes to
// arena.wasm's bytes (gzip here, brotli with Debian's brotli command).
func TestStaticWire(t *testing.T) {
	files, missing := newStatic(webFS()).build()
	if missing != "" {
		t.Skipf("no browser build embedded (run make web, then this test; make web-test does): %s", missing)
	}
	for _, suffix := range []string{".br", ".gz"} {
		if _, err := fs.Stat(webFS(), files["arena.wasm"]+suffix); err != nil {
			t.Fatalf("the embedded build has no %s copy of %s (made by hand, or by an older web-build.sh?): run make web again", suffix, files["arena.wasm"])
		}
	}
	raw, err := fs.ReadFile(webFS(), files["arena.wasm"])
	if err != nil {
		t.Fatal(err)
	}
	_, base := start(t, testConfig(newFakeClock())) // the embedded files

	page := fetch(t, base, "GET", "/")
	if !strings.Contains(string(page.body), files["arena.wasm"]) || !strings.Contains(string(page.body), files["wasm_exec.js"]) {
		t.Fatalf("the page does not name the build's files %v", files)
	}
	for _, enc := range []string{"br", "gzip"} {
		var wire atomic.Int64 // bytes read from the connection: the status line, headers and body
		client := &http.Client{Transport: &http.Transport{DisableCompression: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &countingConn{Conn: c, read: &wire}, nil
			}}}
		req, err := http.NewRequestWithContext(testCtx(t, time.Minute), "GET", base+"/"+files["arena.wasm"], nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", enc)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		client.CloseIdleConnections()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != enc || resp.Header.Get("Content-Type") != "application/wasm" ||
			resp.Header.Get("Content-Length") != fmt.Sprint(len(body)) || resp.Header.Get("Cache-Control") != cacheHashed {
			t.Fatalf("%s: %d %v", enc, resp.StatusCode, resp.Header)
		}
		n := wire.Load()
		t.Logf("%s: %d bytes on the wire for %s of %d bytes (%.1f%%)", enc, n, files["arena.wasm"], len(raw), 100*float64(n)/float64(len(raw)))
		if n > int64(len(raw))/3 {
			t.Errorf("%s: %d bytes on the wire, more than a third of %d", enc, n, len(raw))
		}
		var decoded []byte
		switch enc {
		case "gzip":
			z, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if decoded, err = io.ReadAll(z); err != nil {
				t.Fatal(err)
			}
		case "br":
			brotli, err := exec.LookPath("brotli")
			if err != nil {
				t.Logf("no brotli command to decode the br bytes with (make web installs Debian's): %v", err)
				continue
			}
			cmd := exec.Command(brotli, "-d", "-c")
			cmd.Stdin = bytes.NewReader(body)
			if decoded, err = cmd.Output(); err != nil {
				t.Fatalf("brotli -d: %v", err)
			}
		}
		if !bytes.Equal(decoded, raw) {
			t.Errorf("%s: the %d bytes sent decode to %d bytes that are not %s", enc, len(body), len(decoded), files["arena.wasm"])
		}
	}
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}
