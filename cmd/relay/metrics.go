package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the relay's figures in the Prometheus format
// (client_golang), as the rendezvous's: main serves them on a listener of
// their own (-metrics). Counters are read from the server when scraped;
// the tick's duration is observed as it goes.
type metrics struct {
	registry *prometheus.Registry
	tick     prometheus.Histogram
}

var (
	mOpen      = prometheus.NewDesc("relay_matches_open", "Matches held now.", nil, nil)
	mOpened    = prometheus.NewDesc("relay_matches_opened_total", "Matches opened (by the admin call or -machines).", nil, nil)
	mClosed    = prometheus.NewDesc("relay_matches_closed_total", "Matches closed, by reason: idle (no datagram from any machine for -idle), lifetime (-max-life), deleted (the admin call), stopped (the relay stopped).", []string{"reason"}, nil)
	mRefused   = prometheus.NewDesc("relay_matches_refused_total", "Matches not opened, and WebRTC seats' signals or connections refused, by reason: bad_request, unauthorized, capacity (-max-matches), address_in_use (a machine of another live match), address_quota (-max-per-ip), seat_offered (a WebRTC seat's second offer).", []string{"reason"}, nil)
	mDatagrams = prometheus.NewDesc("relay_datagrams_total", "Datagrams of the live and closed matches, by direction (in: from their machines, malformed ones too).", []string{"direction"}, nil)
	mBytes     = prometheus.NewDesc("relay_bytes_total", "Bytes of the datagrams of relay_datagrams_total, by direction (UDP payload).", []string{"direction"}, nil)
	mForwarded = prometheus.NewDesc("relay_forwarded_total", "Datagrams (records) forwarded from one machine to another; rebuilt: of them, from a copy or reseal record.", []string{"kind"}, nil)
	mDropped   = prometheus.NewDesc("relay_dropped_total", "Datagrams dropped, by reason: malformed (not an envelope, or one from its machine the relay must refuse), unknown_address (from no live match's machine), send_error (the socket would not send it).", []string{"reason"}, nil)
)

func newMetrics(s *server, k *socket) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		tick: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "relay_tick_seconds", Help: "Time to flush every match (send each machine what was gathered for it) and write the datagrams, once a tick.",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .004, .008, .0167, .033, .1},
		}),
	}
	m.registry.MustRegister(m.tick, collector{s, k},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// collector reads the server's counts when scraped.
type collector struct {
	s *server
	k *socket // nil: no socket (tests)
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mOpen, mOpened, mClosed, mRefused, mDatagrams, mBytes, mForwarded, mDropped} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	sn := c.s.snapshot()
	var sendErr int64
	if c.k != nil {
		sendErr = c.k.sendErr.Load()
	}
	ch <- prometheus.MustNewConstMetric(mOpen, prometheus.GaugeValue, float64(sn.open))
	ch <- prometheus.MustNewConstMetric(mOpened, prometheus.CounterValue, float64(sn.opened))
	for _, r := range closeReasons {
		ch <- prometheus.MustNewConstMetric(mClosed, prometheus.CounterValue, float64(sn.closedBy[r]), r)
	}
	for _, r := range refusalReasons {
		ch <- prometheus.MustNewConstMetric(mRefused, prometheus.CounterValue, float64(sn.refused[r]), r)
	}
	st := sn.stats
	for _, v := range []struct {
		desc  *prometheus.Desc
		n     int64
		label string
	}{
		{mDatagrams, st.EnvelopesIn + st.Malformed, "in"}, {mDatagrams, st.EnvelopesOut, "out"},
		{mBytes, st.BytesIn, "in"}, {mBytes, st.BytesOut, "out"},
		{mForwarded, st.Forwarded, "all"}, {mForwarded, st.Rebuilt, "rebuilt"},
		{mDropped, st.Malformed, "malformed"}, {mDropped, sn.unknown, "unknown_address"}, {mDropped, sendErr, "send_error"},
	} {
		ch <- prometheus.MustNewConstMetric(v.desc, prometheus.CounterValue, float64(v.n), v.label)
	}
}
