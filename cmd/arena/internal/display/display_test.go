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
