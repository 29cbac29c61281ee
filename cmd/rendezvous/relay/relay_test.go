package relay_test

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc"
)

// dialRelayed connects two machines of a match through srv only (ICE
// policy relay), on loopback, with the credentials given.
func dialRelayed(t testing.TB, srv *relay.Server, user, pass string, timeout time.Duration) ([]*rtc.Transport, []error) {
	t.Helper()
	_, turnURL := srv.URLs("")
	return dialRelayedURL(t, turnURL, user, pass, timeout, true)
}

// dialRelayedURL connects two machines of a match through the TURN
// server at url only; loopback is rtc.Config.Loopback.
func dialRelayedURL(t testing.TB, url, user, pass string, timeout time.Duration, loopback bool) ([]*rtc.Transport, []error) {
	t.Helper()
	servers := []rtc.ICEServer{{URLs: []string{url}, Username: user, Credential: pass}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sigs := rtc.MemorySignalers(2)
	trs := make([]*rtc.Transport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for m := range 2 {
		wg.Go(func() {
			trs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: m, Machines: 2, ICEServers: servers, Relay: true, Loopback: loopback}, sigs[m])
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, tr := range trs {
			if tr != nil {
				tr.Close()
			}
		}
	})
	return trs, errs
}

// listen starts a relay on loopback and stops it with the test.
func listen(t testing.TB, c relay.Config) *relay.Server {
	t.Helper()
	srv, err := relay.Listen(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// receive waits for want datagrams on tr, up to a deadline.
func receive(t testing.TB, tr *rtc.Transport, want int) {
	t.Helper()
	buf := make([]byte, rtc.MaxDatagram)
	deadline := time.After(10 * time.Second)
	for n := 0; n < want; {
		if _, _, ok := tr.Receive(buf); ok {
			n++
			continue
		}
		select {
		case <-tr.Arrived():
		case <-deadline:
			t.Fatalf("received %d of %d datagrams", n, want)
		}
	}
}

// TestRelay: with rtc's Relay set every connection goes through the TURN
// relay, whose socket carries the datagrams (and more: the relay adds a
// header and a second hop).
func TestRelay(t *testing.T) {
	srv := listen(t, relay.Config{})
	user, pass, err := srv.Credentials(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	trs, errs := dialRelayed(t, srv, user, pass, 20*time.Second)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	before := srv.Stats()
	payload := bytes.Repeat([]byte{7}, 200)
	for range 50 {
		if err := trs[0].Send(0, payload); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, trs[1], 50)
	after := srv.Stats()
	if r := trs[0].Route(0); r != "relay-relay" {
		t.Errorf("route %q, want relay-relay", r)
	}
	if in := after.BytesIn - before.BytesIn; in < 50*200 {
		t.Errorf("the relay read %d bytes for 50 datagrams of 200", in)
	}
}

// TestRelayOverTCP: two machines whose only ICE server is the relay over
// TCP connect relay-relay through it (pion's ICE dials TCP). TLS is
// tested with pion/turn's client only: pion's ICE checks the certificate
// against the system's roots, and rtc has no option to skip that.
func TestRelayOverTCP(t *testing.T) {
	srv := listen(t, relay.Config{ListenTCP: "127.0.0.1:0"})
	user, pass, err := srv.Credentials(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	urls := srv.TURNURLs("")
	if len(urls) != 2 || !strings.HasSuffix(urls[1], "?transport=tcp") {
		t.Fatalf("TURN URLs %q", urls)
	}
	trs, errs := dialRelayedURL(t, urls[1], user, pass, 20*time.Second, true)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := trs[0].Send(0, []byte("over TCP")); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, trs[1], 20)
	if r := trs[0].Route(0); r != "relay-relay" {
		t.Errorf("route %q, want relay-relay", r)
	}
	if st := srv.Stats(); st.ConnectionsAccepted < 2 || st.AllocationsCreated < 2 {
		t.Errorf("stats %+v: not over TCP", st)
	}
}

// TestRelayOnAPrivateAddress: a relay on a loopback (or private) address,
// as a developer's own rendezvous or a LAN's: two machines that accept
// no loopback candidates (rtc's default) still take each other's relayed
// candidates, which are at the relay's address they use themselves.
func TestRelayOnAPrivateAddress(t *testing.T) {
	srv := listen(t, relay.Config{})
	user, pass, err := srv.Credentials(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, turnURL := srv.URLs("")
	trs, errs := dialRelayedURL(t, turnURL, user, pass, 20*time.Second, false)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := trs[0].Send(0, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	receive(t, trs[1], 1)
	if st := trs[1].Stats(); st.CandidatesRefused != 0 {
		t.Errorf("%d relayed candidates refused", st.CandidatesRefused)
	}
}

// TestRelayRefusesWrongCredentials: a relay-only machine whose
// credentials are wrong cannot connect, and Dial says which machine it
// could not reach.
func TestRelayRefusesWrongCredentials(t *testing.T) {
	srv := listen(t, relay.Config{})
	user, _, _ := srv.Credentials(time.Hour)
	_, errs := dialRelayed(t, srv, user, "wrong", 3*time.Second)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "machines [1] not connected") {
		t.Fatalf("Dial = %v, want machine 1 not connected", errs[0])
	}
}

// BenchmarkRoundTripRelay measures a datagram's round trip between two
// machines through the relay on loopback (ns/op is one round trip).
func BenchmarkRoundTripRelay(b *testing.B) {
	srv := listen(b, relay.Config{})
	user, pass, _ := srv.Credentials(time.Hour)
	trs, errs := dialRelayed(b, srv, user, pass, 20*time.Second)
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 100)
	buf := make([]byte, rtc.MaxDatagram)
	wait := func(tr *rtc.Transport) {
		for {
			if _, _, ok := tr.Receive(buf); ok {
				return
			}
		}
	}
	rtts := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		trs[0].Send(0, msg)
		wait(trs[1])
		trs[1].Send(0, msg)
		wait(trs[0])
		rtts = append(rtts, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds()), "p99-µs")
}
