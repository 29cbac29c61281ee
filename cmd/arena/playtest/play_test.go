package playtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// frames is the match length: 25 seconds at 60 Hz, in rounds of 8
// seconds (round): three rounds, two round-end screens and rematches.
const (
	frames = 1500
	round  = "8s"
)

// result is the part of cmd/arena's -result JSON the test reads.
type result struct {
	Frame          int      `json:"frame"`
	Done           bool     `json:"done"`
	Hash           string   `json:"hash"`
	Rollbacks      int64    `json:"rollbacks"`
	KeyboardFrames int      `json:"keyboard_frames"`
	Draws          int      `json:"draws"`
	Round          int      `json:"round"`
	Winners        []int    `json:"winners"`
	Standings      string   `json:"standings"`
	Screenshots    []string `json:"screenshots"`
	Perf           perf     `json:"perf"`
	Sounds         struct {
		Played, Triggered, StatefulStarted, Evicted int64
	} `json:"sounds"`
	Audio struct {
		Frames, Audible int64
	} `json:"audio"`
	Err string `json:"error"`
}

// perf is the drawing's figures in the -result JSON (cmd/arena's
// drawstats.go).
type perf struct {
	DrawP50     float64   `json:"draw_p50_ms"`
	DrawP95     float64   `json:"draw_p95_ms"`
	RenderP50   float64   `json:"render_p50_ms"`
	RenderP95   float64   `json:"render_p95_ms"`
	FPS         float64   `json:"fps"`
	TicksPerSec float64   `json:"ticks_per_second"`
	CPUPerFrame float64   `json:"cpu_ms_per_frame"`
	LoadAverage []float64 `json:"load_average"`
}

func (p perf) String() string {
	return fmt.Sprintf("%.1f FPS, %.1f ticks/s; Draw %.2f ms p50, %.2f ms p95; Draw to the next call (the GL's work and the present included) %.1f ms p50, %.1f ms p95; %.1f ms of the process's CPU per drawn frame; load average %v",
		p.FPS, p.TicksPerSec, p.DrawP50, p.DrawP95, p.RenderP50, p.RenderP95, p.CPUPerFrame, p.LoadAverage)
}

