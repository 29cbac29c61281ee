package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rtc"
)

// adminSignaler is one seat's rtc.Signaler straight to the relay's admin
// call, as the rendezvous carries a relayed lobby's signals: what the seat
// sends the relay (party machines) is posted, and the relay's answers come
// back from it.
type adminSignaler struct {
	admin, id, token string
	seat, machines   int
	in               chan seatSignal
}

func (a *adminSignaler) Send(ctx context.Context, to int, kind, data string) error {
	if to != a.machines {
		return errors.New("a relayed seat signals the relay only")
	}
	code, out, err := postSignal(ctx, a.admin, a.id, a.token, seatSignal{Seat: a.seat, Kind: kind, Data: data})
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return errors.New(http.StatusText(code))
	}
	for _, s := range out {
		a.in <- s
	}
	return nil
}

func (a *adminSignaler) Receive(ctx context.Context) (int, string, string, error) {
	select {
	case s := <-a.in:
		return a.machines, s.Kind, s.Data, nil
	case <-ctx.Done():
		return 0, "", "", ctx.Err()
	}
}

// postSignal makes the admin call POST /matches/{id}/signals.
func postSignal(ctx context.Context, admin, id, token string, sig seatSignal) (int, []seatSignal, error) {
	body, _ := json.Marshal(sig)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+admin+"/matches/"+id+"/signals", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out signalResponse
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return 0, nil, err
		}
	}
	return resp.StatusCode, out.Signals, nil
}

// openWebRTC opens a match of seats WebRTC seats by the admin call.
func openWebRTC(t *testing.T, admin string, seats int) string {
	body, _ := json.Marshal(openRequest{Seats: seats})
	req, _ := http.NewRequest(http.MethodPost, "http://"+admin+"/matches", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var opened openResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&opened))
	return opened.ID
}

// TestWebRTCSeats: three native machines, each with one peer connection
// to the relay (rtc.DialRelay, signaled through the admin call), play a
// match that verifies; each machine's one route is host-host to the
// relay's -webrtc socket. A seat's second offer, a signal with a wrong
// token or for no match, and a candidate past the bound are refused.
func TestWebRTCSeats(t *testing.T) {
	const machines = 3
	env := func(k string) (string, bool) { return testToken, k == "RELAY_TOKEN" }
	p := startRelay(t, []string{"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-webrtc", "127.0.0.1:0",
		"-webrtc-loopback", "-stats", "0"}, env)
	id := openWebRTC(t, p.at.Admin, machines)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	rtcs := make([]*rtc.Transport, machines)
	errs := make([]error, machines)
	var wg sync.WaitGroup
	for i := range machines {
		sig := &adminSignaler{admin: p.at.Admin, id: id, token: testToken, seat: i, machines: machines, in: make(chan seatSignal, 64)}
		wg.Go(func() {
			rtcs[i], errs[i] = rtc.DialRelay(ctx, rtc.Config{Machine: i, Machines: machines, Loopback: true}, sig)
		})
	}
	wg.Wait()
	for _, tr := range rtcs {
		if tr != nil {
			defer tr.Close()
		}
	}
	require.NoError(t, errors.Join(errs...))
	trs := make([]rollback.Transport, machines)
	for i, tr := range rtcs {
		require.Equal(t, "host-host", tr.Route(0))
		cl, err := relay.NewClient(tr, 0, i, machines)
		require.NoError(t, err)
		trs[i] = cl
	}

	code, _, err := postSignal(ctx, p.at.Admin, id, testToken, seatSignal{Seat: 0, Kind: kindOffer, Data: "v=0"})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, code, "a seat's second offer")
	code, _, err = postSignal(ctx, p.at.Admin, id, "wrong", seatSignal{Seat: 1, Kind: kindCandidate, Data: "{}"})
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, code, "a stranger's signal")
	code, _, err = postSignal(ctx, p.at.Admin, "0123", testToken, seatSignal{Seat: 1, Kind: kindCandidate, Data: "{}"})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "a signal for no match")
	code, _, err = postSignal(ctx, p.at.Admin, id, testToken, seatSignal{Seat: machines, Kind: kindOffer, Data: "v=0"})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code, "a seat the match does not have")

	r := match.RunLive(match.Config{Players: machines, Frames: 240, Seed: 5, Relay: true}, match.UDPOptions{}, trs)
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	require.True(t, r.Verified, r.Desync)
	for i, tr := range trs {
		st := tr.(*relay.Client).Stats()
		require.Positive(t, st.EnvelopesIn, "machine %d", i)
		require.Zero(t, st.Dropped, "machine %d", i)
	}
	require.Equal(t, 0, p.stop())
	require.Contains(t, p.logs.String(), "webrtc=true")
}

// TestWebRTCSeatQuota: the per-address quota holds for WebRTC seats: with
// -max-per-ip 2, the third seat from loopback is refused once its channel
// opens (its connection closed, the refusal counted and logged), and the
// two others stay counted while the match lives.
func TestWebRTCSeatQuota(t *testing.T) {
	const machines = 3
	env := func(k string) (string, bool) { return testToken, k == "RELAY_TOKEN" }
	p := startRelay(t, []string{"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-webrtc", "127.0.0.1:0",
		"-webrtc-loopback", "-metrics", "127.0.0.1:0", "-max-per-ip", "2", "-stats", "0"}, env)
	id := openWebRTC(t, p.at.Admin, machines)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range machines {
		sig := &adminSignaler{admin: p.at.Admin, id: id, token: testToken, seat: i, machines: machines, in: make(chan seatSignal, 64)}
		wg.Go(func() {
			tr, err := rtc.DialRelay(ctx, rtc.Config{Machine: i, Machines: machines, Loopback: true}, sig)
			if err == nil {
				t.Cleanup(func() { _ = tr.Close() })
			}
		})
	}
	// The refused seat's Dial may not return (its channel closed before
	// it opened there): the dials end with ctx, once the refusal is seen.
	defer wg.Wait()
	defer cancel()
	// The refusal is counted, then logged: once the line is there, so is
	// the count.
	require.True(t, p.logs.waitFor(`msg="seat refused"`, 5*time.Second), "no seat refused")
	resp, err := http.Get("http://" + p.at.Metrics + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), `relay_matches_refused_total{reason="address_quota"} 1`+"\n")
}
