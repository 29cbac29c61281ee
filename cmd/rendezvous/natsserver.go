package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// embeddedNATS is the NATS server that runs inside the rendezvous when
// the store is NATS (the default) without -nats: JetStream on, no listener (the
// store connects in process), so that the single binary needs no other
// service. Its JetStream state is in memory (the buckets and the stream
// are made with memory storage), or in -nats-dir's files.
type embeddedNATS struct {
	srv *natsserver.Server
	tmp string // a JetStream directory made for this run, removed at stop
}

func startEmbeddedNATS(cfg *config) (*embeddedNATS, error) {
	e := &embeddedNATS{}
	dir := cfg.NATSDir
	if dir == "" {
		// JetStream wants a directory even when nothing is stored in it.
		tmp, err := os.MkdirTemp("", "rendezvous-nats-")
		if err != nil {
			return nil, err
		}
		dir, e.tmp = tmp, tmp
	}
	// Room for what the store may hold: every match (and its marks) and
	// every queued signal, twice over for the stored overhead.
	limit := 2*int64(cfg.MaxQueuedBytes) + 4*int64(cfg.MaxMatches)*(matchValueMax+256) + 64<<20
	opts := &natsserver.Options{
		ServerName:         "rendezvous",
		DontListen:         true,
		JetStream:          true,
		StoreDir:           dir,
		JetStreamMaxMemory: limit,
		JetStreamMaxStore:  limit,
		NoSigs:             true,
	}
	srv, err := natsserver.NewServer(opts)
	if err != nil {
		e.stop()
		return nil, fmt.Errorf("the embedded NATS server: %w", err)
	}
	e.srv = srv
	srv.SetLoggerV2(natsLog{cfg.Logger}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		e.stop()
		return nil, errors.New("the embedded NATS server did not start")
	}
	return e, nil
}

// stop shuts the server down and removes its directory if it made one.
func (e *embeddedNATS) stop() {
	if e == nil {
		return
	}
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	}
	if e.tmp != "" {
		os.RemoveAll(e.tmp)
	}
}

// natsLog is the embedded server's logger: its warnings and errors go to
// the rendezvous's log, its notices at debug level.
type natsLog struct{ log *slog.Logger }

func (l natsLog) Noticef(format string, v ...any) {
	l.log.Debug("NATS server: " + fmt.Sprintf(format, v...))
}
func (l natsLog) Warnf(format string, v ...any) {
	l.log.Warn("NATS server: " + fmt.Sprintf(format, v...))
}
func (l natsLog) Errorf(format string, v ...any) {
	l.log.Error("NATS server: " + fmt.Sprintf(format, v...))
}
func (l natsLog) Fatalf(format string, v ...any) {
	l.log.Error("NATS server: " + fmt.Sprintf(format, v...))
}
func (l natsLog) Debugf(string, ...any) {}
func (l natsLog) Tracef(string, ...any) {}
