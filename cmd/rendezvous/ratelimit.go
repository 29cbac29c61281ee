package main

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ipLimiter is a token bucket per client IP. It tracks at most maxIPs
// addresses; while that many are tracked, new ones share one overflow
// bucket, so its memory is bounded whatever the number of addresses.
type ipLimiter struct {
	limit  rate.Limit
	burst  int
	maxIPs int
	now    func() time.Time

	mu       sync.Mutex
	ips      map[string]*rate.Limiter
	overflow *rate.Limiter
}

func newIPLimiter(perSecond float64, burst, maxIPs int, now func() time.Time) *ipLimiter {
	return &ipLimiter{
		limit:    rate.Limit(perSecond),
		burst:    burst,
		maxIPs:   maxIPs,
		now:      now,
		ips:      make(map[string]*rate.Limiter),
		overflow: rate.NewLimiter(rate.Limit(perSecond), burst),
	}
}

// allow takes a token from ip's bucket. When there is none it returns
// false and how long until there is.
func (l *ipLimiter) allow(ip string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim := l.ips[ip]
	if lim == nil {
		if len(l.ips) >= l.maxIPs {
			l.sweepLocked(now)
		}
		if len(l.ips) >= l.maxIPs {
			lim = l.overflow
		} else {
			lim = rate.NewLimiter(l.limit, l.burst)
			l.ips[ip] = lim
		}
	}
	if lim.AllowN(now, 1) {
		return true, 0
	}
	wait := time.Second
	if l.limit > 0 {
		// The time until a whole token is back.
		missing := 1 - lim.TokensAt(now)
		wait = time.Duration(math.Ceil(missing / float64(l.limit) * float64(time.Second)))
	}
	return false, wait
}

// sweep forgets the addresses whose buckets are full again: they are as
// if never seen.
func (l *ipLimiter) sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(l.now())
}

func (l *ipLimiter) sweepLocked(now time.Time) {
	for ip, lim := range l.ips {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.ips, ip)
		}
	}
}

// tracked is the number of addresses with a bucket of their own.
func (l *ipLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ips)
}
