package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// A parked poll is answered on its own connection with Connection: close;
// a poll of the first protocol (no after=, so it takes what it answers)
// whose client has gone takes nothing: the next poll gets the signal.
func TestParkedPolls(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.MaxWait = time.Minute
	s := newTestServer(t, cfg)
	polling := pollEvents(s)
	addr, _ := serveMain(t, s)
	base := "http://" + addr
	cs := fullMatch(t, ctx, base, 2)
	code, tok1 := cs[0].Code(), cs[1].Ticket().Token
	poll := func(query string) net.Conn {
		c := dialFrom(t, "127.0.0.1", addr)
		fmt.Fprintf(c, "GET /v1/matches/%s/signals?%s HTTP/1.1\r\nHost: rendezvous.test\r\nAuthorization: Bearer %s\r\n\r\n", code, query, tok1)
		waitEvent(t, ctx, polling)
		return c
	}

	c := poll("wait=25&after=0")
	if err := cs[0].Send(ctx, 1, lobby.KindOffer, "o1"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	var batch []lobby.Signal
	if err := json.NewDecoder(resp.Body).Decode(&batch); err != nil || resp.StatusCode != 200 || !resp.Close ||
		len(batch) != 1 || batch[0].Data != "o1" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("a parked poll's answer: %d close %v %+v %v", resp.StatusCode, resp.Close, batch, err)
	}
	resp.Body.Close()
	closedByServer(t, c, 5*time.Second)

	call(t, base, "GET", "/v1/matches/"+code+"/signals?after=1", tok1, nil) // acknowledges o1
	gone := poll("wait=25")                                                 // the first protocol: no acknowledgement
	gone.Close()
	if err := cs[0].Send(ctx, 1, lobby.KindCandidate, "c1"); err != nil {
		t.Fatal(err)
	}
	ans := call(t, base, "GET", "/v1/matches/"+code+"/signals", tok1, nil) // after=0 not given: takes all
	if err := json.Unmarshal(ans.body, &batch); err != nil || len(batch) != 1 || batch[0].Data != "c1" {
		t.Fatalf("the poll after one whose client left: %d %s", ans.status, ans.body)
	}
}
