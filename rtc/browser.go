//go:build js

package rtc

import (
	"io"
	"syscall/js"
	"time"

	"github.com/pion/webrtc/v4"
)

// newAPI ignores Loopback and Conn: the browser decides its own
// candidates and sockets.
func newAPI(Config) (*webrtc.API, io.Closer) {
	var s webrtc.SettingEngine
	s.DetachDataChannels()
	return webrtc.NewAPI(webrtc.WithSettingEngine(s)), nil
}

// routeWait bounds the wait for the browser's statistics.
const routeWait = 2 * time.Second

// route asks the browser's RTCPeerConnection for its statistics
// (getStats) and reads the candidate types of the pair its transport
// selected. It waits for the promise: call it from a goroutine of its
// own, not from a JavaScript callback.
func route(pc *webrtc.PeerConnection) string {
	ch := make(chan string, 1)
	then := js.FuncOf(func(_ js.Value, args []js.Value) any {
		r := ""
		if len(args) > 0 {
			r = selectedRoute(args[0])
		}
		ch <- r
		return nil
	})
	defer then.Release()
	fail := js.FuncOf(func(js.Value, []js.Value) any {
		ch <- ""
		return nil
	})
	defer fail.Release()
	pc.JSValue().Call("getStats").Call("then", then, fail)
	select {
	case r := <-ch:
		return r
	case <-time.After(routeWait):
		return ""
	}
}

// selectedRoute reads an RTCStatsReport: the transport's selected
// candidate pair (or, without a transport entry, a nominated pair that
// succeeded), as "local-remote" candidate types such as "host-host".
func selectedRoute(report js.Value) string {
	pair := ""
	each := js.FuncOf(func(_ js.Value, args []js.Value) any {
		s := args[0]
		switch s.Get("type").String() {
		case "transport":
			if id := s.Get("selectedCandidatePairId"); id.Type() == js.TypeString {
				pair = id.String()
			}
		case "candidate-pair":
			if pair == "" && s.Get("nominated").Truthy() && s.Get("state").String() == "succeeded" {
				pair = s.Get("id").String()
			}
		}
		return nil
	})
	defer each.Release()
	report.Call("forEach", each)
	if pair == "" {
		return ""
	}
	p := report.Call("get", pair)
	if !p.Truthy() {
		return ""
	}
	typ := func(id js.Value) string {
		if c := report.Call("get", id); c.Truthy() && c.Get("candidateType").Type() == js.TypeString {
			return c.Get("candidateType").String()
		}
		return ""
	}
	local, remote := typ(p.Get("localCandidateId")), typ(p.Get("remoteCandidateId"))
	if local == "" || remote == "" {
		return ""
	}
	return local + "-" + remote
}
