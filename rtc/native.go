//go:build !js

package rtc

import (
	"io"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
)

// newAPI returns the API Dial makes its connections with, and what the
// transport must close with them (the shared socket's mux, if any).
func newAPI(c Config) (*webrtc.API, io.Closer) {
	var s webrtc.SettingEngine
	s.DetachDataChannels()
	if c.Loopback {
		s.SetIncludeLoopbackCandidate(true)
		s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
		s.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	}
	if c.Relay {
		// ICE waits 2 s for a better pair before it accepts a relayed one;
		// when only relayed ones are allowed there is none to wait for.
		s.SetRelayAcceptanceMinWait(10 * time.Millisecond)
	}
	var mux ice.UDPMux
	if c.Conn != nil {
		mux = ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: c.Conn})
		s.SetICEUDPMux(mux)
	}
	return webrtc.NewAPI(webrtc.WithSettingEngine(s)), mux
}

func route(pc *webrtc.PeerConnection) string {
	sctp := pc.SCTP()
	if sctp == nil || sctp.Transport() == nil || sctp.Transport().ICETransport() == nil {
		return ""
	}
	p, err := sctp.Transport().ICETransport().GetSelectedCandidatePair()
	if err != nil || p == nil || p.Local == nil || p.Remote == nil {
		return ""
	}
	return p.Local.Typ.String() + "-" + p.Remote.Typ.String()
}
