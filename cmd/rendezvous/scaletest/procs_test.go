package scaletest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v3"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
)

// bin is the directory of the binaries (REWIND_SCALE_BIN).
var bin = os.Getenv("REWIND_SCALE_BIN")

func TestMain(m *testing.M) {
	if bin == "" {
		fmt.Println("scaletest: REWIND_SCALE_BIN is not set: run make scale-test")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// proc is a process a test started; it is killed when the test ends.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *nettest.SyncBuffer
	done chan struct{}
}

func start(t *testing.T, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(path, args...), out: &nettest.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, tail(p.out.String(), 40))
		}
	})
	return p
}

// kill ends p at once (SIGKILL: no goodbye) and waits for it.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// rss is p's resident memory in bytes.
func (p *proc) rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for %s", p.name)
	return 0
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}

// freePort is a TCP or UDP port free on ip now.
func freePort(t *testing.T, network, ip string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp4", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP waits until url answers 200, or fails the test after d.
func waitHTTP(t *testing.T, p *proc, url string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not answer %s within %v (last: %s)", p.name, url, d, last)
		case <-p.done:
			t.Fatalf("%s exited before answering %s", p.name, url)
		case <-tick.C:
		}
	}
}

// natsNode is one node of the cluster.
type natsNode struct {
	*proc
	client, monitor int // ports on 127.0.0.1
}

func (n *natsNode) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.client) }

// natsCluster starts n nats-server nodes (JetStream, file storage) routed
// to each other, and waits until each says it is healthy (its JetStream
// has a meta leader).
func natsCluster(t *testing.T, n int) []*natsNode {
	t.Helper()
	nodes := make([]*natsNode, n)
	routes := make([]string, n)
	routePorts := make([]int, n)
	for i := range nodes {
		nodes[i] = &natsNode{client: freePort(t, "tcp", "127.0.0.1"), monitor: freePort(t, "tcp", "127.0.0.1")}
		routePorts[i] = freePort(t, "tcp", "127.0.0.1")
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i])
	}
	dir := t.TempDir()
	for i, node := range nodes {
		name := fmt.Sprintf("nats-%d", i)
		node.proc = start(t, name, filepath.Join(bin, "nats-server"),
			"-n", name, "-a", "127.0.0.1", "-p", strconv.Itoa(node.client), "-m", strconv.Itoa(node.monitor),
			"--cluster_name", "rewind", "--cluster", routes[i], "--routes", strings.Join(routes, ","),
			"-js", "-sd", filepath.Join(dir, name))
	}
	for _, node := range nodes {
		waitHTTP(t, node.proc, fmt.Sprintf("http://127.0.0.1:%d/healthz", node.monitor), 30*time.Second)
	}
	return nodes
}

func natsURLs(nodes []*natsNode) string {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.url())
	}
	return strings.Join(urls, ",")
}

// instance is one rendezvous process.
type instance struct {
	*proc
	base string
}

// rendezvous starts an instance serving HTTP on ip:8080 with the given
// extra flags, limits raised for a load from one address, and waits for
// its /healthz.
func rendezvous(t *testing.T, name, ip string, args ...string) *instance {
	t.Helper()
	addr := ip + ":8080"
	all := append([]string{"-http", addr, "-rate", "0", "-max-matches", "100000", "-max-matches-per-ip", "100000",
		"-max-queued-per-ip", "1073741824", "-max-queued", "1073741824", "-max-conns", "100000", "-max-conns-per-ip", "100000",
		"-guess-burst", "100000", "-max-polls", "100000"}, args...)
	p := start(t, name, filepath.Join(bin, "rendezvous"), all...)
	in := &instance{proc: p, base: "http://" + addr}
	waitHTTP(t, p, in.base+"/healthz", 30*time.Second)
	return in
}

// coturn starts Debian's coturn on ip:3478 with the TURN REST secret,
// loopback peers allowed (everything here is on loopback), and returns
// its turn: URL.
func coturn(t *testing.T, ip, secret string) string {
	t.Helper()
	path, err := exec.LookPath("turnserver")
	if err != nil {
		t.Fatal("coturn's turnserver is not installed (scale-test.sh installs it)")
	}
	dir := t.TempDir()
	start(t, "coturn", path, "-n", "--no-cli", "--no-tls", "--no-dtls",
		"--listening-ip="+ip, "--relay-ip="+ip, "--listening-port=3478", "--realm=rewind",
		"--use-auth-secret", "--static-auth-secret="+secret, "--allow-loopback-peers",
		"--pidfile="+filepath.Join(dir, "turnserver.pid"), "--userdb="+filepath.Join(dir, "turndb"),
		"--log-file=stdout", "--simple-log")
	// Ready when it answers a STUN binding request.
	conn, err := net.ListenPacket("udp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := &net.UDPAddr{IP: net.ParseIP(ip), Port: 3478}
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1500)
	for time.Now().Before(deadline) {
		req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
		conn.WriteTo(req.Raw, to)
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, _, err := conn.ReadFrom(buf); err == nil && stun.IsMessage(buf[:n]) {
			return "turn:" + ip + ":3478?transport=udp"
		}
	}
	t.Fatal("coturn did not answer STUN within 10 s")
	return ""
}
