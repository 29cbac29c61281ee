package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/pion/logging"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// turnRelay is the STUN server and TURN relay (package relay, pion/turn)
// and the host its URLs name (its public IP when empty).
type turnRelay struct {
	*relay.Server
	host string
}

// newRelay starts the relay cfg describes (TURNAddr and the TURN fields),
// signing with secrets (a random one when there are none). seat says
// whether a match's seat is still held: every authenticated TURN request
// needs one that is.
func newRelay(cfg *config, secrets []string, seat func(code string, i int) relay.SeatState, log *slog.Logger) (*turnRelay, error) {
	ip, err := netip.ParseAddr(cfg.PublicIP)
	if err != nil || !ip.Is4() {
		return nil, fmt.Errorf("public IP %q is not an IPv4 address", cfg.PublicIP)
	}
	addr := cfg.TURNAddr
	if h, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("TURN address %q: %w", addr, err)
	} else if h == "" {
		addr = "0.0.0.0" + addr
	}
	log = log.With("component", "turn")
	srv, err := relay.Listen(relay.Config{
		Listen:           addr,
		PublicIP:         ip,
		Secrets:          secrets,
		MaxAllocations:   cfg.TURNAllocs,
		MaxPerCredential: cfg.TURNSeatAllocs,
		Bandwidth:        cfg.TURNBandwidth,
		CredentialTTL:    cfg.TURNCredentialTTL,
		AllowPeers:       cfg.TURNAllowPeers,
		Seat:             seat,
		Now:              cfg.Now,
		Log:              log,
		Logger:           slogFactory{log: log},
	})
	if err != nil {
		return nil, err
	}
	return &turnRelay{Server: srv, host: cfg.PublicHost}, nil
}

// iceServers lists the STUN server and the TURN relay, with credentials
// for seat of the match with code, fresh on every call (valid for
// config.TURNCredentialTTL for a new allocation).
func (r *turnRelay) iceServers(code string, seat int) ([]lobby.ICEServer, error) {
	user, pass, err := r.SeatCredentials(code, seat)
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

// slogFactory sends pion's logs to slog, every one at Debug with pion's
// own level beside it (pion_level): its Info lines are many (one per
// allocation, permission and refresh) and its errors include clients'
// mistakes (a wrong credential), which the relay itself logs and counts.
// -debug shows them.
type slogFactory struct{ log *slog.Logger }

func (f slogFactory) NewLogger(scope string) logging.LeveledLogger {
	return slogLogger{f.log.With("scope", scope)}
}

type slogLogger struct{ log *slog.Logger }

func (l slogLogger) at(level, msg string) { l.log.Debug(msg, "pion_level", level) }

func (l slogLogger) Trace(msg string)                  { l.at("trace", msg) }
func (l slogLogger) Tracef(format string, args ...any) { l.at("trace", fmt.Sprintf(format, args...)) }
func (l slogLogger) Debug(msg string)                  { l.at("debug", msg) }
func (l slogLogger) Debugf(format string, args ...any) { l.at("debug", fmt.Sprintf(format, args...)) }
func (l slogLogger) Info(msg string)                   { l.at("info", msg) }
func (l slogLogger) Infof(format string, args ...any)  { l.at("info", fmt.Sprintf(format, args...)) }
func (l slogLogger) Warn(msg string)                   { l.at("warn", msg) }
func (l slogLogger) Warnf(format string, args ...any)  { l.at("warn", fmt.Sprintf(format, args...)) }
func (l slogLogger) Error(msg string)                  { l.at("error", msg) }
func (l slogLogger) Errorf(format string, args ...any) { l.at("error", fmt.Sprintf(format, args...)) }
