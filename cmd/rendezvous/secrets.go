package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// secretCheck is how often the secret file's modification time is looked
// at.
const secretCheck = 5 * time.Second

// maxSecretFile bounds the secret file's size.
const maxSecretFile = 64 << 10

// secretFile is the file of TURN secrets (-turn-secret-file): one a
// line, the first signs the credentials handed out and every one is
// accepted, so a secret is rotated without a restart (add the new one
// first, remove the old one once the credentials it signed have
// expired). Empty lines and lines starting with # are skipped. It is
// re-read on SIGHUP and when its modification time or size changes; a
// file that cannot be read or has no secret keeps the secrets in use.
type secretFile struct {
	path   string
	log    *slog.Logger
	apply  func([]string) error // the relay's SetSecrets
	onLoad func()               // tests: called after each reload

	mu   sync.Mutex
	mod  time.Time
	size int64
}

// read reads the secrets and remembers the file's modification time.
func (f *secretFile) read() ([]string, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("TURN secret file: %w", err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("TURN secret file: %w", err)
	}
	if info.Size() > maxSecretFile {
		return nil, fmt.Errorf("TURN secret file %s is larger than %d bytes", f.path, maxSecretFile)
	}
	if info.Mode().Perm()&0o077 != 0 {
		f.log.Warn("the TURN secret file can be read by others than its owner", "path", f.path,
			"mode", info.Mode().Perm().String())
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(file); err != nil {
		return nil, fmt.Errorf("TURN secret file: %w", err)
	}
	var secrets []string
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 0, 4096), maxSecretFile)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			secrets = append(secrets, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("TURN secret file: %w", err)
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("TURN secret file %s has no secret", f.path)
	}
	f.mu.Lock()
	f.mod, f.size = info.ModTime(), info.Size()
	f.mu.Unlock()
	return secrets, nil
}

// reload reads the file and hands its secrets to the relay.
func (f *secretFile) reload(why string) {
	secrets, err := f.read()
	if err == nil && f.apply != nil {
		err = f.apply(secrets)
	}
	if err != nil {
		f.log.Warn("TURN secrets not reloaded; the previous ones stay", "why", why, "err", err)
	} else {
		f.log.Info("TURN secrets reloaded", "why", why, "secrets", len(secrets))
	}
	if f.onLoad != nil {
		f.onLoad()
	}
}

// changed says whether the file's modification time or size differs
// from when it was last read.
func (f *secretFile) changed() bool {
	info, err := os.Stat(f.path)
	if err != nil {
		return false // gone for now: the secrets in use stay
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return !info.ModTime().Equal(f.mod) || info.Size() != f.size
}

// watched is a file the server reads again when told (SIGHUP) or when
// it changed: the TURN secrets (secretFile) and certificate (certFile).
type watched interface {
	changed() bool     // the file's time or size is not what was read
	reload(why string) // read it again, keeping what is in use on failure
}

// watch reloads f on every value from hup (SIGHUP) and when it changed,
// looked at every period, until ctx ends.
func watch(ctx context.Context, f watched, hup <-chan os.Signal, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			f.reload("SIGHUP")
		case <-t.C:
			if f.changed() {
				f.reload("modified")
			}
		}
	}
}
