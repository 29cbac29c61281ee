package netplay

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	rdv "github.com/rewindgg/rewind/rtc/lobby"
)

// Query is what the browser build reads from its page's URL, in place of
// the native build's flags:
//
//	?code=XXXXXXXXXX join that match (without it: create one and show its
//	               code); any case, dashes or spaces between groups allowed
//	&seats=2       creating: machines in the match, 2 to 8 (default 2)
//	&frames=1200   end the match after that many frames (default 0: endless);
//	               a joiner plays its creator's, and refuses a different one given here
//	&round=60s     the round timer (0: none; default a minute), as frames and target
//	&target=10     the score target (0: none; default 10), as frames and round
//	&humans=1      0: a bot flies this machine's ship; 1 (default): you do
//	&relay=1       only the TURN relay's candidates (rtc.Config.Relay)
//	&relayed=1     create a relayed match: every machine plays through a match
//	               relay the rendezvous places it on (rtc.DialRelay); a joiner
//	               plays relayed when the match is
//	&mute=1        no sound
//	&overlay=1     start with the netcode's overlay shown (Tab toggles it)
//	&timeout=5m    how long to wait for the others, and then to connect
//
// Booleans are 1, true, yes or on (or the bare name) and 0, false, no or
// off. Parameters it does not know are ignored; a known one with a value
// it does not accept is an error.
type Query struct {
	Code    string
	Seats   int
	Frames  int
	Humans  int
	Relay   bool
	Relayed bool
	Mute    bool
	Overlay bool
	Timeout time.Duration
	// Round and Target are the round timer and the score target (defaults:
	// play.DefaultRules'); Given says which of frames, round and target the
	// URL gave (a joiner refuses a host's that differ).
	Round  time.Duration
	Target int
	Given  Given
}

// Defaults of the parameters a page's URL leaves out.
const (
	DefaultSeats   = 2
	DefaultHumans  = 1
	DefaultTimeout = 5 * time.Minute
)

// maxFrames bounds frames: a day at 60 frames a second.
const maxFrames = 24 * 60 * 60 * 60

// ParseQuery parses a URL's query string, with or without its leading
// "?" (location.search is either "" or "?...").
func ParseQuery(raw string) (Query, error) {
	q := Query{Seats: DefaultSeats, Humans: DefaultHumans, Timeout: DefaultTimeout,
		Round: time.Duration(play.DefaultRules.RoundFrames) * time.Second / 60, Target: play.DefaultRules.Target}
	v, err := url.ParseQuery(strings.TrimPrefix(raw, "?"))
	if err != nil {
		return Query{}, fmt.Errorf("the page's URL: %w", err)
	}
	if v.Has("code") {
		c := rdv.NormalizeCode(v.Get("code"))
		if c != "" && !validCode(c) {
			return Query{}, fmt.Errorf("code %q: want the match's letters and digits", v.Get("code"))
		}
		q.Code = c
	}
	ints := []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"seats", &q.Seats, rdv.MinSeats, rdv.MaxSeats},
		{"frames", &q.Frames, 0, maxFrames},
		{"humans", &q.Humans, 0, 1},
		{"target", &q.Target, 0, 255},
	}
	for _, p := range ints {
		if !v.Has(p.name) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v.Get(p.name)))
		if err != nil || n < p.min || n > p.max {
			return Query{}, fmt.Errorf("%s=%q: want a whole number from %d to %d", p.name, v.Get(p.name), p.min, p.max)
		}
		*p.dst = n
	}
	bools := []struct {
		name string
		dst  *bool
	}{{"relay", &q.Relay}, {"relayed", &q.Relayed}, {"mute", &q.Mute}, {"overlay", &q.Overlay}}
	for _, p := range bools {
		if !v.Has(p.name) {
			continue
		}
		b, ok := parseBool(v.Get(p.name))
		if !ok {
			return Query{}, fmt.Errorf("%s=%q: want 1 or 0", p.name, v.Get(p.name))
		}
		*p.dst = b
	}
	q.Given = Given{Frames: v.Has("frames"), Round: v.Has("round"), Target: v.Has("target")}
	if v.Has("round") {
		d, err := time.ParseDuration(strings.TrimSpace(v.Get("round")))
		if err != nil || d < 0 || d > 24*time.Hour {
			return Query{}, fmt.Errorf("round=%q: want a duration such as 90s or 2m (0: no timer)", v.Get("round"))
		}
		q.Round = d
	}
	if v.Has("timeout") {
		d, err := time.ParseDuration(strings.TrimSpace(v.Get("timeout")))
		if err != nil || d <= 0 {
			return Query{}, fmt.Errorf("timeout=%q: want a positive duration such as 90s or 5m", v.Get("timeout"))
		}
		q.Timeout = d
	}
	return q, nil
}

// validCode reports whether c (normalized) can be a match's code: 1 to 16
// letters and digits (the server's codes are 10 of them; it answers "no
// such match" for the others, but a code that is not even that is a typo
// best reported here).
func validCode(c string) bool {
	if len(c) > 16 {
		return false
	}
	for _, r := range c {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func parseBool(s string) (b, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// WithCode is the query string raw with code=code set (and its other
// parameters kept): the URL a creator's page switches to once it has the
// match's code.
func WithCode(raw, code string) string {
	v, err := url.ParseQuery(strings.TrimPrefix(raw, "?"))
	if err != nil {
		v = url.Values{}
	}
	v.Set("code", code)
	return "?" + v.Encode()
}

// Share is the query string of the link that joins match code: the code,
// and frames (which every machine must be given the same) unless 0. The
// joiner's own choices (humans, relay, mute) are left to the joiner.
func Share(code string, frames int) string {
	v := url.Values{"code": {code}}
	if frames > 0 {
		v.Set("frames", strconv.Itoa(frames))
	}
	return "?" + v.Encode()
}
