package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/inpututil"

	"github.com/rewindgg/rewind/cmd/arena/internal/draw"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
)

// The title screen's choices.
const (
	itemSolo     = iota
	itemHost     // on UDP, or a match code at the rendezvous
	itemJoinAddr // not in a browser (no UDP)
	itemJoinCode // only with a rendezvous
)

// titleMenu is the title screen's state: UI only, outside the
// simulation.
type titleMenu struct {
	selected int    // an index of kinds
	kinds    []int  // the choices shown, in order
	addr     []rune // the address typed for itemJoinAddr
	code     []rune // the code typed for itemJoinCode
	err      string // why the last choice failed
	notice   string // how the last match ended, when it was left (play.Flow's Notice)
	chars    []rune
}

// setupResult is what a choice's setup (on its own goroutine) returns.
type setupResult struct {
	cfg      play.Config
	closeNet func()
	title    string
	err      error
}

// items are the choices, as the menu shows them (and t.kinds, what they
// are).
func (t *titleMenu) items(o options) []string {
	t.kinds = t.kinds[:0]
	var it []string
	add := func(kind int, label string) {
		t.kinds = append(t.kinds, kind)
		if len(t.kinds)-1 == t.selected && (kind == itemJoinAddr || kind == itemJoinCode) {
			label += "_" // the cursor
		}
		it = append(it, label)
	}
	bots := max(o.players, 1) - max(o.humans, 1)
	if bots == 1 {
		add(itemSolo, "Play against 1 bot")
	} else {
		add(itemSolo, fmt.Sprintf("Play against %d bots", bots))
	}
	if o.rendezvous != "" {
		add(itemHost, "Create a match code at "+strings.TrimPrefix(strings.TrimPrefix(o.rendezvous, "https://"), "http://"))
	} else {
		add(itemHost, fmt.Sprintf("Host a match on UDP %s", o.listen))
	}
	if hasUDP {
		add(itemJoinAddr, "Join by address: "+string(t.addr))
	}
	if o.rendezvous != "" {
		add(itemJoinCode, "Join by code: "+string(t.code))
	}
	return it
}

// kind is the selected choice's.
func (t *titleMenu) kind() int {
	if t.selected < len(t.kinds) {
		return t.kinds[t.selected]
	}
	return itemSolo
}

// view is the menu as package draw shows it.
func (t *titleMenu) view(o options, busy bool) draw.Menu {
	typed := "type the address or the code"
	if !hasUDP {
		typed = "type the code"
	}
	m := draw.Menu{Items: t.items(o), Selected: t.selected, Error: t.err, Notice: t.notice,
		Hints: []string{
			fmt.Sprintf("Up/Down and Enter, or a number; %s; Esc quits (or stops a wait)", typed),
			fmt.Sprintf("%v (-round, -target and -frames; a joiner plays the host's)", o.settings()),
			fmt.Sprintf("%d ships, %d machines when hosting (-players, -machines); WASD thrusts, the arrows fire, Tab shows the netcode", o.players, o.machines),
		}}
	if !hasUDP {
		m.Hints[1] = fmt.Sprintf("%v (round=, target= and frames= in the address; a joiner plays the creator's)", o.settings())
		m.Hints[2] = fmt.Sprintf("%d machines when creating (seats=); WASD thrusts, the arrows fire, Tab shows the netcode", o.machines)
	}
	if busy {
		m.Status = board.get()
	}
	return m
}

// updateTitle reads the title screen's keys and, once a choice is set up,
// starts the match.
func (g *game) updateTitle() error {
	t := &g.menu
	if g.setup != nil {
		select {
		case r := <-g.setup:
			g.setup = nil
			g.cancelSetup()
			switch {
			case g.cancelled:
				// Escape took the title back while this was set up.
				g.cancelled = false
				if r.err == nil {
					r.closeNet()
				}
				t.err = "Cancelled."
				g.titleDraws = 0 // the status says "title" again once drawn
				return nil
			case r.err != nil:
				t.err = r.err.Error()
				g.titleDraws = 0
				return nil
			}
			g.closeNet = r.closeNet
			if err := g.begin(r.cfg, r.title); err != nil {
				g.err = err
				return errSetUp
			}
		default:
		}
		return nil // keys wait while a choice is set up
	}
	n := len(t.items(g.o))
	field := t.field()
	choose := false
	switch {
	case inpututil.IsKeyJustPressed(ebiten.KeyDown):
		t.selected = (t.selected + 1) % n
	case inpututil.IsKeyJustPressed(ebiten.KeyUp):
		t.selected = (t.selected + n - 1) % n
	case inpututil.IsKeyJustPressed(ebiten.KeyEnter) || inpututil.IsKeyJustPressed(ebiten.KeyNumpadEnter):
		choose = true
	case field != nil && inpututil.IsKeyJustPressed(ebiten.KeyBackspace) && len(*field) > 0:
		*field = (*field)[:len(*field)-1]
	}
	t.chars = ebiten.AppendInputChars(t.chars[:0])
	for _, c := range t.chars {
		switch {
		case field != nil && c > ' ' && c < 127 && len(*field) < 60:
			*field = append(*field, c)
		case field == nil && c >= '1' && int(c-'1') < n:
			// A number chooses; on a field it selects it for typing.
			t.selected = int(c - '1')
			choose = t.field() == nil
		}
	}
	if choose {
		g.choose()
	}
	return nil
}

// field is the text the selected item takes, if it takes any.
func (t *titleMenu) field() *[]rune {
	switch t.kind() {
	case itemJoinAddr:
		return &t.addr
	case itemJoinCode:
		return &t.code
	}
	return nil
}

// choose starts setting up the selected item's match on its own
// goroutine: the lobby's waits say on screen what they wait for.
func (g *game) choose() {
	t := &g.menu
	o := g.o
	// Only the choice says how to meet: a match started by the flags
	// (-host, -join, -code, -solo) and left for this screen is not
	// repeated by another choice.
	o.host, o.join, o.code, o.solo = "", "", "", false
	switch t.kind() {
	case itemSolo:
		o.solo = true
	case itemHost:
		if o.rendezvous == "" {
			o.host = o.listen
		}
	case itemJoinAddr:
		if o.join = strings.TrimSpace(string(t.addr)); o.join == "" {
			t.err = "Type the host's address first, such as 192.0.2.1:7000."
			return
		}
		if !strings.Contains(o.join, ":") {
			o.join += ":7000"
		}
	case itemJoinCode:
		if o.code = strings.TrimSpace(string(t.code)); o.code == "" {
			t.err = "Type the match code first."
			return
		}
	}
	t.err, t.notice = "", ""
	board.clear()
	ch := make(chan setupResult, 1)
	g.setup = ch
	o.ctx, g.cancelSetup = context.WithCancel(context.Background())
	go func() {
		cfg, closeNet, title, err := setUpAny(o)
		ch <- setupResult{cfg, closeNet, title, err}
	}()
}
