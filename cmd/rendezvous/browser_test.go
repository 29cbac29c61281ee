package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
)

// The game in a browser against the game on this machine, through this
// server: headless Chromium, driven with chromedp, plays the arena (the
// page this server serves, arena.wasm embedded by `make web`) against the
// native arena binary, over WebRTC on loopback. make web-test builds both,
// runs these tests under Xvfb (the native game opens a window) inside a
// network namespace, and sets:
//
//	REWIND_ARENA    the native arena binary; without it these tests skip
//	REWIND_WEB_OUT  where the screenshots go (web-test-out/); a temporary directory by default
//	REWIND_CHROMIUM the browser (default: chromium on the PATH)

// browserFrames is the length of the matches: 20 seconds at 60 Hz.
const browserFrames = 1200

// How long the tests hide the game's tab. The arena gives a stall
// play.DisconnectTimeout (10 s) before a machine disconnects the peer
// that keeps it waiting, and a page whose game loop stood still for
// leaveAfter (8 s) leaves the match itself (cmd/arena's keepAlive).
const (
	hiddenBriefly = 5 * time.Second // the match survives: a stall, then everyone catches up
	hiddenLong    = 9 * time.Second // the page leaves; the native game plays on alone
)

// TestBrowserMatch: the page creates a match (from the game's title
// screen), the native game joins it by its code, and both end the match
// with the same state hash. A screenshot of the page, taken while it
// plays, must show the game.
//
// The page's flow: its title screen (browser-title.png), the page's help
// folded away, where the key 2 creates the match; the code and the link
// to share while it waits (browser-lobby.png); once it plays the route is
// shown, the help still folded (browser.png); at the end the page says
// in sentences how the match ended — the winner by rounds won, the last
// round's scores, the same as the native game says — with the state
// hash on a smaller line (browser-end.png).
func TestBrowserMatch(t *testing.T) {
	m := newBrowserMatch(t)
	code := m.openPage(url.Values{})
	m.capture("browser-lobby.png")
	m.startNative("-code", code)
	m.waitPlaying()
	m.poll(`document.getElementById("help").open === false`, 30*time.Second, "the help to fold away once playing")
	route := m.poll(`window.rewindRoute && !document.getElementById("route").hidden && document.getElementById("route").textContent`,
		time.Minute, "the route shown")
	t.Logf("the page's route: %v (window.rewindRoute %v)", route, m.poll(`window.rewindRoute`, time.Second, "window.rewindRoute"))
	if r, _ := route.(string); !strings.HasPrefix(r, "Route: direct") && !strings.HasPrefix(r, "Route: relayed") {
		t.Errorf("the page shows the route %q: want it direct or relayed", route)
	}
	m.screenshot("browser.png")
	b, _ := m.finish()
	status := m.poll(`document.getElementById("status").textContent`, 10*time.Second, "the page's end sentences").(string)
	detail := m.poll(`!document.getElementById("detail").hidden && document.getElementById("detail").textContent`, 10*time.Second, "the page's detail line").(string)
	t.Logf("the page's end: %q; detail %q", status, detail)
	if want := fmt.Sprintf("The match is over after %d frames (20 s). ", browserFrames); !strings.HasPrefix(status, want) ||
		b.Standings == "" || !strings.HasSuffix(status, b.Standings) || !strings.Contains(status, "Scores: ") {
		t.Errorf("the page ends with %q: want %q then the standings %q", status, want, b.Standings)
	}
	if !strings.Contains(detail, b.Hash) || strings.Contains(status, b.Hash) {
		t.Errorf("the page's end: %q, detail %q: want the state hash %s in the detail only", status, detail, b.Hash)
	}
	m.capture("browser-end.png")
}