// TestPlay: a host with one person (key presses injected through the X
// server) and bots, and a machine of bots joining it, play a 25-second
// match in rounds of 8 seconds over UDP on loopback with the wifi
// profile applied to what each sends. Both start on the title screen:
// the host hosts from it (the key 2), the joiner joins by address (3,
// the address typed, Enter) and plays the host's settings. At the first round-end screen the person
// asks for the rematch (Enter), and so on. The frame limit ends the
// last round: its round-end screen shows the match's standings. Both
// must end on frame 1500 with the same state hash, having seen the same
// round winners and at least one rematch, and say the same standings;
// the keys must have reached the game, the sound the audio device, and
// the screenshots — the title, the match, the winner, the standings,
// each game's own and the X server's screen — must show what they are
// of.
func TestPlay(t *testing.T) {
	if os.Getenv("ARENA_PLAY_TEST") != "1" || os.Getenv("DISPLAY") == "" {
		t.Skip("needs an X server and an audio sink: run make play-test")
	}
	out := os.Getenv("ARENA_PLAY_OUT")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"host-title.png", "host-match.png", "host-winner.png", "host-final.png", "join-title.png", "join-match.png", "join-winner.png", "join-final.png", "screen.png"} {
		_ = os.Remove(filepath.Join(out, name)) // a file left by an earlier run would be taken for this one's
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "arena")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	// -max-fps 60: Xvfb has no vsync, and each game would otherwise draw
	// as fast as the CPU goes, taking it from the other.
	common := []string{"-profile", "wifi", "-overlay", "-screenshot-at", "300", "-max-fps", "60"}
	host := start(ctx, t, bin, append(common, "-listen", "127.0.0.1:0", "-machines", "2", "-players", "4", "-humans", "1",
		"-frames", fmt.Sprint(frames), "-round", round, "-target", "50", "-window-x", "0", "-window-y", "0",
		"-shots", filepath.Join(out, "host-"), "-screenshot", filepath.Join(out, "host.png"), "-result", filepath.Join(out, "host.json"))...)
	// The title screen: saved once it has shown for 30 frames; then the
	// person chooses "2  Host a match".
	title := filepath.Join(out, "host-title.png")
	host.awaitFile(t, title, time.Minute)
	win := strings.Fields(run(ctx, t, "xdotool", "search", "--sync", "--name", "Rewind arena"))[0]
	_ = exec.Command("xdotool", "windowfocus", "--sync", win).Run()
	run(ctx, t, "xdotool", "key", "2")
	addr := host.await(t, regexp.MustCompile(`hosting on (\S+):`))
	// The joiner starts on its title screen too: "3  Join by address",
	// the host's address typed, Enter.
	join := start(ctx, t, bin, append(common, "-humans", "0", "-window-x", "800", "-window-y", "0",
		"-shots", filepath.Join(out, "join-"), "-screenshot", filepath.Join(out, "join.png"), "-result", filepath.Join(out, "join.json"))...)
	join.awaitFile(t, filepath.Join(out, "join-title.png"), time.Minute)
	var joinWin string
	for _, w := range strings.Fields(run(ctx, t, "xdotool", "search", "--name", "Rewind arena")) {
		if w != win {
			joinWin = w
		}
	}
	_ = exec.Command("xdotool", "windowfocus", "--sync", joinWin).Run()
	run(ctx, t, "xdotool", "key", "3")
	run(ctx, t, "xdotool", "type", "--delay", "40", addr)
	run(ctx, t, "xdotool", "key", "Return")
	join.await(t, regexp.MustCompile(`machine 1 of 2`))
	host.await(t, regexp.MustCompile(`machine 0 of 2`))

	// The person at the host: focus its window and press keys through the
	// X server (XTEST), as a keyboard would. The script's timing is the
	// input itself (how long each key is held), not a wait for an event,
	// but for two: the screen is saved once the host's match shot is
	// (both windows in play), and Enter is pressed for the rematch once
	// the first round-end screen is saved.
	screenshotDone := make(chan struct{})
	go func() {
		defer close(screenshotDone)
		presses := [][]string{{"d"}, {"d", "Up"}, {"s"}, {"s", "Left"}, {"a", "Right"}, {"w"}, {"w", "Down"}, {}}
		var held []string
		shot := false
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for k := 0; ; k++ {
			_ = exec.Command("xdotool", "windowfocus", win).Run()
			if len(held) > 0 {
				_ = exec.Command("xdotool", append([]string{"keyup"}, held...)...).Run()
			}
			held = presses[k%len(presses)]
			if len(held) > 0 {
				_ = exec.Command("xdotool", append([]string{"keydown"}, held...)...).Run()
			}
			if exists(filepath.Join(out, "host-winner.png")) {
				_ = exec.Command("xdotool", "key", "Return").Run()
			}
			if !shot && exists(filepath.Join(out, "host-match.png")) {
				shot = true
				screen(t, out)
			}
			select {
			case <-host.exited:
				return
			case <-tick.C:
			}
		}
	}()
	hr, jr := host.result(t, filepath.Join(out, "host.json")), join.result(t, filepath.Join(out, "join.json"))
	<-screenshotDone

	for name, r := range map[string]result{"host": hr, "joiner": jr} {
		if !r.Done || r.Frame != frames || r.Err != "" {
			t.Errorf("%s: done %v at frame %d (want %d), error %q", name, r.Done, r.Frame, frames, r.Err)
		}
		if r.Draws == 0 {
			t.Errorf("%s drew nothing", name)
		}
		// The drawing's figures are reported, not judged: two games, Xvfb
		// and its software GL share the machine's cores with whatever else
		// runs, and the frame rate follows the load (a present costs
		// about 12 ms of CPU here whatever the game draws). Only their
		// presence is checked.
		if p := r.Perf; p.FPS <= 0 || p.DrawP50 <= 0 || p.RenderP50 <= 0 || p.TicksPerSec <= 0 {
			t.Errorf("%s: the drawing's figures are missing: %+v", name, p)
		}
		t.Logf("%s drew: %v", name, r.Perf)
		// Real time through a real sink: at least 5 of the 20 seconds
		// (48,000 frames a second) were pulled by the audio device, and some
		// of it was not silence.
		if r.Audio.Frames < 5*48000 || r.Audio.Audible == 0 {
			t.Errorf("%s: %d audio frames, %d audible: the sound did not reach the device", name, r.Audio.Frames, r.Audio.Audible)
		}
		if r.Sounds.Played == 0 || r.Sounds.Triggered == 0 || r.Sounds.StatefulStarted == 0 || r.Sounds.Evicted != 0 {
			t.Errorf("%s: sounds %+v", name, r.Sounds)
		}
	}
	if hr.Hash != jr.Hash {
		t.Errorf("the machines ended on different states: %s and %s", hr.Hash, jr.Hash)
	}
	if hr.KeyboardFrames < 100 {
		t.Errorf("the injected keys gave %d frames of input: they did not reach the game", hr.KeyboardFrames)
	}
	if hr.Rollbacks+jr.Rollbacks == 0 {
		t.Error("no rollback over wifi: the match proved nothing about rollback")
	}
	for _, name := range []string{"host.png", "join.png", "host-match.png"} {
		img := readPNG(t, filepath.Join(out, name))
		checkArena(t, name, img, img.Bounds())
	}
	// The rounds: the host saw a round-end screen and a rematch (a second
	// round at least), and both machines saw the same winners.
	if hr.Round < 2 || len(hr.Winners) == 0 {
		t.Errorf("the host ended in round %d after the round-end screens %v: no round ended, or no rematch", hr.Round, hr.Winners)
	}
	if !sameWinners(hr.Winners, jr.Winners) || hr.Round != jr.Round {
		t.Errorf("the machines disagree on the rounds: the host round %d, winners %v; the joiner round %d, winners %v", hr.Round, hr.Winners, jr.Round, jr.Winners)
	}
	checkPanel(t, "host-title.png", readPNG(t, title), 5000)
	checkPanel(t, "host-winner.png", readPNG(t, filepath.Join(out, "host-winner.png")), 60000)
	// The frame limit's standings: the last round's result, the same on
	// both, in sentences, and on screen.
	// (Each names its own people's ships "(you)".)
	mine := func(s string) string { return strings.ReplaceAll(s, " (you)", "") }
	if hr.Standings == "" || mine(hr.Standings) != mine(jr.Standings) || !regexp.MustCompile(`^(P\d+ (\(you\) )?won the match|The match was a draw)`).MatchString(hr.Standings) || !strings.Contains(hr.Standings, "Scores: ") {
		t.Errorf("the match's standings: the host says %q, the joiner %q", hr.Standings, jr.Standings)
	}
	for _, name := range []string{"host-final.png", "join-final.png"} {
		checkPanel(t, name, readPNG(t, filepath.Join(out, name)), 60000)
	}
	t.Logf("standings: %s", hr.Standings)
	t.Logf("round %d at the end; round winners %v (-1: a draw, -2: not shown); screenshots %v and %v", hr.Round, hr.Winners, hr.Screenshots, jr.Screenshots)
	t.Logf("host %+v\njoiner %+v", hr, jr)
}

