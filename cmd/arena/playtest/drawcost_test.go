package playtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oneCore is the CPU time a frame may cost for 60 frames a second on
// one core: 1000/60 ms.
const oneCore = 1000.0 / 60

// TestDrawCost: the drawing's cost with 4 ships, one game alone (no
// peer, 4 bots, the overlay shown, -max-fps 60) pinned to one core with
// taskset, for the 1200 frames of a match and its standings. Its -result
// JSON is play-test-out/solo.json. The frame rate and the wall-time
// percentiles follow whatever else the machine runs, so they are
// reported, not judged; the CPU time a drawn frame costs the game's
// process (its share of Mesa's software rasterizing included) is judged
// against what one core has at 60 frames a second. The X server's CPU
// time over the run is reported beside it, per drawn frame: on one core
// it comes out of the same budget.
func TestDrawCost(t *testing.T) {
	if os.Getenv("ARENA_PLAY_TEST") != "1" || os.Getenv("DISPLAY") == "" {
		t.Skip("needs an X server: run make play-test")
	}
	out := os.Getenv("ARENA_PLAY_OUT")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "solo.json")
	_ = os.Remove(path)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "arena")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	args := []string{"-solo", "-humans", "0", "-players", "4", "-frames", "1200", "-overlay", "-mute", "-max-fps", "60",
		"-window-x", "0", "-window-y", "0", "-result", path}
	name, core := bin, "every core"
	if n := runtime.NumCPU(); n > 1 {
		if _, err := exec.LookPath("taskset"); err != nil {
			t.Fatalf("taskset (util-linux) is missing: %v", err)
		}
		core = fmt.Sprintf("CPU %d", n-1)
		args = append([]string{"-c", strconv.Itoa(n - 1), bin}, args...)
		name = "taskset"
	}
	x := xServer(os.Getenv("DISPLAY"))
	x0 := procCPU(x)
	load0 := readLoad()
	p := start(ctx, t, name, args...)
	r := p.result(t, path)
	x1 := procCPU(x)
	if !r.Done || r.Frame != 1200 || r.Err != "" {
		t.Errorf("done %v at frame %d (want 1200), error %q", r.Done, r.Frame, r.Err)
	}
	pf := r.Perf
	if pf.FPS <= 0 || pf.DrawP50 <= 0 || pf.RenderP50 <= 0 || pf.CPUPerFrame <= 0 {
		t.Fatalf("the drawing's figures are missing: %+v", pf)
	}
	xs := "the X server's unknown"
	if x0 >= 0 && x1 >= x0 && r.Draws > 0 {
		xs = fmt.Sprintf("the X server's %.1f ms a drawn frame", float64((x1-x0).Microseconds())/1000/float64(r.Draws))
	}
	t.Logf("one game, 4 ships, on %s (load average %s before): %v; %s", core, load0, pf, xs)
	if pf.CPUPerFrame > oneCore {
		t.Errorf("a drawn frame cost the game %.1f ms of CPU: more than one core has for 60 frames a second (%.1f ms)", pf.CPUPerFrame, oneCore)
	}
}

// readLoad is /proc/loadavg's three load averages, or "unknown".
func readLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// xServer is the process id of the Xvfb serving display (":99", as
// xvfb-run starts it), or 0 when none is found.
func xServer(display string) int {
	display, _, _ = strings.Cut(display, ".")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(b), "\x00")
		if len(argv) > 1 && filepath.Base(argv[0]) == "Xvfb" && argv[1] == display {
			return pid
		}
	}
	return 0
}

// procCPU is the CPU time (user and system) process pid has used, or -1.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th (fields 14 and 15 of proc(5)).
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(u+s) * time.Second / 100 // clock ticks: USER_HZ is 100 on Linux
}
