package inbox

import (
	"bytes"
	"testing"
)

func TestTakesPeersInTurn(t *testing.T) {
	b := New(3, 8)
	for i := range 3 {
		b.Put(0, []byte{0, byte(i)})
	}
	b.Put(2, []byte{2, 0})
	buf := make([]byte, 8)
	var got [][2]byte
	for {
		n, peer, ok := b.Take(buf)
		if !ok {
			break
		}
		if n != 2 || int(buf[0]) != peer {
			t.Fatalf("Take = %d bytes %v from %d", n, buf[:n], peer)
		}
		got = append(got, [2]byte{buf[0], buf[1]})
	}
	want := [][2]byte{{0, 0}, {2, 0}, {0, 1}, {0, 2}}
	if len(got) != len(want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
}

func TestFullQueueDropsItsOldest(t *testing.T) {
	b := New(2, 8)
	for i := range Depth + 3 {
		if !b.Put(0, []byte{byte(i)}) {
			t.Fatal("Put refused a datagram")
		}
	}
	b.Put(1, []byte{200})
	if b.Full() != 3 || b.Waiting() != Depth+1 {
		t.Fatalf("Full %d Waiting %d, want 3 and %d", b.Full(), b.Waiting(), Depth+1)
	}
	buf := make([]byte, 8)
	if _, peer, _ := b.Take(buf); peer != 0 || buf[0] != 3 {
		t.Fatalf("first datagram %d from %d, want 3 from 0 (the three oldest dropped)", buf[0], peer)
	}
	if _, peer, _ := b.Take(buf); peer != 1 {
		t.Fatalf("second from %d, want the other peer's (its queue was never delayed)", peer)
	}
}

func TestRefusesWhatItCannotHold(t *testing.T) {
	b := New(1, 4)
	if b.Put(0, make([]byte, 5)) || b.Put(1, []byte{1}) || b.Put(-1, []byte{1}) {
		t.Fatal("Put kept an oversized datagram or one for no peer")
	}
	if !b.Put(0, []byte{1, 2, 3, 4}) {
		t.Fatal("Put refused a datagram of the maximum size")
	}
	b.Resize(3)
	b.Put(2, []byte{9})
	b.Clear(0)
	buf := make([]byte, 4)
	n, peer, ok := b.Take(buf)
	if !ok || peer != 2 || !bytes.Equal(buf[:n], []byte{9}) {
		t.Fatalf("Take = %v from %d (%v), want [9] from 2", buf[:n], peer, ok)
	}
	b.Resize(1)
	if b.Waiting() != 0 {
		t.Fatalf("Waiting %d after everything was taken", b.Waiting())
	}
}

func TestReady(t *testing.T) {
	b := New(1, 8)
	select {
	case <-b.Ready():
		t.Fatal("Ready before any datagram")
	default:
	}
	b.Put(0, []byte{1})
	b.Put(0, []byte{2})
	select {
	case <-b.Ready():
	default:
		t.Fatal("no token after Put")
	}
}

func BenchmarkPutTake(b *testing.B) {
	in := New(2, 1400)
	p := make([]byte, 100)
	buf := make([]byte, 1400)
	b.ReportAllocs()
	for range b.N {
		in.Put(1, p)
		in.Take(buf)
	}
}
