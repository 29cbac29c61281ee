package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CORS for the API, opt in (-cors): a game whose page another origin
// serves may call the lobby and signaling API from the browser when that
// origin is on the list. Only /v1/... answers with CORS headers; the
// static files are this server's own page's.
const (
	corsMethods = "GET, POST, DELETE"
	corsHeaders = "Authorization, Content-Type"
	corsExpose  = "Retry-After" // the lobby client waits it out on 429 and 503
	corsMaxAge  = 10 * time.Minute
)

// parseOrigins reads -cors: comma-separated origins, each exactly as a
// browser sends it in its Origin header (scheme://host[:port], no path).
// Scheme and host are compared in lower case and a default port (:443
// for https, :80 for http) is dropped, as browsers do.
func parseOrigins(list string) ([]string, error) {
	var origins []string
	for o := range strings.SplitSeq(list, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		switch o {
		case "*":
			return nil, fmt.Errorf("%q: name each origin allowed (e.g. https://games.example.com); any origin at all is not an option", o)
		case "null":
			return nil, fmt.Errorf("%q: the null origin is every sandboxed page's and file's at once, so it cannot be allowed", o)
		}
		u, err := url.Parse(o) // lower-cases the scheme
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.HasSuffix(u.Host, ":") ||
			u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin: want scheme://host[:port], e.g. https://games.example.com", o)
		}
		scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		if port := u.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%q: port %q is not a port number", o, port)
			}
			if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
				host = strings.TrimSuffix(host, ":"+port)
			}
		}
		origins = append(origins, scheme+"://"+host)
	}
	return origins, nil
}

// cors answers the API's requests from the allowed origins with CORS
// headers, and their preflight requests itself; every other request
// goes to next untouched (a request from an origin not on the list gets
// no CORS header, so its page cannot read the answer).
type cors struct {
	next    http.Handler
	allowed map[string]bool
}

// withCORS wraps next with CORS for origins; with none, it is next.
func withCORS(next http.Handler, origins []string) http.Handler {
	if len(origins) == 0 {
		return next
	}
	c := &cors{next: next, allowed: make(map[string]bool, len(origins))}
	for _, o := range origins {
		c.allowed[o] = true
	}
	return c
}

func (c *cors) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1" && !strings.HasPrefix(r.URL.Path, "/v1/") {
		c.next.ServeHTTP(w, r)
		return
	}
	// The answer depends on the Origin header, whether allowed or not:
	// a cache must not hand one origin's answer to another.
	h := w.Header()
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !c.allowed[origin] {
		c.next.ServeHTTP(w, r)
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		// A preflight: the browser asks before a request with a token
		// (Authorization) or a JSON body. It costs the server nothing to
		// answer, so it is not rate-limited.
		h.Set("Access-Control-Allow-Methods", corsMethods)
		h.Set("Access-Control-Allow-Headers", corsHeaders)
		h.Set("Access-Control-Max-Age", strconv.Itoa(int(corsMaxAge.Seconds())))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.Set("Access-Control-Expose-Headers", corsExpose)
	c.next.ServeHTTP(w, r)
}
