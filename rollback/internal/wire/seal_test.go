package wire_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// pair returns the two ends of a link: a's sealer and b's opener for a→b,
// and b's sealer and a's opener for b→a.
func pair(t testing.TB, secretA, secretB []byte) (aSeal *wire.Sealer, bOpen *wire.Opener, bSeal *wire.Sealer, aOpen *wire.Opener) {
	ka, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{1}))
	require.NoError(t, err)
	kb, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{2}))
	require.NoError(t, err)
	digest := [wire.DigestSize]byte{9}
	aSend, aRecv, err := ka.Keys(wire.Link{Session: 7, Ours: 100, Theirs: 200, TheirKey: kb.Public(), Digest: digest, Secret: secretA})
	require.NoError(t, err)
	bSend, bRecv, err := kb.Keys(wire.Link{Session: 7, Ours: 200, Theirs: 100, TheirKey: ka.Public(), Digest: digest, Secret: secretB})
	require.NoError(t, err)
	return wire.NewSealer(aSend), wire.NewOpener(bRecv), wire.NewSealer(bSend), wire.NewOpener(aRecv)
}

func seal(s *wire.Sealer, k wire.Kind, body []byte) []byte {
	return s.Seal(append(s.Begin(nil, k), body...))
}

func TestSealRoundTrip(t *testing.T) {
	aSeal, bOpen, bSeal, aOpen := pair(t, nil, nil)
	for i := range 10 {
		body := bytes.Repeat([]byte{byte(i)}, i)
		d := seal(aSeal, wire.KindQuality, body)
		assert.Len(t, d, len(body)+wire.SealOverhead)
		assert.Equal(t, wire.KindQuality, wire.SealedKind(d))
		got, ok := open(bOpen, d)
		require.True(t, ok, "datagram %d", i)
		assert.Equal(t, body, got)
		_, ok = open(aOpen, d)
		assert.False(t, ok, "a datagram does not open in the direction it was not sealed for")
		back, ok := open(aOpen, seal(bSeal, wire.KindInput, body))
		require.True(t, ok)
		assert.Equal(t, body, back)
	}
}

// TestSealRejectsEveryChange: flipping any one bit of a sealed datagram, or
// cutting or extending it, makes it fail.
func TestSealRejectsEveryChange(t *testing.T) {
	aSeal, bOpen, _, _ := pair(t, nil, nil)
	d := seal(aSeal, wire.KindInput, []byte("a twenty-byte body.."))
	for bit := range len(d) * 8 {
		c := bytes.Clone(d)
		c[bit/8] ^= 1 << (bit % 8)
		_, ok := open(bOpen, c)
		assert.False(t, ok, "bit %d", bit)
	}
	for n := range len(d) {
		_, ok := open(bOpen, d[:n])
		assert.False(t, ok, "cut to %d bytes", n)
	}
	_, ok := open(bOpen, append(bytes.Clone(d), 0))
	assert.False(t, ok, "extended")
	_, ok = open(bOpen, d)
	assert.True(t, ok, "the genuine datagram still opens: failures record nothing")
}