// TestLeave: "rematch or leave". A host (one person, idle) and a joiner
// (bots), started by their flags, play rounds of 2 seconds. Once the
// host's first round-end screen is saved, the person presses Escape: the
// host leaves the match for its title screen ("You left the match."),
// and the joiner, its opponent gone at the round-end screen, says "your
// opponent left the match" and goes to its title screen too, saying so,
// rather than waiting out the rematch. Escape on each title screen then
// quits, each saying it was left from there.
func TestLeave(t *testing.T) {
	if os.Getenv("ARENA_PLAY_TEST") != "1" || os.Getenv("DISPLAY") == "" {
		t.Skip("needs an X server: run make play-test")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "arena")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	common := []string{"-mute", "-max-fps", "60", "-round", "2s"}
	host := start(ctx, t, bin, append(common, "-host", "127.0.0.1:0", "-machines", "2", "-players", "2", "-humans", "1",
		"-window-x", "0", "-window-y", "0", "-shots", filepath.Join(out, "host-"), "-result", filepath.Join(out, "host.json"))...)
	addr := host.await(t, regexp.MustCompile(`hosting on (\S+):`))
	join := start(ctx, t, bin, append(common, "-join", addr, "-humans", "0", "-window-x", "800", "-window-y", "0",
		"-result", filepath.Join(out, "join.json"))...)
	host.awaitFile(t, filepath.Join(out, "host-winner.png"), time.Minute)
	key := func(p *process, k string) {
		t.Helper()
		win := strings.Fields(run(ctx, t, "xdotool", "search", "--sync", "--pid", fmt.Sprint(p.cmd.Process.Pid)))[0]
		_ = exec.Command("xdotool", "windowfocus", "--sync", win).Run()
		run(ctx, t, "xdotool", "key", k)
	}
	// A tap can go unseen under load (make play-test once waited out its
	// 120 s for this line after one press): Escape is pressed again every
	// 3 s until the host says it left. A press it saw says so within a
	// frame or two, so a second press does not reach its title screen.
	leftLine := regexp.MustCompile(`^You left the match\.$`)
	for try := 0; ; try++ {
		key(host, "Escape")
		if _, ok := host.awaitWithin(t, leftLine, 3*time.Second); ok {
			break
		}
		if try == 10 {
			t.Fatalf("the host never left the match after %d presses of Escape\n%s", try+1, host.log.String())
		}
	}
	left := join.await(t, regexp.MustCompile(`^(.*your opponent left the match.*)$`))
	if left != "The match is over: your opponent left the match at the round-end screen." {
		t.Errorf("the joiner's title screen says %q", left)
	}
	quitLine := regexp.MustCompile(`^Left from the title screen \(the last match was left at frame (\d+)\)\.$`)
	for name, p := range map[string]*process{"the host": host, "the joiner": join} {
		// A key tapped while the title screen is being set up, or
		// shorter than the frame that polls it, can go unseen (CI saw
		// the host miss one once): it is pressed again, every 2 s, until
		// the game says it quit (a second Escape on the title quits too).
		var quit string
		for try := 0; ; try++ {
			key(p, "Escape")
			var ok bool
			if quit, ok = p.awaitWithin(t, quitLine, 2*time.Second); ok {
				break
			}
			if try == 10 {
				t.Fatalf("%s never quit from its title screen after %d presses of Escape\n%s", name, try+1, p.log.String())
			}
		}
		t.Logf("%s left the match at frame %s, then quit from the title screen", name, quit)
	}
	for _, name := range []string{"host.json", "join.json"} {
		p := host
		if name == "join.json" {
			p = join
		}
		if r := p.result(t, filepath.Join(out, name)); r.Done || r.Err != "" || r.Round != 1 || len(r.Winners) != 1 {
			t.Errorf("%s: %+v: want the match left in round 1 after its round-end screen, no error", name, r)
		}
	}
}

