//go:build !js

package rtc

import (
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
)

func newAPI(c Config) *webrtc.API {
	var s webrtc.SettingEngine
	s.DetachDataChannels()
	if c.Loopback {
		s.SetIncludeLoopbackCandidate(true)
		s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
		s.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	}
	return webrtc.NewAPI(webrtc.WithSettingEngine(s))
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
