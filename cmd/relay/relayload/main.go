//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

const (
	players  = 4
	tick     = time.Second / 60
	steps    = 16 // phases a tick
	batchMax = 256
	histBin  = 10 * time.Microsecond
	histBins = 100000 // up to 1 s
)

// level is the figures of one load.
type level struct {
	Matches       int     `json:"matches"`
	Seconds       float64 `json:"seconds"`          // the measured window
	RelayCPU      float64 `json:"relay_cpu"`        // CPU-seconds a second (1 = one core)
	CPUPerMatch   float64 `json:"cpu_per_match"`    // CPU-seconds a second per match
	RSSBase       int64   `json:"rss_base_bytes"`   // before any match opened
	RSS           int64   `json:"rss_bytes"`        // at the end
	RSSPeak       int64   `json:"rss_peak_bytes"`   // VmHWM
	BytesPerMatch float64 `json:"bytes_per_match"`  // (RSS − RSSBase) / matches
	Sent          int64   `json:"envelopes_sent"`   // in the window
	Expected      int64   `json:"records_expected"` // 3 a sent envelope
	Received      int64   `json:"records_received"`
	Corrupt       int64   `json:"records_corrupt"` // not rebuilt byte for byte
	Starved       int     `json:"machines_starved"`
	Loss          float64 `json:"loss"`
	LatencyP50    float64 `json:"latency_p50_ms"`
	LatencyP99    float64 `json:"latency_p99_ms"`
	LatencyMax    float64 `json:"latency_max_ms"`
	ExcessP50     float64 `json:"excess_p50_ms"`
	ExcessP99     float64 `json:"excess_p99_ms"`
	ExcessMax     float64 `json:"excess_max_ms"`
	GeneratorCPU  float64 `json:"generator_cpu"` // the generator's CPU-seconds a second
	MachineCPU    float64 `json:"machine_cpu"`   // every process's and the kernel's (/proc/stat), of 2 on 2 cores
	OthersCPU     float64 `json:"others_cpu"`    // machine − relay − generator: other processes, interrupts
	LoadAvg       string  `json:"loadavg"`       // /proc/loadavg at the window's end
	SendLate      int64   `json:"generator_late_steps"`
	EnvelopeUp    int     `json:"envelope_up_bytes"`
	EnvelopeDown  int     `json:"envelope_down_bytes"`
	Holds         bool    `json:"holds"` // loss ≤ 0.1% and excess p99 ≤ a tick
	RelayMetrics  string  `json:"relay_metrics,omitempty"`
}

type report struct {
	Tick     float64 `json:"tick_ms"`
	Datagram int     `json:"datagram_bytes"`
	Batch    int     `json:"relay_batch"`
	Levels   []level `json:"levels"`
}

func main() {
	bin := flag.String("relay", "", "the relay binary (go build ./cmd/relay)")
	levels := flag.String("levels", "100,250,500,1000", "loads to measure, in matches, comma-separated")
	dur := flag.Duration("duration", 10*time.Second, "measured window a load")
	warm := flag.Duration("warmup", 2*time.Second, "play before the window")
	dsize := flag.Int("datagram", 31, "bytes of each datagram to a peer (sealed: 2-byte header, body, 4-byte MAC)")
	batch := flag.Int("batch", 64, "the relay's -batch")
	cpus := flag.String("relay-cpus", "", "taskset -c list for the relay (empty: none)")
	out := flag.String("out", "relay-load-out/load.json", "the JSON file to write")
	stopAt := flag.Bool("stop", true, "stop at the first load the relay does not hold")
	extra := flag.String("relay-args", "", "more flags for the relay, space-separated (e.g. -cpuprofile /tmp/rs-cpu.out)")
	flag.Parse()
	if *bin == "" || *dsize < 22 || *dsize > 400 {
		fmt.Fprintln(os.Stderr, "relayload: -relay is required, -datagram 22 to 400")
		os.Exit(2)
	}
	rep := report{Tick: float64(tick) / 1e6, Datagram: *dsize, Batch: *batch}
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n*players > 254*200 {
			fmt.Fprintln(os.Stderr, "relayload: bad -levels")
			os.Exit(2)
		}
		l, err := measure(*bin, *cpus, strings.Fields(*extra), n, *batch, *dsize, *warm, *dur)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relayload:", err)
			os.Exit(1)
		}
		fmt.Printf("matches %5d  relay CPU %6.1f%% (%.5f s/s per match)  RSS %6.1f MiB (%.0f B per match)  loss %.4f%%  latency p50 %.2f p99 %.2f max %.2f ms  excess p99 %.2f max %.2f ms  generator CPU %.0f%%  others %.0f%%  holds %v\n",
			l.Matches, 100*l.RelayCPU, l.CPUPerMatch, float64(l.RSS)/(1<<20), l.BytesPerMatch, 100*l.Loss,
			l.LatencyP50, l.LatencyP99, l.LatencyMax, l.ExcessP99, l.ExcessMax, 100*l.GeneratorCPU, 100*l.OthersCPU, l.Holds)
		rep.Levels = append(rep.Levels, l)
		if err := writeJSON(*out, rep); err != nil {
			fmt.Fprintln(os.Stderr, "relayload:", err)
			os.Exit(1)
		}
		if *stopAt && !l.Holds {
			break
		}
	}
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// machineAddr is machine j's address: 127.1.x.y, y from 1 to 254.
func machineAddr(j int, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(j / 254), byte(1 + j%254)}), port)
}