// checkPanel checks that img shows at least n pixels of the panels the
// title and the round-end screen draw (package draw's panel colour over
// the background).
func checkPanel(t *testing.T, name string, img image.Image, n int) {
	t.Helper()
	count := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(color.RGBAModel.Convert(img.At(x, y)).(color.RGBA), color.RGBA{9, 10, 20, 255}, 2) {
				count++
			}
		}
	}
	if count < n {
		t.Errorf("%s shows %d pixels of a panel, want %d: not the screen it should be", name, count, n)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// screen saves the X server's whole screen (both windows) as screen.png
// and checks each window's part of it.
func screen(t *testing.T, out string) {
	b, err := exec.Command("xwd", "-root", "-silent").Output()
	if err != nil {
		t.Errorf("xwd: %v", err)
		return
	}
	img, err := decodeXWD(bytes.NewReader(b))
	if err != nil {
		t.Errorf("screen: %v", err)
		return
	}
	f, err := os.Create(filepath.Join(out, "screen.png"))
	if err == nil {
		err = png.Encode(f, img)
		f.Close()
	}
	if err != nil {
		t.Error(err)
	}
	// The windows were placed at x 0 and 800 (a window manager-less
	// server puts them there exactly); each is 768 pixels square.
	checkArena(t, "screen (host window)", img, image.Rect(0, 0, 768, 768))
	checkArena(t, "screen (joiner window)", img, image.Rect(800, 0, 1568, 768))
}

// checkArena checks that r of img shows the arena in play: mostly the
// dark background, ships in at least two of the players' colours, and
// shots (their white cores).
func checkArena(t *testing.T, name string, img image.Image, r image.Rectangle) {
	t.Helper()
	ships := []color.RGBA{{255, 90, 90, 255}, {90, 170, 255, 255}, {120, 230, 110, 255}, {250, 210, 80, 255}}
	var background, white int
	shipPixels := make([]int, len(ships))
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			switch {
			case near(c, color.RGBA{14, 16, 30, 255}, 8):
				background++
			case near(c, color.RGBA{255, 255, 255, 255}, 12):
				white++
			}
			for i, s := range ships {
				if near(c, s, 12) {
					shipPixels[i]++
				}
			}
		}
	}
	total := r.Dx() * r.Dy()
	colours := 0
	for _, n := range shipPixels {
		if n >= 50 { // a ship is a disc of about 250 pixels
			colours++
		}
	}
	if background < total/2 || colours < 2 || white < 3 {
		t.Errorf("%s does not show the arena in play: %d of %d pixels background, ship colours %v, %d white (shots)",
			name, background, total, shipPixels, white)
	}
}

