package main

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ipLimiter is a token bucket per client address (its addrKey). It tracks
// at most maxIPs addresses; while that many are tracked, new ones share
// one overflow bucket, so its memory is bounded whatever the number of
// addresses. The server has two: one for every request, one for failed
// guesses (joins of codes that do not exist, wrong tokens).
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
	lim := l.bucket(ip, now)
	if lim.AllowN(now, 1) {
		return true, 0
	}
	return false, l.wait(lim, now)
}

// ready reports whether ip's bucket holds a token, without taking it;
// when not, how long until it does. An address never seen has a full
// bucket (and is not tracked for asking).
func (l *ipLimiter) ready(ip string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim := l.ips[ip]
	if lim == nil && len(l.ips) < l.maxIPs {
		return true, 0
	}
	if lim == nil {
		lim = l.overflow
	}
	if lim.TokensAt(now) >= 1 {
		return true, 0
	}
	return false, l.wait(lim, now)
}

// bucket is ip's bucket, made if it has none; the overflow bucket when
// maxIPs others are tracked. The caller holds l.mu.
func (l *ipLimiter) bucket(ip string, now time.Time) *rate.Limiter {
	lim := l.ips[ip]
	if lim != nil {
		return lim
	}
	if len(l.ips) >= l.maxIPs {
		l.sweepLocked(now)
	}
	if len(l.ips) >= l.maxIPs {
		return l.overflow
	}
	lim = rate.NewLimiter(l.limit, l.burst)
	l.ips[ip] = lim
	return lim
}

// wait is the time until lim holds a whole token again.
func (l *ipLimiter) wait(lim *rate.Limiter, now time.Time) time.Duration {
	if l.limit <= 0 {
		return time.Second
	}
	missing := 1 - lim.TokensAt(now)
	return time.Duration(math.Ceil(missing / float64(l.limit) * float64(time.Second)))
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
