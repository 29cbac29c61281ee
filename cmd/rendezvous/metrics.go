package main

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's figures in the Prometheus format
// (client_golang), which main serves on a listener of their own
// (-metrics): the requests answered by route and status, the refusals by
// reason (the lobby's error codes: rate_limited, quota, unavailable…),
// the time to answer, and gauges read when scraped (matches, long polls,
// queued bytes, TURN allocations and bytes).
type metrics struct {
	registry  *prometheus.Registry
	responses *prometheus.CounterVec   // route, status
	refusals  *prometheus.CounterVec   // reason
	latency   *prometheus.HistogramVec // route
	// placements counts the relayed lobbies placed on a match relay, by
	// result: placed, lost (another instance placed it first: ours was
	// deleted), none (no live relay took it).
	placements *prometheus.CounterVec
}

func newMetrics(s *server) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rendezvous_http_responses_total", Help: "Requests answered, by route and HTTP status (parked: a long poll that waits outside net/http and answers later).",
		}, []string{"route", "status"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rendezvous_refusals_total", Help: "Requests refused, by the error code the client got (rate_limited, quota, queue_full, unavailable, not_found, unauthorized…).",
		}, []string{"reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rendezvous_http_seconds", Help: "Time to answer a request, by route (long polls included).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30},
		}, []string{"route"}),
	}
	m.placements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rendezvous_relay_placements_total", Help: "Relayed lobbies placed on a match relay, by result: placed, lost (another instance placed it first), none (no live relay took it).",
	}, []string{"result"})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.registry.MustRegister(m.responses, m.refusals, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("rendezvous_matches", "Matches held, full or not.", func() float64 {
			n, _, _ := s.reg.counts()
			return float64(n)
		}),
		gauge("rendezvous_matches_full", "Matches held whose seats are all taken.", func() float64 {
			_, full, _ := s.reg.counts()
			return float64(full)
		}),
		gauge("rendezvous_queued_signal_bytes", "Bytes of signal data waiting for their seats.", func() float64 {
			_, _, q := s.reg.counts()
			return float64(q)
		}),
		gauge("rendezvous_long_polls", "Long polls held now.", func() float64 { return float64(len(s.waiters)) }),
	)
	if s.cfg.RelayToken != "" {
		m.registry.MustRegister(m.placements, gauge("rendezvous_match_relays", "Match relays whose announcements are live (-relay-token-file).", func() float64 {
			live, _ := s.reg.liveRelays()
			return float64(len(live))
		}))
	}
	if n, ok := s.reg.(*natsStore); ok {
		m.registry.MustRegister(gauge("rendezvous_nats_rtt_seconds", "Round-trip time to the NATS server (-store nats); -1 while it cannot be reached.", func() float64 {
			rtt, err := n.rtt()
			if err != nil {
				return -1
			}
			return rtt.Seconds()
		}))
	}
	if s.relay != nil {
		m.registry.MustRegister(
			gauge("rendezvous_turn_allocations", "TURN allocations now.", func() float64 { return float64(s.relay.allocations()) }),
			gauge("rendezvous_turn_connections", "TURN clients' TCP and TLS connections open now.", func() float64 { return float64(s.relay.Connections()) }),
			turnCollector{s.relay})
	}
	return m
}

// turnCollector reads the TURN relay's counters (relay.Stats) when scraped.
type turnCollector struct{ relay *turnRelay }

var (
	turnBytes       = prometheus.NewDesc("rendezvous_turn_bytes_total", "Bytes on the TURN server's listening socket, by direction (in: from its clients).", []string{"direction"}, nil)
	turnAllocations = prometheus.NewDesc("rendezvous_turn_allocations_total", "TURN allocations made and deleted.", []string{"event"}, nil)
	turnRefusals    = prometheus.NewDesc("rendezvous_turn_refusals_total", "TURN requests refused, by reason: bad_mac, expired, match_gone, seat_left, unscoped, username (credentials); quota (per seat), capacity (server-wide); peer (a permission for a refused address).", []string{"reason"}, nil)
	turnConns       = prometheus.NewDesc("rendezvous_turn_connection_events_total", "TURN clients' TCP and TLS connections: accepted; refused (a cap, or a second from one address and port); timeout (first message, idle or write); bad_stream (not TURN, or a failed TLS handshake).", []string{"event"}, nil)
	turnDrops       = prometheus.NewDesc("rendezvous_turn_dropped_total", "Datagrams a TURN allocation dropped, by reason: peer (a refused address or port), seat (no longer held), bandwidth (over -turn-bandwidth).", []string{"reason"}, nil)
)

