package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveMain serves s the way main does (listen, newHTTPServer) on a
// loopback port, reporting each connection's state changes on states.
func serveMain(t *testing.T, s *server) (addr string, states <-chan http.ConnState) {
	t.Helper()
	ln, err := listen("127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(s, nil)
	ch := make(chan http.ConnState, 8192) // never full in these tests: a full one would stop Serve
	hs.ConnState = func(_ net.Conn, st http.ConnState) { ch <- st }
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), ch
}

// dialFrom opens a TCP connection to addr from the loopback address local
// (127.0.0.0/8 is all loopback on Linux).
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitState waits for a connection state change of that kind, skipping
// others, failing the test at the deadline.
func waitState(t *testing.T, states <-chan http.ConnState, want http.ConnState, deadline <-chan time.Time) {
	t.Helper()
	for {
		select {
		case st := <-states:
			if st == want {
				return
			}
		case <-deadline:
			t.Fatalf("no connection became %v before the deadline", want)
		}
	}
}

// closedByServer waits until the server closes c (a read ends in EOF or a
// reset), and says how long that took; it fails the test if c gets data
// or stays open past the deadline.
func closedByServer(t *testing.T, c net.Conn, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(within))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if n > 0 || err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("the connection from %s is open after %v (read %d, %v)", c.LocalAddr(), within, n, err)
	}
	return time.Since(start)
}

// The listener holds at most MaxConns connections, and MaxConnsPerIP from
// one address: a connection beyond is closed at once (net/http never sees
// it); one that closes frees its slot. On the old code nothing bounded
// them: the third connection from one address was served like the first.
func TestConnectionCaps(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.MaxConns, cfg.MaxConnsPerIP = 4, 2
	cfg.ReadHeaderTimeout = time.Minute // this test's connections are closed by the test
	s := newTestServer(t, cfg)
	addr, states := serveMain(t, s)
	deadline := time.After(10 * time.Second)
	a := []net.Conn{dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)}
	waitState(t, states, http.StateNew, deadline)
	waitState(t, states, http.StateNew, deadline)
	over := dialFrom(t, "127.0.0.1", addr)
	closedByServer(t, over, 5*time.Second)
	for _, local := range []string{"127.0.0.2", "127.0.0.2"} {
		dialFrom(t, local, addr)
		waitState(t, states, http.StateNew, deadline)
	}
	closedByServer(t, dialFrom(t, "127.0.0.3", addr), 5*time.Second) // the fifth: beyond MaxConns
	select {
	case st := <-states:
		t.Fatalf("a connection beyond the caps reached net/http (%v)", st)
	default:
	}
	// One of 127.0.0.1's closes: it may open another, and it is served.
	a[0].Close()
	waitState(t, states, http.StateClosed, deadline)
	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: rendezvous.test\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a connection after one closed: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A connection that sends no request (or not all of its headers) is closed
// after ReadHeaderTimeout, and its slot freed; headers larger than
// MaxHeaderBytes get 431.
func TestConnectionTimeouts(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.MaxConns, cfg.MaxConnsPerIP = 2, 2
	cfg.ReadHeaderTimeout = 200 * time.Millisecond
	s := newTestServer(t, cfg)
	addr, states := serveMain(t, s)
	deadline := time.After(10 * time.Second)
	opened := time.Now()
	silent := dialFrom(t, "127.0.0.1", addr)
	partial := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(partial, "GET /healthz HTTP/1.1\r\nHost: rende")
	for _, c := range []net.Conn{silent, partial} {
		closedByServer(t, c, 5*time.Second)
	}
	if took := time.Since(opened); took < cfg.ReadHeaderTimeout {
		t.Fatalf("closed after %v, before the header timeout", took)
	}
	for range 2 {
		waitState(t, states, http.StateClosed, deadline)
	}
	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: rendezvous.test\r\nX-Junk: %s\r\n\r\n", strings.Repeat("j", 32<<10))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("32 KiB of headers: %v %v", resp, err)
	}
	resp.Body.Close()
}

// -web serves a directory through os.Root: a symbolic link to a file
// outside it is not found, one to a file inside is served. On the old
// code (os.DirFS) the file outside was served.
func TestWebDirSymlinks(t *testing.T) {
	base := t.TempDir()
	web := filepath.Join(base, "web")
	if err := os.Mkdir(web, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		filepath.Join(base, "secret.txt"): "the server's secret",
		filepath.Join(web, "index.html"):  "<p>game</p>",
	} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"leak.txt":   filepath.Join(base, "secret.txt"),
		"leak2.txt":  "../secret.txt",
		"game.html":  "index.html",
		"outside":    base,
		"start.html": filepath.Join(web, "index.html"), // absolute, but inside
	} {
		if err := os.Symlink(target, filepath.Join(web, link)); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := webDirFS(web)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(newFakeClock())
	cfg.Web = fsys
	_, url := start(t, cfg)
	for path, want := range map[string]int{
		"/":                   200,
		"/game.html":          200,
		"/leak.txt":           404,
		"/leak2.txt":          404,
		"/outside/secret.txt": 404,
		"/start.html":         404, // os.Root follows no absolute link, even to inside
	} {
		ans := call(t, url, "GET", path, "", nil)
		if ans.status != want || strings.Contains(string(ans.body), "secret") {
			t.Errorf("%s: %d %q, want %d", path, ans.status, ans.body, want)
		}
	}
	if _, err := webDirFS(filepath.Join(base, "secret.txt")); err == nil {
		t.Error("-web of a file: no error")
	}
}
