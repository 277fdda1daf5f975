package gateway

// This file is what operators watch: the request id every log line of an
// agent's request carries (the gateway's lines too, through the context),
// the upstream call's own log line, the slow-call warning, per-server
// counters for the shutdown summary, and the per-upstream metrics when
// serving.
//
// # Why the request id travels in the context, not in the logger
//
// One Gateway serves many requests at once with one logger; a logger per
// request would have to be threaded through every function between the
// front and the upstream client. The context already makes that trip, so
// the gateway's log handler reads the id from it (LogAttrs with ctx)
// and adds it to the record.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sluice/gateway/front"
	"sluice/gateway/mcp"
	"sluice/gateway/trace"
)

// DefaultSlowCall is the slow-call threshold when Options.SlowCall is 0.
const DefaultSlowCall = 10 * time.Second

// maxStatServers bounds the per-server counters (ids past it are summed
// as "other"; declarations are capped well below it anyway).
const maxStatServers = 256

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id id: every log line
// the gateway writes under it carries request_id.
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id ctx carries ("" = none).
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestIDHandler adds request_id from the context to every record.
type requestIDHandler struct{ h slog.Handler }

func (r requestIDHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r requestIDHandler) Handle(ctx context.Context, rec slog.Record) error {
	if ctx != nil {
		if id := RequestIDFrom(ctx); id != "" {
			rec = rec.Clone()
			rec.AddAttrs(slog.String("request_id", id))
		}
	}
	return r.h.Handle(ctx, rec)
}

func (r requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{r.h.WithAttrs(as)}
}

func (r requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{r.h.WithGroup(name)}
}

// ServerStats are one server's counters since the gateway opened.
type ServerStats struct {
	Calls    int64 `json:"calls"`
	Failures int64 `json:"failures"` // calls that did not return a result (tool errors are results)
	Launches int64 `json:"launches"`
	Crashes  int64 `json:"crashes"`  // a running server that died
	Restarts int64 `json:"restarts"` // launches after a crash
	BytesOut int64 `json:"bytes_out"`
	BytesIn  int64 `json:"bytes_in"`
}

// Summary is what the gateway did, for the shutdown log line.
type Summary struct {
	UptimeMs int64                  `json:"uptime_ms"`
	Calls    int64                  `json:"calls"`
	Failures int64                  `json:"failures"`
	Servers  map[string]ServerStats `json:"servers"`
}

type stats struct {
	mu      sync.Mutex
	start   time.Time
	servers map[string]*ServerStats
	crashed map[string]bool // died since its last launch
	// calls are the per-call counters, by server id (values
	// *callCounters): read without a lock on every call.
	calls sync.Map
	ncall atomic.Int32 // entries in calls, bounded by maxStatServers
}

// callCounters are one server's per-call counters, updated without a lock,
// and its metrics series for the sink they were resolved against.
type callCounters struct {
	calls, failures, bytesOut, bytesIn atomic.Int64
	series                             atomic.Pointer[seriesOf]
}

type seriesOf struct {
	m *front.Metrics
	s *front.UpstreamSeries
}

// callsOf returns id's call counters (past maxStatServers ids, "other"'s).
func (s *stats) callsOf(id string) *callCounters {
	if c, ok := s.calls.Load(id); ok {
		return c.(*callCounters)
	}
	if s.ncall.Load() >= maxStatServers {
		id = "other"
		if c, ok := s.calls.Load(id); ok {
			return c.(*callCounters)
		}
	}
	c, loaded := s.calls.LoadOrStore(id, &callCounters{})
	if !loaded {
		s.ncall.Add(1)
	}
	return c.(*callCounters)
}

// seriesFor is c's metrics series in m (resolved once per sink).
func (c *callCounters) seriesFor(m *front.Metrics, id string) *front.UpstreamSeries {
	if m == nil {
		return nil
	}
	if p := c.series.Load(); p != nil && p.m == m {
		return p.s
	}
	p := &seriesOf{m: m, s: m.UpstreamSeriesOf(id)}
	c.series.Store(p)
	return p.s
}

func (s *stats) of(id string) *ServerStats {
	if s.servers == nil {
		s.servers = map[string]*ServerStats{}
		s.crashed = map[string]bool{}
	}
	st := s.servers[id]
	if st == nil {
		if len(s.servers) >= maxStatServers {
			id = "other"
			if st = s.servers[id]; st != nil {
				return st
			}
		}
		st = &ServerStats{}
		s.servers[id] = st
	}
	return st
}

// Summary returns the counters so far.
func (g *Gateway) Summary() Summary {
	s := &g.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Summary{UptimeMs: time.Since(s.start).Milliseconds(), Servers: map[string]ServerStats{}}
	all := map[string]ServerStats{}
	for id, st := range s.servers {
		all[id] = *st
	}
	s.calls.Range(func(k, v any) bool {
		c := v.(*callCounters)
		st := all[k.(string)]
		st.Calls, st.Failures, st.BytesOut, st.BytesIn = c.calls.Load(), c.failures.Load(), c.bytesOut.Load(), c.bytesIn.Load()
		all[k.(string)] = st
		return true
	})
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		st := all[id]
		out.Calls += st.Calls
		out.Failures += st.Failures
		out.Servers[id] = st
	}
	return out
}