func (turnCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- turnBytes
	ch <- turnAllocations
	ch <- turnRefusals
	ch <- turnDrops
	ch <- turnConns
}

func (c turnCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.relay.Stats()
	for _, v := range []struct {
		desc  *prometheus.Desc
		label string
		n     int64
	}{
		{turnBytes, "in", st.BytesIn}, {turnBytes, "out", st.BytesOut},
		{turnAllocations, "created", st.AllocationsCreated}, {turnAllocations, "deleted", st.AllocationsDeleted},
		{turnRefusals, "bad_mac", st.RefusedBadMAC}, {turnRefusals, "expired", st.RefusedExpired},
		{turnRefusals, "match_gone", st.RefusedMatchGone}, {turnRefusals, "seat_left", st.RefusedSeatLeft},
		{turnRefusals, "unscoped", st.RefusedUnscoped}, {turnRefusals, "username", st.RefusedUsername},
		{turnRefusals, "quota", st.RefusedQuota}, {turnRefusals, "capacity", st.RefusedCapacity},
		{turnRefusals, "peer", st.RefusedPermissions},
		{turnDrops, "peer", st.DroppedPeer}, {turnDrops, "seat", st.DroppedSeat}, {turnDrops, "bandwidth", st.DroppedBandwidth},
		{turnConns, "accepted", st.ConnectionsAccepted}, {turnConns, "refused", st.RefusedConnections},
		{turnConns, "timeout", st.ConnectionTimeouts}, {turnConns, "bad_stream", st.BadStreams},
	} {
		ch <- prometheus.MustNewConstMetric(v.desc, prometheus.CounterValue, float64(v.n), v.label)
	}
}

// handler serves the metrics in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// ServeHTTP answers r (serve), counting it and, with an access log,
// logging it.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	s.serve(rec, r)
	took := time.Since(start)
	name, status := routeName(r), strconv.Itoa(rec.status)
	if !rec.wrote {
		status = "parked" // a long poll taken out of net/http (poll.go) answers later on its own
	}
	s.metrics.responses.WithLabelValues(name, status).Inc()
	s.metrics.latency.WithLabelValues(name).Observe(took.Seconds())
	if rec.code != "" {
		s.metrics.refusals.WithLabelValues(rec.code).Inc()
	}
	if s.cfg.AccessLog {
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("method", r.Method),
			slog.String("route", name), slog.String("status", status), slog.Int64("bytes", rec.bytes),
			slog.Duration("took", took), slog.String("ip", s.clientIP(r)), slog.String("error", rec.code))
	}
}

// routeName names r's route for the metrics and the access log, without
// the match code (a secret of its players until they join).
func routeName(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/healthz":
		return "healthz"
	case p == "/v1/matches":
		return "create"
	case !strings.HasPrefix(p, "/v1/"):
		return "static"
	}
	seg := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case len(seg) == 3:
		return "match"
	case len(seg) == 4 && seg[3] == "seats":
		return "join"
	case len(seg) == 4 && seg[3] == "signals" && r.Method == http.MethodPost:
		return "send"
	case len(seg) == 4 && seg[3] == "signals":
		return "receive"
	case len(seg) == 5 && seg[3] == "seats":
		return "leave"
	}
	return "other"
}

// recorder remembers the status and the error code of an answer, and
// its size.
type recorder struct {
	http.ResponseWriter
	status int
	code   string // the lobby error code, when writeError answered
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// refused notes the error code writeError answers with.
func (r *recorder) refused(code string) { r.code = code }
