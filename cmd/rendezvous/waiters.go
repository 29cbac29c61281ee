package main

import "sync"

// waiters are the long polls of one instance waiting for a change of a
// match, by its code, for a store whose changes arrive as messages
// (natsStore: one subscription per instance, not one per poll). Each
// code waited on has one channel, closed and replaced when a change is
// reported, and the number of polls that wait on it: the entry goes when
// the last one is released.
type waiters struct {
	mu sync.Mutex
	m  map[string]*waitEntry
}

type waitEntry struct {
	ch chan struct{}
	n  int
}

func newWaiters() *waiters { return &waiters{m: make(map[string]*waitEntry)} }

// watch registers a wait for a change of the match with code.
func (w *waiters) watch(code string) wake {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.m[code]
	if e == nil {
		e = &waitEntry{ch: make(chan struct{})}
		w.m[code] = e
	}
	e.n++
	return wake{C: e.ch, from: w, code: code}
}

func (w *waiters) unwatch(code string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.m[code]; e != nil {
		if e.n--; e.n <= 0 {
			delete(w.m, code)
		}
	}
}

// changed wakes the waits for code.
func (w *waiters) changed(code string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.m[code]; e != nil {
		close(e.ch)
		e.ch = make(chan struct{})
	}
}

// all wakes every wait (after a reconnection: changes may have been missed).
func (w *waiters) all() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.m {
		close(e.ch)
		e.ch = make(chan struct{})
	}
}
