package scaletest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
)

// balancer is the load balancer an operator puts in front of the
// instances: each request goes to the next instance in turn, and to the
// one after when an instance refuses the connection (it has died).
type balancer struct {
	backends []string
	next     atomic.Uint64
	client   *http.Client
}

func newBalancer(t *testing.T, backends ...string) string {
	b := &balancer{backends: backends, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	first := int(b.next.Add(1))
	for i := range b.backends {
		base := b.backends[(first+i)%len(b.backends)]
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := b.client.Do(req)
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED) {
			continue // that instance is gone: the next
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	http.Error(w, "no instance answers", http.StatusServiceUnavailable)
}
