package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// certFile is the TURN relay's TLS certificate and its key (-turn-cert,
// -turn-key), read again on SIGHUP and when either file's modification
// time or size changes, so that a renewed certificate is served without a
// restart (to new connections; open ones keep theirs). A pair that
// cannot be read, or whose key is not the certificate's, keeps the one in
// use.
type certFile struct {
	certPath, keyPath string
	log               *slog.Logger
	onLoad            func() // tests: called after each reload

	cert atomic.Pointer[tls.Certificate]

	mu     sync.Mutex
	stamps [2]fileStamp // of certPath and keyPath when last read
}

// fileStamp is what tells a file changed.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, os.FileMode, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, 0, err
	}
	return fileStamp{info.ModTime(), info.Size()}, info.Mode(), nil
}

// load reads the pair and serves it from now on.
func (f *certFile) load() error {
	var stamps [2]fileStamp
	for i, path := range []string{f.certPath, f.keyPath} {
		st, mode, err := stampOf(path)
		if err != nil {
			return fmt.Errorf("TURN certificate: %w", err)
		}
		if i == 1 && mode.Perm()&0o077 != 0 {
			f.log.Warn("the TURN certificate's key can be read by others than its owner", "path", path,
				"mode", mode.Perm().String())
		}
		stamps[i] = st
	}
	pair, err := tls.LoadX509KeyPair(f.certPath, f.keyPath)
	if err != nil {
		return fmt.Errorf("TURN certificate: %w", err)
	}
	f.cert.Store(&pair) // Leaf is set: LoadX509KeyPair parses it
	f.mu.Lock()
	f.stamps = stamps
	f.mu.Unlock()
	return nil
}

// get is the TLS configuration's GetCertificate.
func (f *certFile) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return f.cert.Load(), nil }

// reload reads the pair again, and logs how it went.
func (f *certFile) reload(why string) {
	if err := f.load(); err != nil {
		f.log.Warn("TURN certificate not reloaded; the previous one stays", "why", why, "err", err)
	} else {
		leaf := f.cert.Load().Leaf
		f.log.Info("TURN certificate reloaded", "why", why, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	}
	if f.onLoad != nil {
		f.onLoad()
	}
}

// changed says whether either file differs from when it was last read.
func (f *certFile) changed() bool {
	f.mu.Lock()
	stamps := f.stamps
	f.mu.Unlock()
	for i, path := range []string{f.certPath, f.keyPath} {
		st, _, err := stampOf(path)
		if err != nil {
			return false // gone for now: the certificate in use stays
		}
		if !st.mod.Equal(stamps[i].mod) || st.size != stamps[i].size {
			return true
		}
	}
	return false
}
