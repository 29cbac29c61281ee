package desync_test

import (
	"bytes"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/savestate"
)

type Player struct {
	X, Y  int32
	Score int32
}

// A Detector compares our checksums of final frames with a peer's; on a
// mismatch the states at that frame are exchanged and Compare names the
// first field that differs. (The session does all of this itself; this
// is what it does.)
func Example() {
	a, _ := savestate.New(1 << 10)
	p, _ := savestate.Alloc[Player](a)
	p.Get(a).X = 40960
	ours := bytes.Clone(a.Bytes())
	p.Get(a).X++ // the peer's simulation went another way
	theirs := bytes.Clone(a.Bytes())

	d := desync.NewDetector(1)
	d.Local(500, xxhash.Sum64(ours))
	d.Remote(0, 500, xxhash.Sum64(theirs))
	if err := d.Check(); err != nil {
		err.Field = desync.Compare(a, ours, theirs)
		fmt.Println("frame", err.Frame, "peer", err.Peer)
		fmt.Println(err.Field)
	}
	// Output:
	// frame 500 peer 0
	// desync_test.Player.X: 40960 vs 40961
}
