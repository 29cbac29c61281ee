package draw

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
)

// The heads-up display's colours.
var (
	label  = color.RGBA{150, 155, 185, 255}
	gold   = color.RGBA{250, 210, 80, 255}
	panel  = color.RGBA{8, 9, 18, 235} // premultiplied: nearly opaque
	dimmed = color.RGBA{110, 115, 140, 255}
	alert  = color.RGBA{255, 150, 110, 255}
)

// GlyphW and GlyphH are a character's cell at scale 1.
const GlyphW, GlyphH = glyphW, glyphH

// TextScaled adds s in the debug font, each glyph scale times its size:
// headings and the title.
func (f *Frame) TextScaled(s string, x, y int, scale float32, c color.RGBA) {
	g := f.l.glyphs
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch <= firstGlyph || ch > lastGlyph {
			continue
		}
		sx := g.x + float32(glyphW*int(ch-firstGlyph))
		x0, y0 := float32(x)+scale*float32(1+glyphW*i), float32(y)
		x1, y1 := x0+scale*glyphW, y0+scale*glyphH
		f.quad([4][2]float32{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}}, sx, g.y, sx+glyphW, g.y+glyphH, c)
	}
}

// TextCentred adds s centred on x at scale.
func (f *Frame) TextCentred(s string, x, y int, scale float32, c color.RGBA) {
	f.TextScaled(s, x-int(scale*float32(glyphW*len(s)))/2, y, scale, c)
}

// Scores adds each player's colour, name and score along the top: "P1
// you 3" for this machine's players, "P2 5" for the others'.
func (f *Frame) Scores(w *arena.World, local []rollback.PlayerID) {
	for i := range int(w.Players) {
		x := 8 + i*94
		f.Rect(float32(x), 8, 10, 10, ShipColors[i])
		f.num = append(f.num[:0], 'P')
		f.num = strconv.AppendInt(f.num, int64(i+1), 10)
		if slices.Contains(local, rollback.PlayerID(i)) {
			f.num = append(f.num, " you"...)
		}
		f.num = append(f.num, ' ')
		n := len(f.num)
		f.num = strconv.AppendInt(f.num, int64(w.Ships[i].Score), 10)
		for k, ch := range f.num {
			c := label
			if k >= n {
				c = white
			}
			f.glyph(ch, x+14+1+glyphW*k, 4, c)
		}
	}
}

// Marks adds a ring and "YOU" around this machine's ships (the live
// ones), so that a person finds theirs among the others.
func (f *Frame) Marks(w *arena.World, local []rollback.PlayerID) {
	for _, p := range local {
		s := &w.Ships[p]
		if int(p) >= int(w.Players) || !s.Alive {
			continue
		}
		x, y := px(s.X), px(s.Y)
		f.sprite(f.l.mark, x, y, white)
		f.Text("YOU", int(x)-9, int(y)-int(shipRadius)-22, white)
	}
}

// Timer adds the round's line under the scores: its number, the time
// left (or played, without a timer) and the score target.
func (f *Frame) Timer(rd play.Round, rules play.Rules, frame rollback.Frame) {
	f.num = append(f.num[:0], "round "...)
	f.num = strconv.AppendInt(f.num, int64(rd.Number), 10)
	f.num = append(f.num, "   "...)
	played := int(frame) - int(rd.Start)
	if rd.Over != 0 {
		played = int(rd.End - rd.Start)
	}
	if rules.RoundFrames > 0 {
		f.num = appendClock(f.num, max(rules.RoundFrames-played, 0))
		f.num = append(f.num, " left"...)
	} else {
		f.num = appendClock(f.num, max(played, 0))
	}
	if rules.Target > 0 {
		f.num = append(f.num, "   first to "...)
		f.num = strconv.AppendInt(f.num, int64(rules.Target), 10)
	}
	for k, ch := range f.num {
		f.glyph(ch, 8+1+glyphW*k, 22, label)
	}
}

// appendClock appends frames as m:ss, rounding up (a timer shows 0:00
// only when it has run out).
func appendClock(b []byte, frames int) []byte {
	s := (frames + 59) / 60
	b = strconv.AppendInt(b, int64(s/60), 10)
	b = append(b, ':')
	if s%60 < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(s%60), 10)
}

// RoundEnd is what the round-end screen shows.
type RoundEnd struct {
	Round   play.Round
	Players int
	Local   []rollback.PlayerID
	// RematchIn is the frames until the next round starts anyway; Asked,
	// whether this machine's people asked for it already.
	RematchIn int
	Asked     bool
	// Leave is how to leave ("Esc: leave").
	Leave string
	// ClosesIn is, when the match's frame limit ended it (Round.Final),
	// the frames until the game ends: the standings show meanwhile, and
	// Close says how to end it at once.
	ClosesIn int
	Close    string
}