func near(a, b color.RGBA, d int) bool {
	abs := func(x int) int { return max(x, -x) }
	return abs(int(a.R)-int(b.R)) <= d && abs(int(a.G)-int(b.G)) <= d && abs(int(a.B)-int(b.B)) <= d
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func run(ctx context.Context, t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(b)
}

// process is one running game.
type process struct {
	cmd    *exec.Cmd
	lines  chan string
	exited chan struct{}
	err    error
	log    bytes.Buffer
}

func start(ctx context.Context, t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.CommandContext(ctx, bin, args...), lines: make(chan string, 64), exited: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// await returns the first submatch of the first line of output matching
// re, waiting for it until the process exits.
func (p *process) await(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	m, _ := p.awaitWithin(t, re, -1)
	return m
}

// awaitWithin is await for at most d (negative: no bound): ok is false
// when re did not match a line by then. A process that exits has its
// last lines read first: they were printed before it exited.
func (p *process) awaitWithin(t *testing.T, re *regexp.Regexp, d time.Duration) (string, bool) {
	t.Helper()
	var deadline <-chan time.Time
	if d >= 0 {
		deadline = time.After(d)
	}
	match := func(line string) (string, bool) {
		m := re.FindStringSubmatch(line)
		switch {
		case m == nil:
			return "", false
		case len(m) > 1:
			return m[1], true
		}
		return m[0], true
	}
	for {
		select {
		case line := <-p.lines:
			if m, ok := match(line); ok {
				return m, true
			}
		case <-p.exited:
			for {
				select {
				case line := <-p.lines:
					if m, ok := match(line); ok {
						return m, true
					}
					continue
				default:
				}
				break
			}
			t.Fatalf("%v exited (%v) before printing %v\n%s", p.cmd.Args, p.err, re, p.log.String())
		case <-deadline:
			return "", false
		}
	}
}

// awaitFile waits, at most d, until the process has written the PNG at
// path: the game writes it beside path and renames it (cmd/arena's
// save), so the file is whole once it exists; it must also decode. There
// is no event to wait on (the game tells nobody), so it polls, and fails
// naming the file at the deadline or when the process exits first.
func (p *process) awaitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		if f, err := os.Open(path); err == nil {
			_, derr := png.Decode(f)
			f.Close()
			if derr == nil {
				return
			}
			t.Fatalf("%s exists but is not a whole PNG (the game renames it into place whole): %v", path, derr)
		}
		select {
		case <-p.exited:
			t.Fatalf("%v exited (%v) before writing %s\n%s", p.cmd.Args, p.err, path, p.log.String())
		case <-deadline:
			t.Fatalf("waiting for %v to write %s: not there after %v\n%s", p.cmd.Args, path, d, p.log.String())
		case <-poll.C:
		}
	}
}

// result waits for the process to exit and reads its -result file.
func (p *process) result(t *testing.T, path string) result {
	t.Helper()
	<-p.exited
	if p.err != nil {
		t.Errorf("%v: %v\n%s", p.cmd.Args, p.err, p.log.String())
	}
	var r result
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, p.log.String())
	}
	return r
}

// sameWinners reports whether two machines' round winners (by round
// number) agree on every round both showed the end of (-2: not shown: a
// round-end screen shorter than a drawn frame).
func sameWinners(a, b []int) bool {
	for k := range min(len(a), len(b)) {
		if a[k] != -2 && b[k] != -2 && a[k] != b[k] {
			return false
		}
	}
	return true
}