// TestSealKeysBindEverything: a different Secret, session, nonce, digest or
// public key on one side gives keys that do not match.
func TestSealKeysBindEverything(t *testing.T) {
	ka, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{1}))
	require.NoError(t, err)
	kb, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{2}))
	require.NoError(t, err)
	kc, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{3}))
	require.NoError(t, err)
	base := wire.Link{Session: 7, Ours: 200, Theirs: 100, TheirKey: ka.Public(), Digest: [wire.DigestSize]byte{1}, Secret: []byte("lobby")}
	aSend, _, err := ka.Keys(wire.Link{Session: 7, Ours: 100, Theirs: 200, TheirKey: kb.Public(), Digest: base.Digest, Secret: []byte("lobby")})
	require.NoError(t, err)
	d := seal(wire.NewSealer(aSend), wire.KindGo, []byte{1, 2, 3})
	opens := func(k *wire.KeyShare, l wire.Link) bool {
		_, recv, err := k.Keys(l)
		require.NoError(t, err)
		_, ok := open(wire.NewOpener(recv), d)
		return ok
	}
	require.True(t, opens(kb, base))
	for name, edit := range map[string]func(l *wire.Link){
		"secret":    func(l *wire.Link) { l.Secret = []byte("lobbz") },
		"no secret": func(l *wire.Link) { l.Secret = nil },
		"session":   func(l *wire.Link) { l.Session++ },
		"our nonce": func(l *wire.Link) { l.Ours++ },
		"nonce":     func(l *wire.Link) { l.Theirs++ },
		"digest":    func(l *wire.Link) { l.Digest[5] ^= 1 },
		"their key": func(l *wire.Link) { l.TheirKey = kc.Public() },
	} {
		l := base
		edit(&l)
		assert.False(t, opens(kb, l), name)
	}
	_, _, err = kb.Keys(wire.Link{Ours: 5, Theirs: 5, TheirKey: ka.Public()})
	assert.ErrorIs(t, err, wire.ErrKey, "equal nonces")
	_, _, err = kb.Keys(wire.Link{Ours: 5, Theirs: 6}) // the all-zero key: a low-order point
	assert.ErrorIs(t, err, wire.ErrKey)
	k1, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{1}))
	require.NoError(t, err)
	assert.Equal(t, ka.Public(), k1.Public(), "a seeded source gives the same key: a seeded match is reproducible")
	pub := ka.Public()
	_, err = ecdh.X25519().NewPublicKey(pub[:])
	assert.NoError(t, err, "a valid X25519 public key")
}

// TestSealReplays: a datagram opens at most once; reordering within the
// window is fine; older ones are refused.
func TestSealReplays(t *testing.T) {
	aSeal, bOpen, _, _ := pair(t, nil, nil)
	var ds [][]byte
	for range wire.ReplayWindow + 10 {
		ds = append(ds, seal(aSeal, wire.KindInput, []byte{7}))
	}
	_, ok := open(bOpen, ds[5])
	require.True(t, ok)
	_, ok = open(bOpen, ds[5])
	assert.False(t, ok, "replayed")
	_, ok = open(bOpen, ds[2])
	assert.True(t, ok, "reordered")
	_, ok = open(bOpen, ds[2])
	assert.False(t, ok, "replayed")
	last := len(ds) - 1
	_, ok = open(bOpen, ds[last])
	require.True(t, ok)
	_, ok = open(bOpen, ds[last-wire.ReplayWindow+1])
	assert.True(t, ok, "the oldest the window holds")
	_, ok = open(bOpen, ds[last-wire.ReplayWindow])
	assert.False(t, ok, "older than the window")
	_, err := bOpen.Open(ds[5])
	assert.ErrorIs(t, err, wire.ErrReplay)
	forged := bytes.Clone(ds[last])
	forged[1]++ // the next packet number, with the last one's MAC
	_, err = bOpen.Open(forged)
	assert.ErrorIs(t, err, wire.ErrMAC)
}