// RoundEnd adds the round-end screen: a panel over the middle of the
// arena with the winner and every ship's score; at the match's frame
// limit, the match's standings.
func (f *Frame) RoundEnd(e RoundEnd) {
	const w, top = 440, 200
	h := 170 + 20*e.Players
	x0 := (ScreenSize - w) / 2
	f.Rect(float32(x0), top, w, float32(h), panel)
	f.Rect(float32(x0), top, w, 2, border)
	f.Rect(float32(x0), float32(top+h-2), w, 2, border)
	mid := ScreenSize / 2
	heading := fmt.Sprintf("ROUND %d OVER", e.Round.Number)
	if e.Round.Final != 0 {
		heading = fmt.Sprintf("MATCH OVER - ROUND %d", e.Round.Number)
	}
	f.TextCentred(heading, mid, top+14, 2, label)
	final := e.Round.Final != 0
	switch win := int(e.Round.Winner); {
	case final && e.Round.MatchWinner(e.Players) >= 0:
		// The match's winner: the most rounds won.
		win = e.Round.MatchWinner(e.Players)
		name := fmt.Sprintf("P%d WINS THE MATCH", win+1)
		if slices.Contains(e.Local, rollback.PlayerID(win)) {
			name = fmt.Sprintf("YOU WIN THE MATCH (P%d)", win+1)
		}
		f.TextCentred(name, mid, top+50, 3, ShipColors[win])
	case final:
		f.TextCentred("THE MATCH IS A DRAW", mid, top+50, 3, white)
	case win >= 0:
		name := fmt.Sprintf("P%d WINS", win+1)
		if slices.Contains(e.Local, rollback.PlayerID(win)) {
			name = fmt.Sprintf("P%d WINS - YOU!", win+1)
		}
		f.TextCentred(name, mid, top+50, 3, ShipColors[win])
	default:
		f.TextCentred("A DRAW", mid, top+50, 3, white)
	}
	// The scores, best first; at the match's end, by rounds won first.
	order := e.Round.Order(e.Players)
	if final {
		slices.SortStableFunc(order, func(a, b int) int { return int(e.Round.Wins[b] - e.Round.Wins[a]) })
	}
	for k, i := range order {
		y := top + 110 + 20*k
		f.Rect(float32(x0+80), float32(y+3), 10, 10, ShipColors[i])
		you := ""
		if slices.Contains(e.Local, rollback.PlayerID(i)) {
			you = " (you)"
		}
		c := white
		if int(e.Round.Winner) == i {
			c = gold
		}
		line := fmt.Sprintf("P%d%-6s %3d %-6s %3d %s", i+1, you, e.Round.Scores[i], plural(int(e.Round.Scores[i]), "point"),
			e.Round.Deaths[i], plural(int(e.Round.Deaths[i]), "death"))
		if final {
			line += fmt.Sprintf("  %d %s won", e.Round.Wins[i], plural(int(e.Round.Wins[i]), "round"))
		}
		f.Text(line, x0+96, y, c)
	}
	ask := fmt.Sprintf("Enter: rematch (next round in %d s)", (e.RematchIn+59)/60)
	leave := e.Leave
	switch {
	case e.Round.Final != 0:
		ask = fmt.Sprintf("the match's frames are played: the standings stand (closing in %d s)", (e.ClosesIn+59)/60)
		leave = e.Close
	case e.Asked:
		ask = fmt.Sprintf("rematch asked: waiting for the others (at most %d s)", (e.RematchIn+59)/60)
	}
	f.TextCentred(ask, mid, top+h-44, 1, white)
	f.TextCentred(leave, mid, top+h-26, 1, dimmed)
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Status adds status lines (connecting, a peer that left, waiting for a
// slow peer) in the middle of the top of the arena.
func (f *Frame) Status(lines []string) {
	for i, s := range lines {
		wpx := glyphW*len(s) + 16
		x := (ScreenSize - wpx) / 2
		y := 46 + 24*i
		f.Rect(float32(x), float32(y), float32(wpx), 22, panel)
		f.Text(s, x+8, y+3, alert)
	}
}

// Menu is the title screen.
type Menu struct {
	Items    []string // the choices, in order
	Selected int
	Hints    []string // lines under the menu: the keys, the settings
	Error    string   // what went wrong with the last choice, if anything
	Notice   string   // how the last match ended, if it ended by leaving ("Your opponent left the match.")
	Status   []string // what is happening (hosting, joining...), if anything
}

// Title adds the title screen: the name, the menu, and the status or
// error of the last choice.
func (f *Frame) Title(m Menu) {
	mid := ScreenSize / 2
	f.World(&arena.World{}) // the border
	f.TextCentred("REWIND ARENA", mid, 110, 5, white)
	f.TextCentred("rollback netcode, played", mid, 200, 2, label)
	for i, it := range m.Items {
		y := 270 + 40*i
		c := label
		if i == m.Selected {
			c = white
			f.Rect(float32(mid-260), float32(y-6), 520, 36, panel)
			f.sprite(f.l.ship, float32(mid-240), float32(y+12), ShipColors[0])
		}
		f.TextScaled(fmt.Sprintf("%d  %s", i+1, it), mid-220, y, 2, c)
	}
	y := 290 + 40*len(m.Items)
	for _, h := range m.Hints {
		f.TextCentred(h, mid, y, 1, dimmed)
		y += 18
	}
	y += 10
	for _, s := range m.Status {
		f.TextCentred(s, mid, y, 1, gold)
		y += 18
	}
	if m.Notice != "" {
		for _, s := range wrap(m.Notice, 110) {
			f.TextCentred(s, mid, y, 1, gold)
			y += 18
		}
	}
	if m.Error != "" {
		for _, s := range wrap(m.Error, 110) {
			f.TextCentred(s, mid, y, 1, alert)
			y += 18
		}
	}
}

// wrap breaks s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var lines []string
	for len(s) > n {
		cut := n
		for cut > 0 && s[cut] != ' ' {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		lines = append(lines, s[:cut])
		s = s[min(cut+1, len(s)):]
	}
	return append(lines, s)
}
