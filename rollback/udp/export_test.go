package udp

import "time"

// SetClock makes t read the time from now instead of time.Now, so a test
// can move a guest slot past GuestIdle without waiting for it.
func SetClock(t *Transport, now func() time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = now
}
