package main

import (
	"bytes"
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

// parkSignals waits, parked, for signals for seat i of m, up to d, then
// answers them on conn (as receive's handler would) and closes it. wake is
// the seat's channel from the handler's look at its queue, which found
// nothing: the goroutine waits before it does anything else, so that its
// stack stays at its first 2 KiB while it waits. It holds a long-poll
// slot, which it releases.
func (s *server) parkSignals(conn net.Conn, m *match, i int, token string, d time.Duration, ack bool, after uint64, wake <-chan struct{}) {
	defer s.parked.Done()
	defer s.releaseWaiter()
	t := time.NewTimer(d)
	defer t.Stop()
	if s.reg.onPoll != nil {
		s.reg.onPoll()
	}
	for {
		select {
		case <-wake:
		case <-m.gone:
		case <-t.C:
			s.answerParked(conn, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, []lobby.Signal{}) })
			return
		case <-s.reg.closing:
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
		batch, wake, err = s.reg.take(m, i, token, ack, after, true)
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

// parkMatch waits, parked, until m is full, or removed, or d has passed,
// then answers its state on conn (as match's handler would) and closes it.
func (s *server) parkMatch(conn net.Conn, m *match, seat int, d time.Duration) {
	defer s.parked.Done()
	defer s.releaseWaiter()
	t := time.NewTimer(d)
	defer t.Stop()
	if s.reg.onPoll != nil {
		s.reg.onPoll()
	}
	gone := false
	select {
	case <-m.full:
	case <-m.gone:
		gone = true
	case <-t.C:
	case <-s.reg.closing:
	}
	s.answerParked(conn, func(w http.ResponseWriter) {
		if gone {
			writeError(w, errExpired)
			return
		}
		s.writeMatch(w, m, seat)
	})
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
