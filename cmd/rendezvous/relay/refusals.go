package relay

import (
	"log/slog"
	"sync"
	"time"
)

// refusalEvery is how often the log says a refusal of one kind: a flood
// of refusals writes a line per kind per refusalEvery, with how many
// were not written since the last.
const refusalEvery = 10 * time.Second

// refusalLog writes refusals to the log, at most one line per kind per
// refusalEvery. The kinds are a fixed few, so it holds a few entries.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	kinds map[string]*refusalKind
}

type refusalKind struct {
	at      time.Time // when its last line was written
	skipped int       // refusals since, not written
}

func newRefusalLog(log *slog.Logger, now func() time.Time) *refusalLog {
	return &refusalLog{log: log, now: now, kinds: make(map[string]*refusalKind)}
}

// note logs a refusal of kind at Warn, unless one of that kind was
// logged less than refusalEvery ago.
func (l *refusalLog) note(kind, msg string, attrs ...any) {
	now := l.now()
	l.mu.Lock()
	k := l.kinds[kind]
	if k == nil {
		k = &refusalKind{}
		l.kinds[kind] = k
	} else if now.Sub(k.at) < refusalEvery && !now.Before(k.at) {
		k.skipped++
		l.mu.Unlock()
		return
	}
	skipped := k.skipped
	k.at, k.skipped = now, 0
	l.mu.Unlock()
	if skipped > 0 {
		attrs = append(attrs, "not_logged_since_last", skipped)
	}
	l.log.Warn(msg, attrs...)
}
