//go:build js

package rtc

import "github.com/pion/webrtc/v4"

// newAPI ignores Loopback: the browser decides its own candidates.
func newAPI(Config) *webrtc.API {
	var s webrtc.SettingEngine
	s.DetachDataChannels()
	return webrtc.NewAPI(webrtc.WithSettingEngine(s))
}

func route(*webrtc.PeerConnection) string { return "" }
