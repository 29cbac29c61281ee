package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/relay"
)

const testToken = "s3cret"

func call(t *testing.T, h http.Handler, method, path, token, body string) (int, map[string]string) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var out map[string]string
	if w.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out), w.Body.String())
	}
	return w.Code, out
}

func scrape(t *testing.T, h http.Handler) string {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, w.Code)
	return w.Body.String()
}

// TestAdmin: the admin call opens and deletes matches with the token, and
// answers each refusal with its status and reason, which the metrics
// count.
func TestAdmin(t *testing.T) {
	cfg := defaultServerConfig()
	cfg.MaxMatches = 2
	ts := newTestServer(t, cfg)
	h := admin(ts.server, testToken)
	open := `{"machines": ["10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"]}`
	for _, c := range []struct {
		token, body string
		status      int
		reason      string
	}{
		{"", open, 401, "unauthorized"},
		{"wrong", open, 401, "unauthorized"},
		{testToken, `{"machines": ["10.0.0.1:7000"]}`, 400, "bad_request"},
		{testToken, `{"machines": ["10.0.0.1:7000", "nowhere"]}`, 400, "bad_request"},
		{testToken, `{"machines": ["10.0.0.1:7000", "10.0.0.2:7000"], "more": 1}`, 400, "bad_request"},
		{testToken, `[`, 400, "bad_request"},
		{testToken, open, 201, ""},
		{testToken, `{"machines": ["10.0.0.3:7000", "10.0.0.4:7000"]}`, 409, "address_in_use"},
		{testToken, `{"machines": ["10.0.0.5:7000", "10.0.0.6:7000"]}`, 201, ""},
		{testToken, `{"machines": ["10.0.0.7:7000", "10.0.0.8:7000"]}`, 503, "capacity"},
	} {
		status, out := call(t, h, http.MethodPost, "/matches", c.token, c.body)
		require.Equal(t, c.status, status, "%+v: %v", c, out)
		if c.reason != "" {
			require.Equal(t, c.reason, out["error"], "%+v", c)
			require.NotEmpty(t, out["message"])
		} else {
			require.Regexp(t, `^[0-9a-f]{32}$`, out["id"])
		}
	}
	id := ts.list[0].id
	status, _ := call(t, h, http.MethodDelete, "/matches/"+id, "", "")
	require.Equal(t, 401, status)
	status, _ = call(t, h, http.MethodDelete, "/matches/"+id, testToken, "")
	require.Equal(t, 204, status)
	status, out := call(t, h, http.MethodDelete, "/matches/"+id, testToken, "")
	require.Equal(t, 404, status)
	require.Equal(t, "not_found", out["error"])
	status, _ = call(t, admin(ts.server, ""), http.MethodPost, "/matches", "", open)
	require.Equal(t, 401, status, "no token configured: every call refused")

	text := scrape(t, newMetrics(ts.server, nil).handler())
	for _, line := range []string{
		`relay_matches_open 1`,
		`relay_matches_opened_total 2`,
		`relay_matches_closed_total{reason="deleted"} 1`,
		`relay_matches_refused_total{reason="unauthorized"} 4`,
		`relay_matches_refused_total{reason="bad_request"} 4`,
		`relay_matches_refused_total{reason="address_in_use"} 1`,
		`relay_matches_refused_total{reason="capacity"} 1`,
		`relay_matches_refused_total{reason="address_quota"} 0`,
	} {
		require.Contains(t, text, line+"\n")
	}
}

// TestServe: the command with -admin over real sockets, with and without
// batched I/O: a match opened by the call relays its machines' datagrams
// each tick; the metrics count them; a delete closes it, and a datagram
// from its machines is then from an unknown address.
func TestServe(t *testing.T) {
	for _, batch := range []string{"1", "64"} {
		t.Run("batch="+batch, func(t *testing.T) { testServe(t, batch, net.IPv4(127, 0, 0, 1)) })
	}
	t.Run("ipv6", func(t *testing.T) {
		c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
		if err != nil {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		_ = c.Close()
		testServe(t, "64", net.IPv6loopback)
	})
}

func testServe(t *testing.T, batch string, ip net.IP) {
	const machines = 3
	conns, list := machineConns(t, machines, ip)
	env := func(k string) (string, bool) { return testToken, k == "RELAY_TOKEN" }
	p := startRelay(t, []string{"-listen", net.JoinHostPort(ip.String(), "0"), "-admin", "127.0.0.1:0", "-metrics", "127.0.0.1:0",
		"-batch", batch, "-stats", "0"}, env)
	at := p.at
	body, _ := json.Marshal(openRequest{Machines: list})
	req, _ := http.NewRequest(http.MethodPost, "http://"+at.Admin+"/matches", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var opened openResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&opened))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	relayAddr := net.UDPAddrFromAddrPort(at.UDP)
	for i, c := range conns {
		dgs := map[int][]byte{}
		for peer := range machines - 1 {
			dgs[peer] = fmt.Appendf(nil, "from %d, peer %d", i, peer)
		}
		_, err := c.WriteToUDP(envelope(t, i, machines, dgs), relayAddr)
		require.NoError(t, err)
	}
	buf := make([]byte, relay.MaxDatagram+1)
	for i, c := range conns {
		// Each machine gets one datagram from each peer, in envelopes
		// from the relay (one, or two if its first peer's came before
		// the tick and the rest after).
		got := map[int][][]byte{}
		for n := 0; n < machines-1; {
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			m, from, err := c.ReadFromUDPAddrPort(buf)
			require.NoError(t, err, "machine %d", i)
			require.Equal(t, at.UDP, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
			in := &capture{in: [][]byte{append([]byte(nil), buf[:m]...)}}
			cl, err := relay.NewClient(in, 0, i, machines)
			require.NoError(t, err)
			d := make([]byte, relay.MaxDatagram)
			for {
				k, peer, ok := cl.Receive(d)
				if !ok {
					break
				}
				got[peer] = append(got[peer], append([]byte(nil), d[:k]...))
				n++
			}
		}
		for peer := range machines - 1 {
			slot := peer
			if peer >= i {
				slot++
			}
			self := i
			if self > slot {
				self-- // i's peer index at slot
			}
			require.Equal(t, [][]byte{fmt.Appendf(nil, "from %d, peer %d", slot, self)}, got[peer], "machine %d, peer %d", i, peer)
		}
	}
	resp, err = http.Get("http://" + at.Metrics + "/metrics")
	require.NoError(t, err)
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(text), "relay_matches_open 1\n")
	require.Contains(t, string(text), `relay_datagrams_total{direction="in"} 3`+"\n")
	require.Contains(t, string(text), `relay_forwarded_total{kind="all"} 6`+"\n")
	require.Contains(t, string(text), "relay_tick_seconds_count")

	req, _ = http.NewRequest(http.MethodDelete, "http://"+at.Admin+"/matches/"+opened.ID, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, 0, p.stop())
	logs := p.logs.String()
	require.Contains(t, logs, `msg="match opened" id=`+opened.ID)
	require.Contains(t, logs, `msg="match closed" id=`+opened.ID+" reason=deleted")
	require.Contains(t, logs, "msg=stopped")
}
