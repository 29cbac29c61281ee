package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/pion/logging"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// turnRelay is the STUN server and TURN relay (package relay, pion/turn),
// the host its URLs name (its public IP when empty), and its TLS
// certificate's files (nil without TURN over TLS).
type turnRelay struct {
	*relay.Server
	host string
	cert *certFile
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
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("TURN address %q: %w", addr, err)
	} else if host == "" {
		addr = "0.0.0.0" + addr
	}
	log = log.With("component", "turn")
	rc := relay.Config{
		Listen:                addr,
		PublicIP:              ip,
		Secrets:               secrets,
		MaxAllocations:        cfg.TURNAllocs,
		MaxPerCredential:      cfg.TURNSeatAllocs,
		Bandwidth:             cfg.TURNBandwidth,
		CredentialTTL:         cfg.TURNCredentialTTL,
		AllowPeers:            cfg.TURNAllowPeers,
		MaxConnections:        cfg.TURNConns,
		MaxConnectionsPerAddr: cfg.TURNConnsPerIP,
		Seat:                  seat,
		Now:                   cfg.Now,
		Log:                   log,
		Logger:                slogFactory{log: log},
	}
	// TCP: on TURNAddr's host and port unless told (its host empty, on
	// IPv4 and IPv6).
	switch cfg.TURNTCPAddr {
	case "":
		rc.ListenTCP = cfg.TURNAddr
	case "off":
	default:
		rc.ListenTCP = cfg.TURNTCPAddr
	}
	// IPv6: UDP at TURNAddr's port, on every IPv6 address when TURNAddr
	// names every address, else on the public IPv6 address.
	if cfg.PublicIP6 != "" {
		rc.PublicIP6, err = netip.ParseAddr(cfg.PublicIP6)
		if err != nil {
			return nil, fmt.Errorf("public IPv6 address %q: %w", cfg.PublicIP6, err)
		}
		host6 := rc.PublicIP6.String()
		if h, err := netip.ParseAddr(host); host == "" || err == nil && h.IsUnspecified() {
			host6 = "::"
		}
		rc.Listen6 = net.JoinHostPort(host6, port)
	}
	var cert *certFile
	if cfg.TURNTLSAddr != "" {
		cert = &certFile{certPath: cfg.TURNCertFile, keyPath: cfg.TURNKeyFile, log: log}
		if err := cert.load(); err != nil {
			return nil, err
		}
		rc.ListenTLS = cfg.TURNTLSAddr
		rc.TLS = &tls.Config{GetCertificate: cert.get}
		name := cfg.PublicHost
		if name == "" {
			name = cfg.PublicIP
		}
		if err := cert.cert.Load().Leaf.VerifyHostname(name); err != nil {
			log.Warn("the TURN certificate does not name the host the TLS URL names: clients will refuse it; give -public-host the certificate's name",
				"host", name, "err", err)
		}
	}
	if rc.MaxPerCredential == 0 {
		// A machine allocates over each URL it is given, for each peer.
		// With no host name, IPv6 clients get URLs of their own
		// (relay.Server.TURNURLs).
		tcp6 := false
		if h, _, err := net.SplitHostPort(rc.ListenTCP); err == nil {
			a, err := netip.ParseAddr(h)
			tcp6 = h == "" || err == nil && (a.IsUnspecified() || a == rc.PublicIP6)
		}
		six := rc.Listen6 != "" && cfg.PublicHost == ""
		urls := 1
		for _, on := range []bool{rc.ListenTCP != "", rc.ListenTLS != "", six, six && tcp6} {
			if on {
				urls++
			}
		}
		rc.MaxPerCredential = relay.DefaultMaxPerCredential * urls
	}
	srv, err := relay.Listen(rc)
	if err != nil {
		return nil, err
	}
	return &turnRelay{Server: srv, host: cfg.PublicHost, cert: cert}, nil
}

// iceServers lists the STUN server and the TURN relay (its URLs over
// UDP, TCP and TLS, those it listens on), with credentials for seat of
// the match with code, fresh on every call (valid for
// config.TURNCredentialTTL for a new allocation).
func (r *turnRelay) iceServers(code string, seat int) ([]lobby.ICEServer, error) {
	user, pass, err := r.SeatCredentials(code, seat)
	if err != nil {
		return nil, err
	}
	stun, _ := r.URLs(r.host)
	return []lobby.ICEServer{
		{URLs: []string{stun}},
		{URLs: r.TURNURLs(r.host), Username: user, Credential: pass},
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
