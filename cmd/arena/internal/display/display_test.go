//go:build linux || freebsd || netbsd || openbsd || dragonfly

package display

import "testing"

func TestLocalNumber(t *testing.T) {
	for _, c := range []struct {
		d, n string
		ok   bool
	}{
		{":0", "0", true}, {":12.0", "12", true}, {"unix:3", "3", true},
		{"localhost:10.0", "", false}, {":", "", false}, {":x", "", false}, {"", "", false},
	} {
		n, ok := localNumber(c.d)
		if n != c.n || ok != c.ok {
			t.Errorf("localNumber(%q) = %q, %v; want %q, %v", c.d, n, ok, c.n, c.ok)
		}
	}
}

func TestMissing(t *testing.T) {
	t.Setenv("DISPLAY", "")
	if got, want := Missing(), "arena needs a display: set DISPLAY (or run it under Xvfb: xvfb-run arena ...)"; got != want {
		t.Errorf("no DISPLAY: Missing() = %q, want %q", got, want)
	}
	t.Setenv("DISPLAY", ":987") // nobody runs an X server there
	if got, want := Missing(), "arena needs a display: DISPLAY is :987, but no X server listens there"; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("DISPLAY=:987: Missing() = %q, want it to start %q", got, want)
	}
	t.Setenv("DISPLAY", "remote.example:10.0") // not checked: ssh's forwarding
	if got := Missing(); got != "" {
		t.Errorf("remote DISPLAY: Missing() = %q, want \"\"", got)
	}
}