// TestBrowserRelayedMatch: the page creates a relayed match (?relayed=1)
// on a rendezvous with a match relay (cmd/relay, announcing itself); the
// native game joins it by its code, and both play through the relay the
// rendezvous placed the match on, one WebRTC connection each (the page
// says so), to the same state hash.
func TestBrowserRelayedMatch(t *testing.T) {
	m := newBrowserMatch(t, func(c *config) { c.RelayToken = testRelayToken })
	startMatchRelay(t, m.srv, m.base)
	code := m.openPage(url.Values{"relayed": {"1"}})
	m.startNative("-code", code)
	m.waitPlaying()
	route := m.poll(`window.rewindRoute && !document.getElementById("route").hidden && document.getElementById("route").textContent`,
		time.Minute, "the route shown")
	t.Logf("the page's route: %v", route)
	if r, _ := route.(string); !strings.HasPrefix(r, "Route: through the match relay (") {
		t.Errorf("the page shows the route %q: want it through the match relay", route)
	}
	m.screenshot("browser-relayed.png")
	m.finish()
	if !strings.Contains(m.output.String(), "match relay ") {
		t.Errorf("the native game did not play through the match relay:\n%s", m.output.String())
	}
}

// capture saves a PNG of the page as it is now.
func (m *browserMatch) capture(name string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(m.tab, 30*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		m.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(m.out, name), b, 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// TestBrowserHiddenTab: the native game creates the match, the page joins
// it by its code, and in the middle of the match the page's tab is hidden
// for hiddenBriefly behind another tab of its window (a real hidden tab:
// document.visibilityState is "hidden" and requestAnimationFrame stops, so
// the game's loop does not run). The match survives: the page keeps
// answering its peer, the native game stalls, and the page catches up when
// its tab is shown again; both end with the same state hash.
func TestBrowserHiddenTab(t *testing.T) {
	m := newBrowserMatch(t)
	code := m.startNativeCreating()
	m.openPage(url.Values{"code": {code}})
	m.waitPlaying()
	m.waitFrame(300)
	m.hide(hiddenBriefly)
	b, n := m.finish()
	if n.Stalls == 0 {
		t.Errorf("the native game never stalled while the browser's tab was hidden for %v", hiddenBriefly)
	}
	t.Logf("stall frames: native %d, browser %d", n.Stalls, b.Stalls)
}

// TestBrowserHiddenTabLeaves: hidden for hiddenLong, longer than the page
// may hold its peers in a stall, the page leaves the match cleanly: the
// native game learns it at once (no disconnect timeout, no suspicion),
// plays on without it and ends the match; the page says why it left.
func TestBrowserHiddenTabLeaves(t *testing.T) {
	m := newBrowserMatch(t)
	code := m.openPage(url.Values{})
	m.startNative("-code", code)
	m.waitPlaying()
	m.waitFrame(300)
	m.hide(hiddenLong)
	raw := m.poll(`window.rewindResultJSON`, 2*time.Minute, "the page's result")
	var b arenaResult
	if err := json.Unmarshal([]byte(raw.(string)), &b); err != nil {
		t.Fatalf("the page's result %q: %v", raw, err)
	}
	if b.Done || !strings.Contains(b.Err, "stood still") {
		t.Errorf("the page's result %+v: want the match left because the game stood still", b)
	}
	n := m.nativeResult()
	if n.Err != "" || !n.Done || n.Frame != browserFrames || !slices.Equal(n.Left, []int{0}) {
		t.Errorf("the native game's result %+v: want done at frame %d with peer 0 gone", n, browserFrames)
	}
}

// arenaResult is the part of the arena's -result JSON (and the page's
// window.rewindResult) these tests read.
type arenaResult struct {
	Frame     int    `json:"frame"`
	Done      bool   `json:"done"`
	Hash      string `json:"hash"`
	Rollbacks int64  `json:"rollbacks"`
	Stalls    int64  `json:"stall_frames"`
	Left      []int  `json:"disconnected"`
	Standings string `json:"standings"`
	Draws     int    `json:"draws"`
	Err       string `json:"error"`
}

// browserMatch is one match between the page in Chromium and the native
// game, through a server of its own.
type browserMatch struct {
	t      *testing.T
	srv    *server
	base   string // the server's URL
	arena  string // the native binary
	out    string // the screenshots' directory
	tab    context.Context
	native *exec.Cmd
	exited chan error
	output *nettest.SyncBuffer // the native game's stdout and stderr
	result string              // its -result file
	logs   *nettest.SyncBuffer // the page's console and the server's log
	code   chan string         // the code the native game prints when it creates the match
}

func newBrowserMatch(t *testing.T, configure ...func(*config)) *browserMatch {
	arena := os.Getenv("REWIND_ARENA")
	if arena == "" {
		t.Skip("REWIND_ARENA is not set: make web-test runs this test (with the native arena and Chromium)")
	}
	if note := newStatic(webFS()).check(); note != "" {
		t.Fatalf("the embedded page cannot load the game (run make web before building this test): %s", note)
	}
	if os.Getenv("DISPLAY") == "" {
		t.Fatal("no DISPLAY: the native arena opens a window (make web-test runs the tests under xvfb-run)")
	}
	browser := os.Getenv("REWIND_CHROMIUM")
	if browser == "" {
		var err error
		if browser, err = exec.LookPath("chromium"); err != nil {
			t.Fatalf("no chromium on the PATH (make web-test installs Debian's): %v", err)
		}
	}
	out := os.Getenv("REWIND_WEB_OUT")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &browserMatch{t: t, arena: arena, out: out, output: &nettest.SyncBuffer{}, logs: &nettest.SyncBuffer{},
		result: filepath.Join(t.TempDir(), "native.json"), code: make(chan string, 1)}

	cfg := defaultConfig()
	cfg.TURNAddr, cfg.PublicIP = "127.0.0.1:0", "127.0.0.1"
	cfg.Logger = slog.New(slog.NewTextHandler(m.logs, nil))
	for _, f := range configure {
		f(&cfg)
	}
	m.srv, m.base = start(t, cfg)

	// Chromium as a person runs it, with what a test needs: headless,
	// software WebGL, loopback ICE candidates without mDNS names, no
	// sound. Not chromedp's default options: they turn off the throttling
	// of background tabs, which TestBrowserHiddenTab is about.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(640, 640),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("allow-loopback-in-peer-connection", true),
		chromedp.Flag("disable-features", "WebRtcHideLocalIpsWithMdns,Translate"),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("disable-sync", true), chromedp.Flag("mute-audio", true))
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx)
	t.Cleanup(tcancel)
	if err := chromedp.Do(tab); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", browser, err)
	}
	go func() {
		for msg, err := range chromedp.Console(tab) {
			if err != nil {
				return
			}
			fmt.Fprintf(m.logs, "console %s: %s\n", msg.Type, msg.Text)
		}
	}()
	m.tab = tab
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("page console and server log:\n%s", m.logs.String())
			t.Logf("native game:\n%s", m.output.String())
		}
	})
	return m
}

