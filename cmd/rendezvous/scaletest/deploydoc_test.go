package scaletest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/rtc"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// The guide the test follows, from this package's directory.
const deploymentDoc = "../../../docs/deployment.md"

// docBlocks are the shell blocks of the guide that follow a line
// "<!-- deployment-test: NAME -->", by name.
func docBlocks(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(deploymentDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string]string{}
	var name string
	var in bool
	var block strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case in && line == "```":
			blocks[name], name, in = block.String(), "", false
			block.Reset()
		case in:
			block.WriteString(line + "\n")
		case name != "" && strings.HasPrefix(line, "```"):
			in = true
		default:
			if n, ok := strings.CutPrefix(line, "<!-- deployment-test: "); ok {
				name = strings.TrimSuffix(n, " -->")
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// shell runs a block of the guide with bash in a directory of its own
// (./rendezvous in it, as the guide builds it; nats-server on PATH;
// caddy from the system), in a process group that is killed when the
// test ends.
func shell(t *testing.T, name, script string) *proc {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(bin, "rendezvous"), filepath.Join(dir, "rendezvous")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{name: name, cmd: cmd, out: &nettest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, tail(p.out.String(), 60))
		}
	})
	return p
}

// health is /healthz's answer at base.
func health(t *testing.T, base string) (store string, matches int) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Store   string `json:"store"`
		Matches int    `json:"matches"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &h) != nil {
		t.Fatalf("%s/healthz: %d %s", base, resp.StatusCode, b)
	}
	return h.Store, h.Matches
}

// TestDeploymentDoc follows docs/deployment.md in a network namespace of
// its own with nothing else running: the blocks marked for it are run as
// written, and two machines play through what they started.
func TestDeploymentDoc(t *testing.T) {
	blocks := docBlocks(t)
	for _, name := range []string{"alone", "cluster"} {
		if blocks[name] == "" {
			t.Fatalf("%s has no block %q", deploymentDoc, name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("alone", func(t *testing.T) {
		// The binary with no flags: the lobby on NATS embedded in it,
		// its own TURN relay; the media forced through the relay.
		p := shell(t, "alone", blocks["alone"])
		const base = "http://127.0.0.1:8080"
		waitHTTP(t, p, base+"/healthz", 30*time.Second)
		if store, _ := health(t, base); store != "nats-embedded" {
			t.Fatalf("store %q with no flags, want nats-embedded", store)
		}
		host, err := lobby.Create(ctx, base, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		guest, err := lobby.Join(ctx, base, host.Code(), nil)
		if err != nil {
			t.Fatal(err)
		}
		play(t, ctx, []*lobby.Client{host, guest}, []rtc.Signaler{host, guest}, true)
	})

	t.Run("cluster", func(t *testing.T) {
		// Three NATS nodes, three instances, a balancer: a match made on
		// one instance is seen by another and joined through the
		// balancer.
		p := shell(t, "cluster", blocks["cluster"])
		const balancer = "http://127.0.0.10:8080"
		waitHTTP(t, p, balancer+"/healthz", time.Minute)
		var instances []string
		for i := range 3 {
			base := fmt.Sprintf("http://127.0.0.1%d:8080", i+1)
			waitHTTP(t, p, base+"/healthz", time.Minute)
			if store, _ := health(t, base); store != "nats" {
				t.Fatalf("%s: store %q, want nats", base, store)
			}
			instances = append(instances, base)
		}
		host, err := lobby.Create(ctx, instances[0], 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, n := health(t, instances[2]); n != 1 {
			t.Fatalf("%s holds %d matches after one was made on %s, want 1", instances[2], n, instances[0])
		}
		guest, err := lobby.Join(ctx, balancer, host.Code(), nil)
		if err != nil {
			t.Fatal(err)
		}
		play(t, ctx, []*lobby.Client{host, guest}, []rtc.Signaler{host, guest}, false)
	})
}
