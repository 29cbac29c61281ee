package main

import (
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rendezvous.conf")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type testFlags struct {
	fl                 *flag.FlagSet
	http, secretFile   *string
	maxMatches, bursts *int
	debug              *bool
}

func newTestFlags() testFlags {
	fl := flag.NewFlagSet("rendezvous", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	return testFlags{
		fl:         fl,
		http:       fl.String("http", ":8080", ""),
		secretFile: fl.String("turn-secret-file", "", ""),
		maxMatches: fl.Int("max-matches", 10000, ""),
		bursts:     fl.Int("burst", 60, ""),
		debug:      fl.Bool("debug", false, ""),
	}
}

// TestSettingsOrder: the command line wins over the environment, which
// wins over the config file, which wins over the defaults.
func TestSettingsOrder(t *testing.T) {
	f := newTestFlags()
	conf := writeFile(t, "# the server's settings\n\nhttp = :9000\nmax-matches 9\n-debug=true\nturn-secret-file /etc/rendezvous/turn secret\n")
	if err := f.fl.Parse([]string{"-http", ":7000"}); err != nil {
		t.Fatal(err)
	}
	err := applySettings(f.fl, conf, env(map[string]string{"RENDEZVOUS_MAX_MATCHES": "7", "RENDEZVOUS_HTTP": ":8000"}))
	if err != nil {
		t.Fatal(err)
	}
	if *f.http != ":7000" || *f.maxMatches != 7 || !*f.debug || *f.secretFile != "/etc/rendezvous/turn secret" || *f.bursts != 60 {
		t.Fatalf("http %q max-matches %d debug %v turn-secret-file %q burst %d", *f.http, *f.maxMatches, *f.debug, *f.secretFile, *f.bursts)
	}
}

// TestSettingsFileFromEnvironment: RENDEZVOUS_CONFIG names the file when
// -config does not.
func TestSettingsFileFromEnvironment(t *testing.T) {
	f := newTestFlags()
	conf := writeFile(t, "burst 3\n")
	if err := applySettings(f.fl, "", env(map[string]string{"RENDEZVOUS_CONFIG": conf})); err != nil {
		t.Fatal(err)
	}
	if *f.bursts != 3 {
		t.Fatalf("burst %d, want 3", *f.bursts)
	}
}

// TestSettingsErrors: each mistake is refused with where it is.
func TestSettingsErrors(t *testing.T) {
	for _, c := range []struct {
		file string
		env  map[string]string
		want string
	}{
		{file: "burst 3\nmax-matchs 5\n", want: `rendezvous.conf:2: no setting named "max-matchs"`},
		{file: "burst 3\n\nburst 4\n", want: "rendezvous.conf:3: burst is already set on line 1"},
		{file: "max-matches lots\n", want: "rendezvous.conf:1: max-matches: "},
		{file: "config other.conf\n", want: `no setting named "config"`},
		{env: map[string]string{"RENDEZVOUS_BURST": "x"}, want: "environment RENDEZVOUS_BURST: "},
		{env: map[string]string{"RENDEZVOUS_CONFIG": "/no/such/file"}, want: "config file: open /no/such/file"},
	} {
		f := newTestFlags()
		path := ""
		if c.file != "" {
			path = writeFile(t, c.file)
		}
		err := applySettings(f.fl, path, env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("file %q env %v: %v, want %q", c.file, c.env, err, c.want)
		}
	}
}

// TestRunSettings: -h and -version end without error and serve nothing;
// a config file's and the environment's values reach the server's checks.
func TestRunSettings(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"-version"}} {
		if err := run(args, noEnv); err != nil {
			t.Errorf("run %q: %v", args, err)
		}
	}
	conf := writeFile(t, "turn\nmax-matches 0\n")
	if err := run([]string{"-config", conf}, noEnv); err == nil || !strings.Contains(err.Error(), "match cap") {
		t.Errorf("a config file's max-matches 0: %v", err)
	}
	if err := run(nil, env(map[string]string{"RENDEZVOUS_TURN": "", "RENDEZVOUS_MAX_QUEUED": "0"})); err == nil || !strings.Contains(err.Error(), "queued") {
		t.Errorf("RENDEZVOUS_MAX_QUEUED=0: %v", err)
	}
}

func TestRelayUnreachable(t *testing.T) {
	every := &net.UDPAddr{IP: net.IPv4zero, Port: 3478}
	local := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	for _, c := range []struct {
		addr   net.Addr
		public string
		want   bool
	}{
		{every, "127.0.0.1", true}, // the defaults: warned
		{every, "127.0.0.2", true},
		{every, "203.0.113.7", false},
		{local, "127.0.0.1", false}, // on purpose: a machine's own relay
		{every, "junk", false},
	} {
		if got := relayUnreachable(c.addr, c.public); got != c.want {
			t.Errorf("%s advertising %s: %v, want %v", c.addr, c.public, got, c.want)
		}
	}
}