// openPage opens the game's page with q (and this test's match options)
// and, when q has no code, waits for the match it creates and returns
// its code.
func (m *browserMatch) openPage(q url.Values) string {
	m.t.Helper()
	q.Set("frames", fmt.Sprint(browserFrames))
	q.Set("humans", "0")
	q.Set("mute", "1")
	q.Set("timeout", "2m")
	if err := chromedp.Do(m.tab, chromedp.Navigate(m.base+"/?"+q.Encode())); err != nil {
		m.t.Fatalf("opening the page: %v", err)
	}
	if q.Has("code") {
		return q.Get("code")
	}
	// Without a code the page opens on the game's title screen: the key 2
	// creates a match code. window.rewindStatus turns "title" once the
	// game's loop has drawn the title screen, and reads the keys from
	// then on; the key is taken when the status leaves "title" (the
	// setup says "lobby").
	m.poll(`window.rewindStatus === "title"`, time.Minute, "the page's title screen (drawn, reading keys)")
	m.poll(`document.getElementById("help").open === false`, 10*time.Second, "the help to fold away on the title screen")
	m.capture("browser-title.png")
	if err := chromedp.Do(m.tab, chromedp.KeyEvent("2")); err != nil {
		m.t.Fatalf("pressing 2 on the title screen: %v", err)
	}
	m.poll(`window.rewindStatus !== "title"`, 10*time.Second, "the key 2 to leave the title screen (the status to turn from \"title\" to \"lobby\")")
	code := m.poll("window.rewindCode", time.Minute, "the page's match code")
	return code.(string)
}

var codeLine = regexp.MustCompile(`match code (\S+):`)

