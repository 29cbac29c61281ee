package rtc

import (
	"context"
	"sync"

	"github.com/pion/datachannel"
)

// channel is an open, detached data channel.
type channel struct {
	rw datachannel.ReadWriteCloser
}

// signalMsg is one signaling message to send.
type signalMsg struct {
	to         int
	kind, data string
}

// outbox sends signaling messages in order from one goroutine, so that
// pion's callbacks (which find candidates) never wait on the signaler.
// Messages queued once its context has ended are dropped: Dial has
// returned, and every connection is up.
type outbox struct {
	ctx  context.Context
	ch   chan signalMsg
	done chan struct{}
}

func newOutbox(ctx context.Context, sig Signaler) *outbox {
	o := &outbox{ctx: ctx, ch: make(chan signalMsg, 256), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for {
			select {
			case m := <-o.ch:
				_ = sig.Send(ctx, m.to, m.kind, m.data) // a lost message shows as a machine Dial could not reach
			case <-ctx.Done():
				return
			}
		}
	}()
	return o
}

func (o *outbox) send(to int, kind, data string) {
	select {
	case o.ch <- signalMsg{to, kind, data}:
	case <-o.ctx.Done():
	}
}

// close waits for the sending goroutine, whose context must have ended.
func (o *outbox) close() { <-o.done }

// MemorySignalers returns n signalers connected in memory, one per
// machine of a match played in one process (tests, the soak). Each
// machine's messages wait in an unbounded queue until it receives them.
func MemorySignalers(n int) []Signaler {
	h := &hub{queues: make([][]memSignal, n), wake: make([]chan struct{}, n)}
	s := make([]Signaler, n)
	for i := range s {
		h.wake[i] = make(chan struct{}, 1)
		s[i] = &memSignaler{h: h, me: i}
	}
	return s
}

type memSignal struct {
	from       int
	kind, data string
}

type hub struct {
	mu     sync.Mutex
	queues [][]memSignal
	wake   []chan struct{}
}

type memSignaler struct {
	h  *hub
	me int
}

func (s *memSignaler) Send(ctx context.Context, to int, kind, data string) error {
	if to < 0 || to >= len(s.h.queues) {
		return ErrPeer
	}
	s.h.mu.Lock()
	s.h.queues[to] = append(s.h.queues[to], memSignal{s.me, kind, data})
	s.h.mu.Unlock()
	select {
	case s.h.wake[to] <- struct{}{}:
	default:
	}
	return nil
}

func (s *memSignaler) Receive(ctx context.Context) (int, string, string, error) {
	for {
		s.h.mu.Lock()
		if q := s.h.queues[s.me]; len(q) > 0 {
			m := q[0]
			s.h.queues[s.me] = q[1:]
			s.h.mu.Unlock()
			return m.from, m.kind, m.data, nil
		}
		s.h.mu.Unlock()
		select {
		case <-s.h.wake[s.me]:
		case <-ctx.Done():
			return 0, "", "", ctx.Err()
		}
	}
}
