// Package playtest runs the arena demo as a person would: two game
// processes in windows of a real X server, playing each other over UDP on
// loopback with bots and key presses injected through the X server, with
// their sound going to a null sink. make play-test runs it (under Xvfb,
// with PulseAudio's null sink); without ARENA_PLAY_TEST=1 it skips.
package playtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math/bits"
)

// decodeXWD decodes an X window dump (xwd -root) of a TrueColor screen
// at 24 or 32 bits a pixel: what the X server shows, both windows.
func decodeXWD(r io.Reader) (*image.RGBA, error) {
	var h [25]uint32
	if err := binary.Read(r, binary.BigEndian, &h); err != nil {
		return nil, err
	}
	hsize, format, width, height := h[0], h[2], int(h[4]), int(h[5])
	order, bpp, stride := h[7], h[11], int(h[12])
	rm, gm, bm, ncolors := h[14], h[15], h[16], h[19]
	switch {
	case h[1] != 7 || format != 2:
		return nil, fmt.Errorf("xwd: version %d format %d (want 7, ZPixmap)", h[1], format)
	case bpp != 24 && bpp != 32 || width <= 0 || height <= 0 || width > 1<<14 || height > 1<<14 || stride < 3*width:
		return nil, fmt.Errorf("xwd: %dx%d at %d bits a pixel, %d bytes a line", width, height, bpp, stride)
	case hsize < 100 || hsize > 1<<16:
		return nil, errors.New("xwd: bad header size")
	}
	// The window name, then the colour map (12 bytes an entry): skipped.
	if _, err := io.CopyN(io.Discard, r, int64(hsize-100)+int64(ncolors)*12); err != nil {
		return nil, err
	}
	line := make([]byte, stride)
	size := int(bpp / 8) // bytes a pixel: 3 for packed 24-bit pixels (Xvfb's GLX visual), 4 for 32
	if stride < size*width {
		return nil, fmt.Errorf("xwd: %d bytes a line for %d pixels of %d bytes", stride, width, size)
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	channel := func(p, mask uint32) uint8 {
		if mask == 0 {
			return 0
		}
		v := (p & mask) >> bits.TrailingZeros32(mask)
		return uint8(v * 255 / (mask >> bits.TrailingZeros32(mask)))
	}
	for y := range height {
		if _, err := io.ReadFull(r, line); err != nil {
			return nil, err
		}
		for x := range width {
			var q [4]byte
			if order == 0 { // LSBFirst: the low byte first
				copy(q[:], line[size*x:size*x+size])
			} else {
				copy(q[4-size:], line[size*x:size*x+size])
			}
			p := binary.LittleEndian.Uint32(q[:])
			if order != 0 {
				p = binary.BigEndian.Uint32(q[:])
			}
			img.SetRGBA(x, y, color.RGBA{channel(p, rm), channel(p, gm), channel(p, bm), 255})
		}
	}
	return img, nil
}
