package gateway

// This file is the local status endpoint of a running 'sluice serve': an
// HTTP server on a unix socket under the state directory, so 'sluice
// filter list' shows the live health and outcome counters of the filters
// of the process that runs them, and 'sluice filter enable' re-enables a
// disabled filter there.
//
// # Why a unix socket
//
// Only the user who runs serve may read its filters' state or re-enable
// one: the socket lives in a 0700 directory and is itself 0600, and it
// needs no port, token or TLS. One socket per process (named by pid), so
// several serves side by side are each visible.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"sluice/gateway/proc"
)

// StatusDir is where running serves keep their status sockets.
func StatusDir(stateDir string) string { return filepath.Join(stateDir, "serve") }

// LiveStatus is what a running serve reports about its filters.
type LiveStatus struct {
	PID      int                       `json:"pid"`
	Started  time.Time                 `json:"started"`
	Filters  []FilterStatus            `json:"filters"`
	Outcomes map[string]map[string]int `json:"outcomes"` // filter -> outcome -> runs, since start
}

// outcomeCounts are the filter outcomes of this process, for LiveStatus.
type outcomeCounts struct {
	m map[string]map[string]int
}

func (p *pipeline) count(filter, outcome string) {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	if p.counts.m == nil {
		p.counts.m = map[string]map[string]int{}
	}
	if p.counts.m[filter] == nil {
		p.counts.m[filter] = map[string]int{}
	}
	p.counts.m[filter][outcome]++
}

// passCounter is the counter of filter's "pass" outcomes.
func (p *pipeline) passCounter(filter string) *atomic.Int64 {
	if c, ok := p.passes.Load(filter); ok {
		return c.(*atomic.Int64)
	}
	c, _ := p.passes.LoadOrStore(filter, new(atomic.Int64))
	return c.(*atomic.Int64)
}

func (p *pipeline) outcomes() map[string]map[string]int {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	out := map[string]map[string]int{}
	for f, m := range p.counts.m {
		out[f] = map[string]int{}
		for o, n := range m {
			out[f][o] = n
		}
	}
	p.passes.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 0 {
			f := k.(string)
			if out[f] == nil {
				out[f] = map[string]int{}
			}
			out[f]["pass"] += int(n)
		}
		return true
	})
	return out
}

// EnableFilters re-enables the disabled filters named name ("" = all) in
// this process and returns the names it enabled.
func (g *Gateway) EnableFilters(name string) []string {
	p := g.pipeline
	if p == nil {
		return nil
	}
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	var done []string
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.filter == nil || name != "" && e.name != name && e.cfg.Module != name {
			continue
		}
		if len(e.filter.Status().DisabledFor) > 0 {
			done = append(done, e.name)
		}
		e.filter.Enable()
	}
	return done
}

// liveStatus is this process's LiveStatus.
func (g *Gateway) liveStatus(started time.Time) LiveStatus {
	st := LiveStatus{PID: os.Getpid(), Started: started, Filters: g.FilterStatuses(), Outcomes: map[string]map[string]int{}}
	if g.pipeline != nil {
		st.Outcomes = g.pipeline.outcomes()
	}
	return st
}

// ServeStatus listens on this process's status socket until ctx ends (or
// the returned stop is called) and removes the socket then.
func (g *Gateway) ServeStatus(ctx context.Context) (stop func(), err error) {
	dir := StatusDir(g.stateDir)
	if err := proc.MkdirPrivate(dir); err != nil { // 0700; an owner-only ACL on Windows
		return nil, err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || proc.OpenToOthers(fi) {
		return nil, fmt.Errorf("status directory %s must be a directory only you can read (chmod 700 it)", dir)
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	_ = os.Remove(path) // a socket left by a crashed process with our pid
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /filters", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(g.liveStatus(started))
	})
	mux.HandleFunc("POST /filters/enable", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"enabled": g.EnableFilters(r.URL.Query().Get("name"))})
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		out := map[string]any{"pid": os.Getpid(), "started": started}
		if d := g.dashboard(); d != nil {
			out = d.handler.Status(r.Context())
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stopped := make(chan struct{})
	once := func() {
		select {
		case <-stopped:
			return
		default:
			close(stopped)
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = os.Remove(path)
	}
	go func() {
		select {
		case <-ctx.Done():
			once()
		case <-stopped:
		}
	}()
	return once, nil
}

// ErrNoServe: no 'sluice serve' of this user is running (no live status
// socket).
var ErrNoServe = errors.New("no sluice serve is running")

// liveClient talks HTTP over one status socket.
func liveClient(sock string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
}

// liveSockets lists the status sockets of running serves (stale ones, of
// processes gone, are removed).
func liveSockets(stateDir string) []string {
	ents, err := os.ReadDir(StatusDir(stateDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		p := filepath.Join(StatusDir(stateDir), e.Name())
		c, err := net.DialTimeout("unix", p, time.Second)
		if err != nil {
			_ = os.Remove(p) // nobody listens: a serve that did not clean up
			continue
		}
		c.Close()
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// LiveFilterStatuses asks every running serve for its filters' status.
// It returns ErrNoServe when none is running.
func LiveFilterStatuses(ctx context.Context, stateDir string) ([]LiveStatus, error) {
	socks := liveSockets(stateDir)
	if len(socks) == 0 {
		return nil, ErrNoServe
	}
	var out []LiveStatus
	for _, s := range socks {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://sluice/filters", nil)
		resp, err := liveClient(s).Do(req)
		if err != nil {
			continue
		}
		var st LiveStatus
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err == nil {
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoServe
	}
	return out, nil
}

// EnableLiveFilters asks every running serve to re-enable the disabled
// filters named name ("" = all); it returns what each enabled.
func EnableLiveFilters(ctx context.Context, stateDir, name string) (map[int][]string, error) {
	socks := liveSockets(stateDir)
	if len(socks) == 0 {
		return nil, ErrNoServe
	}
	out := map[int][]string{}
	for _, s := range socks {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://sluice/filters/enable?name="+url.QueryEscape(name), nil)
		resp, err := liveClient(s).Do(req)
		if err != nil {
			continue
		}
		var v struct{ Enabled []string }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		pid, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(s), ".sock"))
		out[pid] = v.Enabled
	}
	return out, nil
}

// LiveServeStatuses asks every running serve for its state (the
// dashboard's /admin/api/status), as raw JSON, one per process.
func LiveServeStatuses(ctx context.Context, stateDir string) ([]json.RawMessage, error) {
	socks := liveSockets(stateDir)
	if len(socks) == 0 {
		return nil, ErrNoServe
	}
	var out []json.RawMessage
	for _, sock := range socks {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sluice/status", nil)
		if err != nil {
			return nil, err
		}
		resp, err := liveClient(sock).Do(req)
		if err != nil {
			continue // gone meanwhile
		}
		var raw json.RawMessage
		err = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&raw)
		resp.Body.Close()
		if err == nil {
			out = append(out, raw)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoServe
	}
	return out, nil
}
