package playtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rewindgg/rewind/cmd/arena/internal/lobby"
)

// TestErrors runs the built arena in each situation that used to end in
// a panic, ALSA's noise or a silent five-minute wait, and checks what a
// person now sees: the lines on stderr, the announcement of every wait
// on stdout, and the exit status. None may panic. Most situations need
// an X server (the arena refuses to start without one, which is itself a
// case): make play-test runs it under Xvfb.
func TestErrors(t *testing.T) {
	if os.Getenv("ARENA_PLAY_TEST") != "1" || os.Getenv("DISPLAY") == "" {
		t.Skip("needs an X server: run make play-test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "arena")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	noCard := filepath.Join(t.TempDir(), "asound.conf")
	if err := os.WriteFile(noCard, []byte("pcm.!default { type hw card 77 }\nctl.!default { type hw card 77 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unused := unusedUDPAddr(t)
	host := settingsHost(ctx, t)
	waiting := lobbyServer(t, false)
	full := lobbyServer(t, true)

	for _, c := range []struct {
		name   string
		args   []string
		env    []string // added to (or, with an empty value, removed from) the environment
		status int
		stderr string // the whole of stderr, if exact; else a substring
		exact  bool
		// stderrRE, if not "", is a pattern stderr must match (instead of
		// stderr).
		stderrRE string
		stdout   string // a substring of stdout ("" for any)
	}{
		{name: "no display", args: []string{"-mute"}, env: []string{"DISPLAY="}, status: 1, exact: true,
			stderr: "arena needs a display: set DISPLAY (or run it under Xvfb: xvfb-run arena ...)\n"},
		{name: "no X server at DISPLAY", args: []string{"-mute"}, env: []string{"DISPLAY=:987"}, status: 1, exact: true,
			stderr: "arena needs a display: DISPLAY is :987, but no X server listens there (is it running? or run under Xvfb: xvfb-run arena ...)\n"},
		{name: "profile typo", args: []string{"-host", ":0", "-profile", "wfi"}, status: 2, exact: true,
			stderr: `arena: -profile "wfi": no such profile: want lan, wifi, continental, intercontinental, far, hell, or a spec such as latency=80ms,jitter=10ms,loss=2% (arena -h lists the flags)` + "\n"},
		{name: "bad profile spec", args: []string{"-join", "127.0.0.1:7000", "-profile", "latency=80"}, status: 2,
			stderr: `arena: -profile "latency=80": latency: time: missing unit in duration "80": want lan, wifi`},
		{name: "unknown flag", args: []string{"-mutе"}, status: 2, exact: true, // a Cyrillic е
			stderr: "arena: flag provided but not defined: -mutе (arena -h lists the flags)\n"},
		{name: "a value that does not parse", args: []string{"-wait", "2"}, status: 2, exact: true,
			stderr: `arena: invalid value "2" for flag -wait: parse error (arena -h lists the flags)` + "\n"},
		{name: "too many machines", args: []string{"-host", ":0", "-machines", "9"}, status: 2, exact: true,
			stderr: "arena: -machines 9: want 2 to 8 (this machine included) (arena -h lists the flags)\n"},
		{name: "no audio device", args: []string{"-solo", "-frames", "30", "-players", "1"}, env: []string{"ALSA_CONFIG_PATH=" + noCard}, status: 0,
			stderr: "arena: no sound: ALSA cannot open its default device: ", // then ALSA's reason
			stdout: "The match is over after 30 frames (0.5 s). "},
		{name: "nobody hosting", args: []string{"-mute", "-join", unused, "-wait", "1s"}, status: 1, exact: true,
			stderr: fmt.Sprintf("arena: the host at %s did not start a match within 1s (-wait to wait longer)\n", unused),
			stdout: "waiting for the host to answer and its match to fill (up to 1s; -wait to change)"},
		{name: "settings that differ from the host's", args: []string{"-mute", "-join", host, "-frames", "600", "-wait", "5s"}, status: 1, exact: true,
			stderr: "arena: the match settings differ: the host's match lasts 1200 frames (20 s), this machine's 600 frames (10 s) (-frames 1200 against 600); start this machine without them to play the host's\n"},
		{name: "nobody joining", args: []string{"-mute", "-host", "127.0.0.1:0", "-wait", "1s"}, status: 1,
			stderrRE: `^arena: nobody joined the match hosted on 127\.0\.0\.1:\d+ within 1s \(-wait to wait longer\)\n$`,
			stdout:   "waiting for 1 more machine to join (up to 1s; -wait to change)"},
		{name: "nobody joining the rendezvous", args: []string{"-mute", "-rendezvous", waiting, "-loopback", "-wait", "1s"}, status: 1, exact: true,
			stderr: "arena: nobody joined match ABC123 within 1s (-wait to wait longer)\n",
			stdout: "match code ABC123: waiting for 1 more machine to join (up to 1s; -wait to change)"},
		{name: "a match code nobody created", args: []string{"-mute", "-rendezvous", waiting, "-code", "NOPE42", "-wait", "5s"}, status: 1, exact: true,
			stderr: fmt.Sprintf("arena: there is no match NOPE42 at %s: check the code (a match ends when its machines leave or it expires)\n", waiting)},
		{name: "a peer vanishing while connecting", args: []string{"-mute", "-rendezvous", full, "-loopback", "-wait", "5s", "-connect-wait", "2s"}, status: 1, exact: true,
			stderr: "arena: match ABC123: the other machines did not all connect within 2s (-connect-wait to wait longer): rtc: machines [1] not connected\n",
			stdout: "connecting to the others (up to 2s; -connect-wait to change)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, bin, c.args...)
			cmd.Env = environ(c.env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			status := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			out, errOut := stdout.String(), stderr.String()
			t.Logf("%v, exit %d\nstdout:\n%sstderr:\n%s", time.Since(start).Round(time.Millisecond), status, out, errOut)
			if strings.Contains(out+errOut, "panic:") || strings.Contains(out+errOut, "goroutine ") {
				t.Errorf("it panicked")
			}
			if status != c.status {
				t.Errorf("exit status %d, want %d", status, c.status)
			}
			if c.stderrRE != "" && !regexp.MustCompile(c.stderrRE).MatchString(errOut) {
				t.Errorf("stderr %q, want it to match %q", errOut, c.stderrRE)
			}
			if c.exact && errOut != c.stderr || !c.exact && !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr %q, want %s %q", errOut, map[bool]string{true: "exactly", false: "it to contain"}[c.exact], c.stderr)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Errorf("stderr is not one line")
			}
			if c.name == "no audio device" && !strings.HasSuffix(errOut, "; playing muted (-mute skips this check)\n") {
				t.Errorf("stderr does not say the game plays muted")
			}
			if !strings.Contains(out, c.stdout) {
				t.Errorf("stdout %q, want it to contain %q", out, c.stdout)
			}
		})
	}
}

// settingsHost hosts a UDP lobby of 1200 frames, rounds of a minute and
// a target of 10, until ctx ends, and returns its address: every joiner
// that wants other settings is turned away.
func settingsHost(ctx context.Context, t *testing.T) string {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = lobby.Host(ctx, c, lobby.HostOptions{Machines: 2, Humans: 1, Frames: 1200, RoundFrames: 3600, Target: 10})
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c.LocalAddr().String()
}

// environ is the test's environment with env's changes: "K=" removes K.
func environ(env []string) []string {
	var e []string
	drop := map[string]bool{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		drop[k] = true
		if v != "" {
			e = append(e, kv)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			e = append(e, kv)
		}
	}
	return e
}

// unusedUDPAddr is a loopback UDP address nobody listens on (bound for a
// moment, then closed).
func unusedUDPAddr(t *testing.T) string {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	return addr
}

// lobbyServer is a rendezvous that creates match ABC123 of two seats and
// then either never fills it (full false: nobody joins) or says at once
// that it is full while the other machine never signals (full true: a
// peer that vanished). It returns the server's base URL.
func lobbyServer(t *testing.T, full bool) string {
	match := map[string]any{"code": "ABC123", "seats": 2, "taken": 1, "full": false}
	if full {
		match = map[string]any{"code": "ABC123", "seats": 2, "taken": 2, "full": true, "session_id": 7, "secret": []byte("0123456789abcdef0123456789abcdef")}
	}
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	hold := func(r *http.Request) { // a long poll that nothing answers
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case r.Method == http.MethodPost && p == "/v1/matches":
			reply(w, http.StatusCreated, map[string]any{"code": "ABC123", "seat": 0, "token": "t0"})
		case r.Method == http.MethodGet && p == "/v1/matches/ABC123":
			if !full && r.URL.Query().Get("wait") != "" {
				hold(r)
			}
			reply(w, http.StatusOK, match)
		case r.Method == http.MethodPost && p == "/v1/matches/ABC123/signals":
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodGet && p == "/v1/matches/ABC123/signals":
			hold(r)
			reply(w, http.StatusOK, []any{})
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			reply(w, http.StatusNotFound, map[string]string{"error": "no such thing", "code": "not_found"})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
