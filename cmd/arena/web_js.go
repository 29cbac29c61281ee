//go:build js

// The browser build: the same game, its options from the page's URL
// (netplay.Query), its match always through the rendezvous server that
// served the page. What a page script (or a browser test) can read:
//
//	window.rewindStatus      "title", "lobby", "connecting", "playing", "done" or "error: <message>"
//	                         ("title" once the title screen is drawn and reads keys, again after a match is left)
//	window.rewindCode        the match's code, once known
//	window.rewindRoute       how the datagrams travel once connected: each peer's selected
//	                         candidate pair ("host-host", "srflx-host", "relay-relay"...)
//	window.rewindFrame       the match's current frame, once it plays
//	window.rewindResult      the -result JSON as an object, once the game ends (or fails)
//	window.rewindResultJSON  the same, as the JSON text
//
// The element with id "status" shows what happens in words (and, on the
// page that created the match, its code and the link to share; at the
// end, the result in sentences: the winner and the scores); the one with
// id "detail", at the end, the state hash; the one
// with id "route", whether the match is direct or relayed; the <details>
// with id "help" folds away once the title screen shows or the match
// plays; the element with id
// "arena", if any, receives Ebitengine's canvas, which gets the keyboard's
// focus when the match starts.

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"syscall/js"

	"github.com/rewindgg/rewind/cmd/arena/internal/netplay"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
)

// hasUDP says the title screen offers joining by address: a page has no
// UDP sockets.
const hasUDP = false

// closeHint is how the match's standings are cut short: the page then
// says the result under the game.
const closeHint = "Esc: end now (the result shows under the game)"

// waitFlag and connectWaitFlag are what a person changes to wait longer,
// as the waits' announcements and timeouts name them: in a browser, the
// page's timeout parameter sets both.
const (
	waitFlag        = "timeout= in the page's address"
	connectWaitFlag = waitFlag
)

func main() {
	window := js.Global()
	loc := window.Get("location")
	q, err := netplay.ParseQuery(loc.Get("search").String())
	if err != nil {
		_ = publish(options{}, result{Err: err.Error()})
		showStatus(stateError, err.Error())
		select {}
	}
	placeCanvas()
	// Without a code the page opens on the title screen: play against
	// bots, create a match code, or join one by its code.
	o := options{title: q.Code == "", rendezvous: loc.Get("origin").String(), code: q.Code, relay: q.Relay, relayed: q.Relayed, machines: q.Seats, players: q.Seats,
		humans: q.Humans, frames: q.Frames, round: q.Round, target: q.Target, given: q.Given, mute: q.Mute, overlay: q.Overlay, windowX: -1, windowY: -1, wait: q.Timeout, connectWait: q.Timeout}
	_ = run(o) // run has shown and published the outcome
	// Stay: Ebitengine's event handlers still call into the program.
	select {}
}

// placeCanvas moves Ebitengine's canvas (which it appends to the body)
// into the page's #arena element, when the page has one.
func placeCanvas() {
	doc := js.Global().Get("document")
	area := doc.Call("getElementById", "arena")
	canvas := doc.Call("querySelector", "canvas")
	if area.Truthy() && canvas.Truthy() {
		area.Call("appendChild", canvas)
	}
}

// statusElement is the page's #status element (a null Value if none).
func statusElement() js.Value {
	return js.Global().Get("document").Call("getElementById", "status")
}

// showStatus sets window.rewindStatus and the status element's text.
func showStatus(state, text string) {
	s := state
	if state == stateError {
		s = "error: " + text
	}
	js.Global().Set("rewindStatus", s)
	if (state == stateLobby || state == stateConnecting) && text != "" {
		board.add(text) // the title screen's status too
	}
	const choose = "Choose how to play on the game's title screen: a number, or Up/Down and Enter."
	switch {
	case text == "" && state == statePlaying:
		text = "Playing."
	case text == "" && state == stateTitle:
		text = choose
	case state == stateTitle: // how the last match ended (it was left), then the choice
		text += " " + choose
	}
	if state == stateError {
		text = "Error: " + text
	}
	if el := statusElement(); el.Truthy() && text != "" {
		el.Set("textContent", text)
	}
	if state == statePlaying || state == stateTitle {
		doc := js.Global().Get("document")
		if help := doc.Call("getElementById", "help"); help.Truthy() {
			// The game needs the room now, and its title screen says
			// how to choose; a click opens the help again.
			help.Set("open", false)
		}
		// The keys go to the game without a click first.
		if canvas := doc.Call("querySelector", "canvas"); canvas.Truthy() {
			canvas.Call("setAttribute", "tabindex", "0")
			canvas.Call("focus")
		}
	}
	fmt.Println(s + ": " + text) // the console
}