func machineIndex(ip [4]byte) int {
	if ip[0] != 127 || ip[1] != 1 || ip[3] == 0 || ip[3] == 255 {
		return -1
	}
	return int(ip[2])*254 + int(ip[3]) - 1
}

const (
	relayUDP   = "127.0.0.1:7100"
	relayAdmin = "127.0.0.1:7101"
	relayMetr  = "127.0.0.1:7102"
	genPort    = 7200
	token      = "relay-load-token"
)

func measure(bin, cpus string, extra []string, n, batch, dsize int, warm, dur time.Duration) (level, error) {
	l := level{Matches: n}
	args := []string{"-listen", relayUDP, "-admin", relayAdmin, "-metrics", relayMetr, "-stats", "0",
		"-max-matches", strconv.Itoa(n + 10), "-batch", strconv.Itoa(batch), "-rcvbuf", strconv.Itoa(16 << 20)}
	args = append(args, extra...)
	name := bin
	if cpus != "" {
		name, args = "taskset", append([]string{"-c", cpus, bin}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "RELAY_TOKEN="+token)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return l, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	pid := cmd.Process.Pid
	if err := waitListening(relayAdmin, 10*time.Second); err != nil {
		return l, fmt.Errorf("the relay did not start: %v\n%s", err, logs.String())
	}
	l.RSSBase, _ = memory(pid)

	lc := net.ListenConfig{}
	pc, err := lc.ListenPacket(context.Background(), "udp4", fmt.Sprintf("0.0.0.0:%d", genPort))
	if err != nil {
		return l, err
	}
	defer pc.Close()
	conn := pc.(*net.UDPConn)
	if rc, err := conn.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 16<<20)
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, 16<<20)
		})
	}
	p := ipv4.NewPacketConn(conn)
	if err := p.SetControlMessage(ipv4.FlagDst, true); err != nil {
		return l, err
	}
	g, err := newGenerator(p, n, dsize)
	if err != nil {
		return l, err
	}
	l.EnvelopeUp, l.EnvelopeDown = g.upSize, g.downSize
	client := &http.Client{Timeout: 10 * time.Second}
	for m := range n {
		var machines []string
		for s := range players {
			machines = append(machines, machineAddr(m*players+s, genPort).String())
		}
		body, _ := json.Marshal(map[string][]string{"machines": machines})
		req, _ := http.NewRequest(http.MethodPost, "http://"+relayAdmin+"/matches", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return l, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return l, fmt.Errorf("opening match %d: %s", m, resp.Status)
		}
	}

	relayUDPAddr := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(relayUDP))
	start := time.Now()
	k0 := start.Add(warm).UnixNano()/int64(tick) + 1
	k1 := k0 + int64(dur/tick)
	g.window = [2]int64{k0, k1}
	stop := make(chan struct{})
	recvDone := make(chan struct{})
	go func() { g.receive(stop); close(recvDone) }()
	sendDone := make(chan error, 1)
	go func() { sendDone <- g.send(relayUDPAddr, k1+60) }() // a second after the window: its late replies come in

	// The relay's and the generator's CPU over the window.
	waitUntil(time.Unix(0, k0*int64(tick)))
	c0, _ := cpuTime(pid)
	g0 := selfCPU()
	m0 := machineBusy()
	t0 := time.Now()
	waitUntil(time.Unix(0, k1*int64(tick)))
	c1, _ := cpuTime(pid)
	g1 := selfCPU()
	m1 := machineBusy()
	l.LoadAvg = loadAvg()
	t1 := time.Now()
	l.RSS, l.RSSPeak = memory(pid)
	if err := <-sendDone; err != nil {
		return l, err
	}
	close(stop)
	_ = conn.SetReadDeadline(time.Now())
	<-recvDone
	if resp, err := client.Get("http://" + relayMetr + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		l.RelayMetrics = relayFigures(string(b))
	}

	l.Seconds = t1.Sub(t0).Seconds()
	l.RelayCPU = (c1 - c0).Seconds() / l.Seconds
	l.CPUPerMatch = l.RelayCPU / float64(n)
	l.GeneratorCPU = (g1 - g0).Seconds() / l.Seconds
	l.MachineCPU = (m1 - m0).Seconds() / l.Seconds
	l.OthersCPU = l.MachineCPU - l.RelayCPU - l.GeneratorCPU
	l.BytesPerMatch = float64(l.RSS-l.RSSBase) / float64(n)
	l.Sent = g.sent.Load()
	l.Expected = l.Sent * (players - 1)
	l.Received, l.Corrupt = g.received, g.corrupt
	for _, c := range g.perMachine {
		if c == 0 {
			l.Starved++
		}
	}
	if l.Expected > 0 {
		l.Loss = 1 - float64(l.Received)/float64(l.Expected)
	}
	l.SendLate = g.late.Load()
	l.LatencyP50, l.LatencyP99, l.LatencyMax = percentiles(g.latency[:])
	l.ExcessP50, l.ExcessP99, l.ExcessMax = percentiles(g.excess[:])
	l.Holds = l.Loss <= 0.001 && l.Corrupt == 0 && l.ExcessP99 <= float64(tick)/1e6
	return l, nil
}