// setMetrics points per-upstream metrics at m (Serve).
func (g *Gateway) setMetrics(m *front.Metrics) { g.metrics.Store(m) }

// metricsSink is the metrics to record into; nil (a no-op) when not
// serving. Lock-free: slots report crashes holding their own lock.
func (g *Gateway) metricsSink() *front.Metrics { return g.metrics.Load() }

// noteLaunch counts a launch of server id (ok: it is up).
func (g *Gateway) noteLaunch(id string, ok bool) {
	s := &g.stats
	s.mu.Lock()
	st := s.of(id)
	st.Launches++
	restart := s.crashed[id]
	if restart {
		st.Restarts++
		delete(s.crashed, id)
	}
	s.mu.Unlock()
	m := g.metricsSink()
	m.UpstreamLaunch(id, ok)
	if restart {
		m.UpstreamRestart(id)
	}
}

// noteCrash counts a running server of id that died.
func (g *Gateway) noteCrash(id string) {
	s := &g.stats
	s.mu.Lock()
	s.of(id).Crashes++
	s.crashed[id] = true
	s.mu.Unlock()
	g.metricsSink().UpstreamCrash(id)
}

// callOutcome labels an upstream call's end.
func callOutcome(ctx context.Context, isError bool, err error) string {
	switch {
	case err == nil && isError:
		return "tool_error"
	case err == nil:
		return "ok"
	case ctx.Err() != nil:
		return "canceled"
	}
	var me *mcp.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &me) && me.Code == mcp.CodeTimeout {
		return "timeout"
	}
	return "error"
}

// noteCall counts and logs one upstream call of server's tool: the
// upstream call's log line (debug), and a warning when it took longer
// than the slow-call threshold.
func (g *Gateway) noteCall(ctx context.Context, server, tool string, out int, raw []byte, isError bool, err error, d time.Duration) {
	outcome := callOutcome(ctx, isError, err)
	c := g.stats.callsOf(server)
	c.calls.Add(1)
	if outcome != "ok" && outcome != "tool_error" {
		c.failures.Add(1)
	}
	c.bytesOut.Add(int64(out))
	c.bytesIn.Add(int64(len(raw)))
	c.seriesFor(g.metricsSink(), server).Call(outcome, d, int64(len(raw)), int64(out))

	th := g.slowCall()
	slow := th > 0 && d >= th
	if !slow && !g.log.Enabled(ctx, slog.LevelDebug) {
		return // no line to write: build none
	}
	attrs := []slog.Attr{slog.String("server", server), slog.String("tool", tool), slog.String("outcome", outcome),
		slog.Int64("duration_ms", d.Milliseconds()), slog.Int("bytes_out", out), slog.Int("bytes_in", len(raw))}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	g.log.LogAttrs(ctx, slog.LevelDebug, "upstream call", attrs...)
	if slow {
		g.log.LogAttrs(ctx, slog.LevelWarn, "slow call", append(attrs, slog.Int64("threshold_ms", th.Milliseconds()))...)
	}
}

func (g *Gateway) slowCall() time.Duration {
	switch {
	case g.opts.SlowCall < 0:
		return 0
	case g.opts.SlowCall == 0:
		return DefaultSlowCall
	}
	return g.opts.SlowCall
}

// logSummary writes the shutdown summary as one log line.
func (g *Gateway) logSummary() {
	s := g.Summary()
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "summary", slog.Int64("uptime_ms", s.UptimeMs),
		slog.Int64("calls", s.Calls), slog.Int64("failures", s.Failures), slog.Any("servers", s.Servers))
}

// withTraceMeta adds the W3C trace context of the span in ctx to an
// upstream request's _meta (meta: a JSON object or empty), so the
// upstream's own spans join the agent's trace.
func withTraceMeta(ctx context.Context, meta json.RawMessage) json.RawMessage {
	tp, ts := trace.Inject(ctx)
	if tp == "" {
		return meta
	}
	m := map[string]json.RawMessage{}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &m); err != nil {
			return meta // not an object: the client refuses it as before
		}
	}
	m["traceparent"], _ = json.Marshal(tp)
	if ts != "" {
		m["tracestate"], _ = json.Marshal(ts)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return out
}

// startRequest starts the span of one agent request (front's peer p
// names the agent's trace context, if it sent one).
func (g *Gateway) startRequest(ctx context.Context, p front.Peer, name string, attrs ...trace.Attr) (context.Context, *trace.Span) {
	if g.tracer == nil {
		return ctx, nil
	}
	if p != nil {
		tp, ts := front.TraceContext(p)
		ctx = trace.Extract(ctx, tp, ts)
		attrs = append(attrs, trace.Attr{Key: "jsonrpc.request.id", Value: p.RequestID()})
		if s := p.SessionID(); s != "" {
			attrs = append(attrs, trace.Attr{Key: "mcp.session.id", Value: s})
		}
	}
	return g.tracer.Start(ctx, name, trace.KindServer, attrs...)
}