// showEnd shows how the match ended in the status element (the winner,
// the scores) and the state hash in the detail element, a smaller line.
func showEnd(sentences, detail string) {
	showStatus(stateDone, sentences)
	if el := js.Global().Get("document").Call("getElementById", "detail"); el.Truthy() {
		el.Set("textContent", detail)
		el.Set("hidden", false)
	}
	fmt.Println(detail) // the console
}

// showCode shows the code of the match this page created and the link
// that joins it, and puts the code in this page's URL.
func showCode(o options, code string) {
	window := js.Global()
	window.Set("rewindCode", code)
	loc := window.Get("location")
	link := loc.Get("origin").String() + loc.Get("pathname").String() + netplay.Share(code, o.frames)
	window.Get("history").Call("replaceState", nil, "", netplay.WithCode(loc.Get("search").String(), code))
	fmt.Printf("lobby: match code %s; join it at %s\n", code, link) // the console
	board.add(fmt.Sprintf("match code %s: waiting for %d more player(s); the link is under the game", code, o.machines-1))
	el := statusElement()
	if !el.Truthy() {
		return
	}
	doc := window.Get("document")
	el.Set("textContent", fmt.Sprintf("Match code %s: waiting for %d more player(s). Share this link: ", code, o.machines-1))
	a := doc.Call("createElement", "a")
	a.Set("href", link)
	a.Set("textContent", link)
	el.Call("appendChild", a)
}

// showRoute sets window.rewindRoute and says in the #route element
// whether the match is direct or relayed.
func showRoute(routes []string) {
	js.Global().Set("rewindRoute", strings.Join(routes, " "))
	fmt.Printf("connected: routes %v\n", routes) // the console
	text := "Route: unknown (the browser gave no statistics)."
	if len(routes) == 1 && strings.HasPrefix(routes[0], "match relay ") {
		text = "Route: through the match relay (" + strings.TrimPrefix(routes[0], "match relay ") + "): no player sees another's address."
	} else if len(routes) > 0 {
		relayed := 0
		for _, r := range routes {
			if strings.Contains(r, "relay") {
				relayed++
			}
		}
		switch {
		case relayed == len(routes):
			text = "Route: relayed through the rendezvous's TURN server (" + strings.Join(routes, ", ") + ")."
		case relayed == 0:
			text = "Route: direct, peer to peer (" + strings.Join(routes, ", ") + ")."
		default:
			text = "Route: some peers direct, some relayed (" + strings.Join(routes, ", ") + ")."
		}
	}
	if el := js.Global().Get("document").Call("getElementById", "route"); el.Truthy() {
		el.Set("textContent", text)
		el.Set("hidden", false)
	}
}

// say shows a status line in the console.
func say(s string) {
	fmt.Println(s)
	board.add(s)
}

// showFrame sets window.rewindFrame.
func showFrame(f rollback.Frame) { js.Global().Set("rewindFrame", int(f)) }

// publish sets window.rewindResult (and rewindResultJSON).
func publish(_ options, r result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	window := js.Global()
	window.Set("rewindResultJSON", string(b))
	window.Set("rewindResult", window.Get("JSON").Call("parse", string(b)))
	fmt.Println("result: " + string(b)) // the console
	return nil
}

// setUp is the native build's UDP lobby: a page has no sockets, and
// always meets through the rendezvous.
func setUp(options) (play.Config, func(), string, error) {
	return play.Config{}, nil, "", errors.New("in a browser the arena plays through the rendezvous only")
}