// relayFigures keeps the relay's own counters from its metrics.
func relayFigures(text string) string {
	var keep []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		t := sc.Text()
		if (strings.HasPrefix(t, "relay_") && !strings.HasPrefix(t, "relay_tick_seconds_bucket")) ||
			strings.HasPrefix(t, "go_memstats_heap_inuse_bytes ") || strings.HasPrefix(t, "go_memstats_heap_alloc_bytes ") {
			keep = append(keep, t)
		}
	}
	return strings.Join(keep, "\n")
}

func waitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitUntil(t time.Time) { time.Sleep(time.Until(t)) }

// cpuTime is a process's user and system time, from /proc/pid/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	// After the command: state is field 3; utime 14, stime 15 (1-based).
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const clkTck = 100 // sysconf(_SC_CLK_TCK) on Linux
	return time.Duration(u+s) * time.Second / clkTck, nil
}

// memory is a process's resident set now and at its peak (VmRSS, VmHWM).
func memory(pid int) (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak
}

// machineBusy is the time every CPU spent not idle, from /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)[1:]
	var busy int64
	for i, v := range f {
		x, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // not idle, iowait, guest
			busy += x
		}
	}
	return time.Duration(busy) * time.Second / 100
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentiles are a histogram's 50th and 99th percentiles and its
// largest, in milliseconds.
func percentiles(h []int64) (p50, p99, top float64) {
	var total int64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0, 0, 0
	}
	ms := func(i int) float64 { return float64(time.Duration(i+1)*histBin) / 1e6 }
	var run int64
	p50, p99 = -1, -1
	for i, c := range h {
		run += c
		if p50 < 0 && run*100 >= total*50 {
			p50 = ms(i)
		}
		if p99 < 0 && run*100 >= total*99 {
			p99 = ms(i)
		}
		if c > 0 {
			top = ms(i)
		}
	}
	return p50, p99, top
}