// startNativeCreating starts the native game creating a match and returns
// the code it prints.
func (m *browserMatch) startNativeCreating() string {
	m.t.Helper()
	m.startNative("-machines", "2")
	select {
	case code := <-m.code:
		return code
	case err := <-m.exited:
		m.t.Fatalf("the native game ended before it created a match: %v", err)
	case <-time.After(30 * time.Second):
		m.t.Fatal("the native game printed no match code in 30 s")
	}
	return ""
}

// startNative starts the native game in this test's match with args (its
// -code, or -machines to create the match).
func (m *browserMatch) startNative(args ...string) {
	m.t.Helper()
	args = append([]string{"-rendezvous", m.base, "-loopback", "-humans", "0", "-mute",
		"-frames", fmt.Sprint(browserFrames), "-lobby-timeout", "2m", "-result", m.result,
		"-screenshot", filepath.Join(m.out, m.t.Name()+"-native.png"), "-screenshot-at", "600"}, args...)
	cmd := exec.Command(m.arena, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	cmd.Stderr = m.output
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("starting the native game: %v", err)
	}
	m.native, m.exited = cmd, make(chan error, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(m.output, line)
			if c := codeLine.FindStringSubmatch(line); c != nil {
				select {
				case m.code <- c[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-read
		m.exited <- cmd.Wait()
	}()
	m.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-m.exited
		}
	})
}

// poll waits (at most d) until the page's expression is truthy and
// returns its value; a status that turned into an error ends the wait.
func (m *browserMatch) poll(expr string, d time.Duration, what string) any {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(m.tab, d)
	defer cancel()
	js := fmt.Sprintf(`(String(window.rewindStatus).startsWith("error") ? {error: window.rewindStatus} : (%s) || false)`, expr)
	v, err := chromedp.Run(ctx, chromedp.Poll[any](js, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(d)))
	if err != nil {
		m.t.Fatalf("waiting for %s: %v (status %q, frame %d)", what, err, m.status(), m.frame())
	}
	if e, ok := v.(map[string]any); ok && e["error"] != nil {
		m.t.Fatalf("waiting for %s: the page says %v", what, e["error"])
	}
	return v
}

func (m *browserMatch) status() string {
	ctx, cancel := context.WithTimeout(m.tab, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.rewindStatus)`))
	return s
}

func (m *browserMatch) frame() int {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(m.tab, 5*time.Second)
	defer cancel()
	f, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.rewindFrame || 0`))
	if err != nil {
		m.t.Fatalf("reading the page's frame: %v", err)
	}
	return f
}

func (m *browserMatch) waitPlaying() {
	m.t.Helper()
	m.poll(`window.rewindStatus === "playing" || window.rewindStatus === "done"`, 2*time.Minute, "the page to play")
}

func (m *browserMatch) waitFrame(f int) {
	m.t.Helper()
	m.poll(fmt.Sprintf(`(window.rewindFrame || 0) >= %d`, f), 3*time.Minute, fmt.Sprintf("the page's frame %d", f))
}

// screenshot saves a PNG of the page once it has played 5 seconds, and
// checks that it shows the game: the upper half of the page (the text
// panel is at the bottom) is not one colour.
func (m *browserMatch) screenshot(name string) {
	m.t.Helper()
	m.waitFrame(300)
	ctx, cancel := context.WithTimeout(m.tab, 30*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		m.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(m.out, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		m.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		m.t.Fatalf("screenshot %s: %v", path, err)
	}
	r := img.Bounds()
	colours, dominant, share := palette(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+r.Dy()/2))
	m.t.Logf("screenshot %s: %dx%d; upper half: %d colours, the commonest %06x on %.1f%% of it", path, r.Dx(), r.Dy(), colours, dominant, 100*share)
	if colours < 4 || share > 0.998 {
		m.t.Errorf("screenshot %s looks blank: %d colours, %.2f%% one colour", path, colours, 100*share)
	}
}

// palette counts the colours in rect of img, and the commonest's share.
func palette(img image.Image, rect image.Rectangle) (colours int, commonest uint32, share float64) {
	count := map[uint32]int{}
	n := 0
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			count[r>>8<<16|g>>8<<8|b>>8]++
			n++
		}
	}
	most := 0
	for c, k := range count {
		if k > most || (k == most && c < commonest) {
			commonest, most = c, k
		}
	}
	if n == 0 {
		return 0, 0, 1
	}
	return len(count), commonest, float64(most) / float64(n)
}

