package netplay

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseQuery(t *testing.T) {
	def := Query{Seats: 2, Humans: 1, Timeout: 5 * time.Minute}
	for _, c := range []struct {
		raw  string
		want Query
	}{
		{"", def},
		{"?", def},
		{"?code=k7qx2m", Query{Code: "K7QX2M", Seats: 2, Humans: 1, Timeout: 5 * time.Minute}},
		{"?code=k7qx2-mpl4z", Query{Code: "K7QX2MPL4Z", Seats: 2, Humans: 1, Timeout: 5 * time.Minute}}, // as a player groups it
		{"code=%20AB12%20&frames=1200&humans=0", Query{Code: "AB12", Seats: 2, Frames: 1200, Timeout: 5 * time.Minute}},
		{"?seats=8&relay=1&mute=true&overlay", Query{Seats: 8, Humans: 1, Relay: true, Mute: true, Overlay: true, Timeout: 5 * time.Minute}},
		{"?relay=0&mute=off&timeout=90s", Query{Seats: 2, Humans: 1, Timeout: 90 * time.Second}},
		{"?code=&frames=0&utm_source=x", def},                                                       // empty code: create; unknown keys ignored
		{"?frames=600&frames=7", Query{Seats: 2, Humans: 1, Frames: 600, Timeout: 5 * time.Minute}}, // the first of a repeated key
		{"?round=90s&target=3", Query{Seats: 2, Humans: 1, Timeout: 5 * time.Minute, Round: 90 * time.Second, Target: 3}},
	} {
		got, err := ParseQuery(c.raw)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", c.raw, err)
			continue
		}
		// The rules' defaults, and which settings the URL gave.
		if c.want.Round == 0 {
			c.want.Round = time.Minute
		}
		if c.want.Target == 0 {
			c.want.Target = 10
		}
		c.want.Given = Given{Frames: strings.Contains(c.raw, "frames="), Round: strings.Contains(c.raw, "round="), Target: strings.Contains(c.raw, "target=")}
		if got != c.want {
			t.Errorf("ParseQuery(%q) = %+v, want %+v", c.raw, got, c.want)
		}
	}
}

func TestParseQueryErrors(t *testing.T) {
	for _, raw := range []string{
		"?code=AB_12", "?code=" + strings.Repeat("A", 17), "?code=%zz",
		"?frames=-1", "?frames=x", "?round=-1s", "?round=x", "?target=256", "?frames=1e3", "?frames=99999999999",
		"?humans=2", "?humans=-1", "?seats=1", "?seats=9", "?seats=",
		"?relay=maybe", "?mute=2", "?timeout=0s", "?timeout=soon",
	} {
		if q, err := ParseQuery(raw); err == nil {
			t.Errorf("ParseQuery(%q) = %+v, want an error", raw, q)
		}
	}
}

func TestLinks(t *testing.T) {
	if got, want := Share("K7QX2M", 1200), "?code=K7QX2M&frames=1200"; got != want {
		t.Errorf("Share = %q, want %q", got, want)
	}
	if got, want := Share("K7QX2M", 0), "?code=K7QX2M"; got != want {
		t.Errorf("Share endless = %q, want %q", got, want)
	}
	w := WithCode("?frames=600&humans=0&code=", "K7QX2M")
	v, err := url.ParseQuery(strings.TrimPrefix(w, "?"))
	if err != nil || v.Get("code") != "K7QX2M" || v.Get("frames") != "600" || v.Get("humans") != "0" {
		t.Errorf("WithCode = %q", w)
	}
	// What a creator shares parses back to the same match and length.
	q, err := ParseQuery(Share("K7QX2M", 1200))
	if err != nil || q.Code != "K7QX2M" || q.Frames != 1200 {
		t.Errorf("the shared link parses to %+v, %v", q, err)
	}
}
