//go:build js

package rtc

import (
	"io"

	"github.com/pion/webrtc/v4"
)

// newAPI ignores Loopback and Conn: the browser decides its own
// candidates and sockets.
func newAPI(Config) (*webrtc.API, io.Closer) {
	var s webrtc.SettingEngine
	s.DetachDataChannels()
	return webrtc.NewAPI(webrtc.WithSettingEngine(s)), nil
}

func route(*webrtc.PeerConnection) string { return "" }