// TestSealPacketNumbersLast: across many wraps of the 12-bit packet number,
// with losses up to half the number space and reordering within the
// window, every datagram that arrives opens exactly once.
func TestSealPacketNumbersLast(t *testing.T) {
	aSeal, bOpen, _, _ := pair(t, nil, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	type late struct {
		d   []byte
		due int
	}
	var held []late
	opened := 0
	for i := range 100_000 {
		d := seal(aSeal, wire.KindInput, []byte{byte(i)})
		switch r := rng.IntN(1000); {
		case r == 0:
			held = held[:0] // lost with the burst
			for range rng.IntN(2000) {
				aSeal.Begin(nil, wire.KindInput)
			}
		case r < 100:
			held = append(held, late{d, i + 1 + rng.IntN(30)}) // delivered up to 30 datagrams late
			continue
		}
		body, ok := open(bOpen, d)
		require.True(t, ok, "datagram %d", i)
		require.Equal(t, []byte{byte(i)}, body)
		opened++
		for len(held) > 0 && held[0].due <= i {
			_, ok := open(bOpen, held[0].d)
			require.True(t, ok, "a reordered datagram")
			held = held[1:]
			opened++
		}
	}
	assert.Greater(t, opened, 90_000)
	assert.Greater(t, aSeal.Sent(), uint64(1<<pnBitsForTest))
}

// TestSealLost: Lost counts the datagrams that never arrived once the
// window has passed them (a jump past the whole window at once), and
// none of those that arrived late, reordered within it.
func TestSealLost(t *testing.T) {
	aSeal, bOpen, _, _ := pair(t, nil, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	var held [][]byte
	lost := uint64(0)
	for i := range 5000 {
		d := seal(aSeal, wire.KindInput, []byte{byte(i)})
		switch r := rng.IntN(100); {
		case r < 3:
			lost++
			continue
		case r < 6:
			held = append(held, d) // delivered after the next one
			continue
		case r == 6 && i < 4000:
			n := 64 + rng.IntN(100) // a burst longer than the window
			for range n {
				aSeal.Begin(nil, wire.KindInput)
			}
			lost += uint64(n)
		}
		_, ok := open(bOpen, d)
		require.True(t, ok, "datagram %d", i)
		for _, h := range held {
			_, ok := open(bOpen, h)
			require.True(t, ok, "a reordered datagram")
		}
		held = held[:0]
	}
	for range wire.ReplayWindow { // the window moves past the last losses
		_, ok := open(bOpen, seal(aSeal, wire.KindInput, nil))
		require.True(t, ok)
	}
	assert.Equal(t, lost, bOpen.Lost())
}

const pnBitsForTest = 16 // well past several wraps of the 12 bits sent

func TestSealDoesNotAllocate(t *testing.T) {
	aSeal, bOpen, _, _ := pair(t, nil, nil)
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		buf = aSeal.Seal(append(aSeal.Begin(buf[:0], wire.KindInput), "twelve bytes"...))
		if _, ok := open(bOpen, buf); !ok {
			t.Fatal("did not open")
		}
	})
	assert.Zero(t, allocs)
}

// BenchmarkMAC: sealing one 13-byte input datagram and opening it, against
// the floor of the two AES-GCM tag computations alone.
func BenchmarkMAC(b *testing.B) {
	b.Run("seal+open", func(b *testing.B) {
		aSeal, bOpen, _, _ := pair(b, nil, nil)
		buf := make([]byte, 0, 64)
		b.ReportAllocs()
		for b.Loop() {
			buf = aSeal.Seal(append(aSeal.Begin(buf[:0], wire.KindInput), "thirteen byte"...))
			if _, ok := open(bOpen, buf); !ok {
				b.Fatal("did not open")
			}
		}
	})
	b.Run("floor-two-gcm-tags", func(b *testing.B) {
		blk, err := aes.NewCipher(make([]byte, 16))
		require.NoError(b, err)
		g, err := cipher.NewGCM(blk)
		require.NoError(b, err)
		var nonce [12]byte
		var tag [16]byte
		msg := []byte("..thirteen byte")
		b.ReportAllocs()
		for b.Loop() {
			nonce[11]++
			g.Seal(tag[:0], nonce[:], nil, msg)
			g.Seal(tag[:0], nonce[:], nil, msg)
		}
	})
}

// FuzzOpen: no datagram makes Open panic, and none but the genuine ones
// open (its seed corpus is in testdata/fuzz/FuzzOpen).
func FuzzOpen(f *testing.F) {
	aSeal, _, _, _ := pair(f, nil, nil)
	genuine := map[string]bool{}
	for i := range 3 {
		d := seal(aSeal, wire.KindInput, bytes.Repeat([]byte{byte(i)}, 5*i))
		genuine[string(d)] = true
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		_, bOpen, _, _ := pair(t, nil, nil)
		body, ok := open(bOpen, d)
		if ok != genuine[string(d)] {
			t.Fatalf("Open(%x) = %v", d, ok)
		}
		if ok && len(body) != len(d)-wire.SealOverhead {
			t.Fatalf("body of %d bytes from a %d-byte datagram", len(body), len(d))
		}
	})
}

// open is Open reporting success as a bool.
func open(o *wire.Opener, b []byte) ([]byte, bool) {
	body, err := o.Open(b)
	return body, err == nil
}
