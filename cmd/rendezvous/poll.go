package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// Parked long polls. A long poll held by net/http costs its connection's
// goroutine (its stack grown to 8 KiB by the time the handler runs), a
// second goroutine that watches the connection for the client's close,
// 4 KiB of read and 4 KiB of write buffers, and the request's state:
// about 26 KB, measured (TestLongPollMemory). A poll that has to wait is
// therefore taken out of net/http (hijacked) and parked: one goroutine
// that starts small and only waits, and the connection. When it is
// answered, the answer says Connection: close and the connection is
// closed; the client's next poll opens another.

// parkWriteTimeout bounds the writing of a parked poll's answer.
const parkWriteTimeout = 10 * time.Second

// park takes r's connection from net/http for a long poll and counts it
// in s.parked, or returns nil when it cannot be (not HTTP/1.1, a
// ResponseWriter that cannot hijack, such as a test's recorder, or the
// server closing); the poll then waits in its handler. The caller starts
// the goroutine that answers it, which calls s.parked.Done.
func (s *server) park(w http.ResponseWriter, r *http.Request) net.Conn {
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return nil
	}
	s.parkMu.Lock()
	defer s.parkMu.Unlock()
	if s.closed {
		return nil
	}
	// Through the ResponseController, which reaches net/http's writer
	// under the metrics' recorder (its Unwrap).
	conn, _, err := http.NewResponseController(w).Hijack() // its buffers are dropped: nothing more is read
	if err != nil {
		return nil
	}
	conn.SetDeadline(time.Time{}) // the server's own are for a request in its hands
	s.parked.Add(1)
	return conn
}

// lookSignals is one look at the seat's queue (store.take), the wait for
// a change registered first: when there is nothing to answer, the wake
// it returns fires on any change after the look; otherwise it holds none.
func (s *server) lookSignals(ref seatRef, ack bool, after uint64, deliver bool) ([]lobby.Signal, wake, error) {
	wk := s.reg.watch(ref.code)
	batch, err := s.reg.take(ref, ack, after, deliver)
	if err != nil || len(batch) > 0 {
		wk.release()
		return batch, wake{}, err
	}
	return nil, wk, nil
}

// lookMatch is one look at the match's state, the wait for a change
// registered first: the wake it returns is held only when the match is
// not full yet.
func (s *server) lookMatch(ref seatRef) (lobby.Match, wake, error) {
	wk := s.reg.watch(ref.code)
	st, err := s.reg.state(ref)
	if err != nil || st.Full {
		wk.release()
		return st, wake{}, err
	}
	return st, wk, nil
}

// receiveWait returns the signals queued for the seat (store.take). When
// there are none it waits up to d for some; it returns an empty batch when
// d passes or ctx or the server ends.
func (s *server) receiveWait(ctx context.Context, ref seatRef, d time.Duration, ack bool, after uint64) ([]lobby.Signal, error) {
	var timeout <-chan time.Time
	for {
		batch, wk, err := s.lookSignals(ref, ack, after, ctx.Err() == nil)
		if err != nil || len(batch) > 0 {
			return batch, err
		}
		if d <= 0 || ctx.Err() != nil {
			wk.release()
			return []lobby.Signal{}, nil
		}
		if timeout == nil {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
			s.pollWaits()
		}
		select {
		case <-wk.C:
			wk.release()
			continue
		case <-timeout:
		case <-ctx.Done():
		case <-s.closing:
		}
		wk.release()
		return []lobby.Signal{}, nil
	}
}

// waitFull waits until the match is full, or removed, or d has passed, or
// ctx or the server ends, and returns its state then. wk is the wake of
// the look (lookMatch) that found it not full.
func (s *server) waitFull(ctx context.Context, ref seatRef, d time.Duration, wk wake) (lobby.Match, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	s.pollWaits()
	for {
		select {
		case <-wk.C:
			wk.release()
			st, next, err := s.lookMatch(ref)
			if err != nil || st.Full {
				return st, err
			}
			wk = next
			continue
		case <-t.C:
		case <-ctx.Done():
		case <-s.closing:
		}
		wk.release()
		return s.reg.state(ref)
	}
}

// pollWaits tells a test that a long poll starts to wait.
func (s *server) pollWaits() {
	if s.onPoll != nil {
		s.onPoll()
	}
}

// parkSignals waits, parked, for signals for the seat, up to d, then
// answers them on conn (as receive's handler would) and closes it. wk is
// the wake of the handler's look at the seat's queue, which found
// nothing: the goroutine waits before it does anything else, so that its
// stack stays at its first 2 KiB while it waits. It holds a long-poll
// slot, which it releases.
func (s *server) parkSignals(conn net.Conn, ref seatRef, d time.Duration, ack bool, after uint64, wk wake) {
	defer s.parked.Done()
	defer s.releaseWaiter()
	t := time.NewTimer(d)
	defer t.Stop()
	s.pollWaits()
	for {
		select {
		case <-wk.C:
			wk.release()
		case <-t.C:
			wk.release()
			s.answerParked(conn, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, []lobby.Signal{}) })
			return
		case <-s.closing:
			wk.release()
			s.answerParked(conn, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, []lobby.Signal{}) })
			return
		}
		// A poll that does not acknowledge takes the signals it answers:
		// it must not take them for a client that has gone.
		if !ack && !clientThere(conn) {
			conn.Close()
			return
		}
		var batch []lobby.Signal
		var err error
		batch, wk, err = s.lookSignals(ref, ack, after, true)
		if err != nil || len(batch) > 0 {
			s.answerParked(conn, func(w http.ResponseWriter) {
				if err != nil {
					writeError(w, err)
				} else {
					writeJSON(w, http.StatusOK, batch)
				}
			})
			return
		}
	}
}

// parkMatch waits, parked, until the match is full, or removed, or d has
// passed, then answers its state on conn (as match's handler would) and
// closes it. wk is the wake of the handler's look, which found it not full.
func (s *server) parkMatch(conn net.Conn, ref seatRef, d time.Duration, wk wake) {
	defer s.parked.Done()
	defer s.releaseWaiter()
	st, err := s.waitFull(context.Background(), ref, d, wk)
	s.answerParked(conn, func(w http.ResponseWriter) { s.writeMatch(w, ref, st, err) })
}

// answerParked writes the answer that write makes to conn, with
// Connection: close, and closes conn.
func (s *server) answerParked(conn net.Conn, write func(w http.ResponseWriter)) {
	defer conn.Close()
	var a bufferedAnswer
	write(&a)
	resp := &http.Response{
		StatusCode:    a.status,
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        a.header,
		ContentLength: int64(a.body.Len()),
		Body:          io.NopCloser(&a.body),
		Close:         true,
	}
	conn.SetWriteDeadline(time.Now().Add(parkWriteTimeout))
	if err := resp.Write(conn); err != nil {
		s.log.Debug("answering a parked poll", "err", err)
	}
}

// clientThere reports whether the client of a parked poll is still
// connected: a read that waits a millisecond times out (nothing sent,
// nothing closed) rather than ending.
func clientThere(conn net.Conn) bool {
	conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := conn.Read(make([]byte, 1))
	conn.SetReadDeadline(time.Time{})
	var ne net.Error
	return err == nil || (errors.As(err, &ne) && ne.Timeout())
}

// bufferedAnswer is an http.ResponseWriter that keeps the answer, for a
// parked poll's connection.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *bufferedAnswer) Header() http.Header {
	if a.header == nil {
		a.header = make(http.Header)
	}
	return a.header
}

func (a *bufferedAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *bufferedAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}
