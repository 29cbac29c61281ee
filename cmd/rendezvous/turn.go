package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/pion/logging"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// turnCredential is how long the credentials in a Match stay valid.
const turnCredential = time.Hour

// turnRelay is the STUN server and TURN relay (package relay, pion/turn)
// and the host its URLs name.
type turnRelay struct {
	*relay.Server
	host string
}

// newRelay listens on addr (UDP) and relays from publicIP: the address
// the relay's allocations advertise. host names the server in the ICE
// servers' URLs (publicIP when empty). A random secret is made when
// secret is empty. At most maxAllocs allocations exist at once.
func newRelay(addr, publicIP, host, secret string, maxAllocs int, log *slog.Logger) (*turnRelay, error) {
	ip, err := netip.ParseAddr(publicIP)
	if err != nil || !ip.Is4() {
		return nil, fmt.Errorf("public IP %q is not an IPv4 address", publicIP)
	}
	if h, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("TURN address %q: %w", addr, err)
	} else if h == "" {
		addr = "0.0.0.0" + addr
	}
	srv, err := relay.Listen(relay.Config{Listen: addr, PublicIP: ip, Secret: secret, MaxAllocations: maxAllocs,
		Logger: slogFactory{log: log.With("component", "turn")}})
	if err != nil {
		return nil, err
	}
	return &turnRelay{Server: srv, host: host}, nil
}

// iceServers lists the STUN server and the TURN relay, with credentials
// valid for an hour.
func (r *turnRelay) iceServers() ([]lobby.ICEServer, error) {
	user, pass, err := r.Credentials(turnCredential)
	if err != nil {
		return nil, err
	}
	stun, turn := r.URLs(r.host)
	return []lobby.ICEServer{
		{URLs: []string{stun}},
		{URLs: []string{turn}, Username: user, Credential: pass},
	}, nil
}

func (r *turnRelay) addr() net.Addr { return net.UDPAddrFromAddrPort(r.Addr()) }

func (r *turnRelay) allocations() int { return r.Allocations() }

// slogFactory sends pion's logs to slog. Trace goes to Debug.
type slogFactory struct{ log *slog.Logger }

func (f slogFactory) NewLogger(scope string) logging.LeveledLogger {
	return slogLogger{f.log.With("scope", scope)}
}

type slogLogger struct{ log *slog.Logger }

func (l slogLogger) Trace(msg string)                  { l.log.Debug(msg) }
func (l slogLogger) Tracef(format string, args ...any) { l.log.Debug(fmt.Sprintf(format, args...)) }
func (l slogLogger) Debug(msg string)                  { l.log.Debug(msg) }
func (l slogLogger) Debugf(format string, args ...any) { l.log.Debug(fmt.Sprintf(format, args...)) }
func (l slogLogger) Info(msg string)                   { l.log.Info(msg) }
func (l slogLogger) Infof(format string, args ...any)  { l.log.Info(fmt.Sprintf(format, args...)) }
func (l slogLogger) Warn(msg string)                   { l.log.Warn(msg) }
func (l slogLogger) Warnf(format string, args ...any)  { l.log.Warn(fmt.Sprintf(format, args...)) }
func (l slogLogger) Error(msg string)                  { l.log.Error(msg) }
func (l slogLogger) Errorf(format string, args ...any) { l.log.Error(fmt.Sprintf(format, args...)) }