// hide puts another tab in front of the game's, in the same window, for d,
// then brings the game's tab back; it checks that the page was hidden and
// that its game loop stood still meanwhile.
func (m *browserMatch) hide(d time.Duration) {
	m.t.Helper()
	game := chromedp.FromContext(m.tab)
	other, cancel := chromedp.NewContext(m.tab, chromedp.WithNewWindow(false))
	defer cancel()
	if err := chromedp.Do(other, chromedp.Navigate("about:blank")); err != nil {
		m.t.Fatalf("opening a tab in front of the game: %v", err)
	}
	vis := m.visibility()
	if vis != "hidden" {
		m.t.Fatalf("the game's tab is %q behind another tab, want hidden", vis)
	}
	before := m.frame()
	hidden := time.Now()
	// The hidden tab is the scenario itself: it lasts d whatever happens.
	select {
	case err := <-m.exited:
		m.t.Fatalf("the native game ended while the tab was hidden: %v", err)
	case <-time.After(d):
	}
	during := m.frame()
	if _, err := cdp.Call(m.tab, game.Browser, target.ActivateTarget, target.ActivateTargetParams{TargetID: game.Target.TargetID}); err != nil {
		m.t.Fatalf("bringing the game's tab back: %v", err)
	}
	if vis := m.visibility(); vis != "visible" {
		m.t.Fatalf("the game's tab is %q after it was brought back", vis)
	}
	m.t.Logf("tab hidden for %v: the page's frame went from %d to %d meanwhile", time.Since(hidden).Round(time.Millisecond), before, during)
	if during-before > 60 {
		m.t.Errorf("the hidden page played %d frames in %v: the tab was not throttled like a hidden one", during-before, d)
	}
}

func (m *browserMatch) visibility() string {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(m.tab, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.visibilityState`))
	if err != nil {
		m.t.Fatalf("reading the page's visibility: %v", err)
	}
	return v
}

// finish waits for both games to end the match and checks that they
// agree: both done, at the same frame, with the same state hash.
func (m *browserMatch) finish() (browser, native arenaResult) {
	m.t.Helper()
	raw := m.poll(`window.rewindResultJSON`, 6*time.Minute, "the page's result")
	if err := json.Unmarshal([]byte(raw.(string)), &browser); err != nil {
		m.t.Fatalf("the page's result %q: %v", raw, err)
	}
	native = m.nativeResult()
	m.t.Logf("browser: %+v", browser)
	m.t.Logf("native:  %+v", native)
	for _, r := range []struct {
		who string
		r   arenaResult
	}{{"browser", browser}, {"native", native}} {
		if r.r.Err != "" || !r.r.Done || r.r.Frame != browserFrames {
			m.t.Errorf("the %s game ended at frame %d (done %v, error %q), want done at frame %d", r.who, r.r.Frame, r.r.Done, r.r.Err, browserFrames)
		}
		if len(r.r.Left) > 0 {
			m.t.Errorf("the %s game saw its peer leave", r.who)
		}
	}
	if browser.Hash == "" || browser.Hash != native.Hash {
		m.t.Errorf("state hashes differ: browser %q, native %q", browser.Hash, native.Hash)
	}
	// The standings, each naming its own people's ships "(you)".
	mine := func(s string) string { return strings.ReplaceAll(s, " (you)", "") }
	if browser.Standings == "" || mine(browser.Standings) != mine(native.Standings) {
		m.t.Errorf("the standings differ: browser %q, native %q", browser.Standings, native.Standings)
	}
	return browser, native
}

// nativeResult waits for the native game to end and reads its result.
func (m *browserMatch) nativeResult() (r arenaResult) {
	m.t.Helper()
	select {
	case err := <-m.exited:
		if err != nil {
			m.t.Errorf("the native game: %v", err)
		}
	case <-time.After(2 * time.Minute):
		m.t.Fatal("the native game did not end within two minutes of the page")
	}
	b, err := os.ReadFile(m.result)
	if err != nil {
		m.t.Fatalf("the native game's result: %v", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		m.t.Fatalf("the native game's result %q: %v", b, err)
	}
	return r
}
