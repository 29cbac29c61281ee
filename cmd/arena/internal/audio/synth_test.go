package audio

import (
	"fmt"
	"hash/fnv"
	"math"
	"testing"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/sound"
)

// arenaSounds lists every sound the arena game plays, and whether it loops.
func arenaSounds() map[sound.ID]bool {
	ids := map[sound.ID]bool{arena.SoundMusic: true}
	for i := range sound.ID(arena.MaxShips) {
		ids[arena.SoundShot+i] = false
		ids[arena.SoundExplosion+i] = false
		ids[arena.SoundThrust+i] = true
	}
	return ids
}

func rmsOf(s []float32) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(s)))
}

func TestBankHasEveryArenaSound(t *testing.T) {
	for id, wantLoop := range arenaSounds() {
		s, loop, ok := Lookup(id)
		switch {
		case !ok || len(s) == 0:
			t.Errorf("sound %#x: ok %v, %d samples", id, ok, len(s))
			continue
		case loop != wantLoop:
			t.Errorf("sound %#x: loop %v, want %v", id, loop, wantLoop)
		}
		for i, v := range s {
			if !(v >= -1 && v <= 1) { // NaN fails too
				t.Errorf("sound %#x: sample %d is %v", id, i, v)
				break
			}
		}
		if r := rmsOf(s); r < 0.03 {
			t.Errorf("sound %#x: RMS %.4f, nearly silent", id, r)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, id := range []sound.ID{0, 2, arena.SoundShot - 1, arena.SoundShot + arena.MaxShips,
		arena.SoundExplosion + arena.MaxShips, arena.SoundThrust + arena.MaxShips, 0x400, 1 << 31} {
		if s, _, ok := Lookup(id); ok || s != nil {
			t.Errorf("Lookup(%#x) = %d samples, %v; want nothing", id, len(s), ok)
		}
	}
}

// Each ship's shot is higher than the one before: count the chirp's
// zero crossings.
func TestShotPitchRisesWithShip(t *testing.T) {
	prev := 0
	for i := range sound.ID(arena.MaxShips) {
		s, _, _ := Lookup(arena.SoundShot + i)
		n := 0
		for j := 1; j < len(s); j++ {
			if (s[j-1] < 0) != (s[j] < 0) {
				n++
			}
		}
		if n <= prev {
			t.Errorf("ship %d's shot crosses zero %d times, ship %d's %d: want higher", i, n, i-1, prev)
		}
		prev = n
	}
}

// bankHash hashes every sound's bits, in a fixed order.
func bankHash(b *bank) uint64 {
	h := fnv.New64a()
	var buf [4]byte
	add := func(s []float32) {
		for _, v := range s {
			u := math.Float32bits(v)
			buf[0], buf[1], buf[2], buf[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			h.Write(buf[:])
		}
	}
	for _, s := range b.shot {
		add(s)
	}
	add(b.explosion)
	add(b.thrust)
	add(b.music)
	return h.Sum64()
}

func TestBankIsDeterministic(t *testing.T) {
	a, b := newBank(), newBank()
	if ha, hb := bankHash(a), bankHash(b); ha != hb {
		t.Fatalf("two builds differ: %#x and %#x", ha, hb)
	}
	if a.music[1000] != theBank().music[1000] {
		t.Fatal("the shared bank differs from a new build")
	}
}

// The synthesiser computes in integers so that every machine makes the same
// bits; this pins them. Changing a sound on purpose changes the hash: update
// it then. A failure on one architecture only is a portability bug.
func TestBankGolden(t *testing.T) {
	const want uint64 = 0xeba67aea9ec3d13b
	if got := bankHash(newBank()); got != want {
		t.Errorf("bank hash %#x, want %#x", got, want)
	}
}

// A loop's last sample flows into its first: the jump is no bigger than a
// typical step between neighbours.
func TestLoopsAreSeamless(t *testing.T) {
	for _, id := range []sound.ID{arena.SoundMusic, arena.SoundThrust} {
		s, _, _ := Lookup(id)
		var sum float64
		for i := 1; i < len(s); i++ {
			sum += math.Abs(float64(s[i] - s[i-1]))
		}
		mean := sum / float64(len(s)-1)
		if seam := math.Abs(float64(s[0] - s[len(s)-1])); seam > 3*mean {
			t.Errorf("sound %#x: the loop point jumps by %.5f; neighbours differ by %.5f on average", id, seam, mean)
		}
	}
}

// One-shots start and end at silence, so they do not click.
func TestOneShotsStartAndEndSilent(t *testing.T) {
	for id, loop := range arenaSounds() {
		s, _, _ := Lookup(id)
		if !loop && (s[0] != 0 || s[len(s)-1] != 0) {
			t.Errorf("sound %#x starts at %v and ends at %v", id, s[0], s[len(s)-1])
		}
	}
}

func TestLengths(t *testing.T) {
	for _, c := range []struct {
		id   sound.ID
		want int
	}{
		{arena.SoundShot, SampleRate * 120 / 1000},
		{arena.SoundExplosion, SampleRate * 700 / 1000},
		{arena.SoundThrust, SampleRate / 2},
		{arena.SoundMusic, SampleRate * 8},
	} {
		if s, _, _ := Lookup(c.id); len(s) != c.want {
			t.Errorf("sound %#x: %d samples, want %d", c.id, len(s), c.want)
		}
	}
}

func ExampleLookup() {
	s, loop, ok := Lookup(arena.SoundThrust + 2)
	fmt.Printf("%.2f s, loop %v, ok %v\n", float64(len(s))/SampleRate, loop, ok)
	// Output: 0.50 s, loop true, ok true
}
