package front

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Label values outside these closed sets are recorded as "other", so a
// buggy or hostile caller cannot grow the series count.
var (
	serverStates    = []string{"idle", "starting", "ready", "failed", "closed", "pending"}
	filterOutcomes  = set("pass", "modified", "blocked", "error", "fail_open", "fail_closed")
	sandboxOutcomes = set("ok", "error", "timeout", "steps", "calls", "memory", "output", "canceled")
)

func set(v ...string) map[string]bool {
	m := make(map[string]bool, len(v))
	for _, s := range v {
		m[s] = true
	}
	return m
}

// MetricsOptions configures NewMetrics; nil means defaults.
type MetricsOptions struct {
	// MaxLabels caps distinct values of each open label (capability,
	// server, filter); later values are counted as "other". Default 200.
	MaxLabels int
}

// Metrics is front's Prometheus registry: call counts and durations,
// upstream server states, active sessions, filter and sandbox outcomes. It
// owns its registry (never the global one). Methods are safe for
// concurrent use; a nil *Metrics ignores every call.
type Metrics struct {
	reg        *prometheus.Registry
	calls      *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	states     *prometheus.GaugeVec
	filters    *prometheus.CounterVec
	sandbox    *prometheus.CounterVec
	caps       *labelCap
	capSeries  sync.Map // capability -> *callSeries, for those caps admits (ObserveCall)
	otherCalls atomic.Pointer[callSeries]
	servers    *labelCap
	filterCaps *labelCap
	httpLimits *prometheus.CounterVec

	upOnce sync.Once
	up     *upstreamMetrics // metrics_upstream.go

	fastOnce sync.Once
	fast     prometheus.Counter // httpfast.go

	srcMu   sync.Mutex
	sources map[int]func() int // session counters of live fronts
	nextSrc int
}

// NewMetrics builds a Metrics with its own registry, including the Go
// runtime and process collectors.
func NewMetrics(o *MetricsOptions) *Metrics {
	max := defaultMaxMetricLabels
	if o != nil && o.MaxLabels > 0 {
		max = o.MaxLabels
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_calls_total",
			Help: "Tool calls served, by capability and outcome (ok, tool_error, error, canceled, denied, timeout, invalid).",
		}, []string{"capability", "outcome"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_call_duration_seconds",
			Help:    "Tool call duration, by capability.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"capability"}),
		states: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_upstream_server_state",
			Help: "1 for the current state of each upstream server, 0 for the others.",
		}, []string{"server", "state"}),
		filters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_filter_outcomes_total",
			Help: "Result filter runs, by filter and outcome.",
		}, []string{"filter", "outcome"}),
		sandbox: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_sandbox_outcomes_total",
			Help: "Code-mode script runs, by outcome.",
		}, []string{"outcome"}),
		httpLimits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_http_limit_events_total",
			Help: "HTTP limits that acted, by event: connection_refused (per-client connection cap), session_evicted (oldest idle session closed at the session cap), session_refused (session cap reached and no session idle), read_timeout (a request not read within the read timeout).",
		}, []string{"event"}),
		caps:       &labelCap{max: max},
		servers:    &labelCap{max: max},
		filterCaps: &labelCap{max: max},
	}
	active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_active_sessions",
		Help: "MCP sessions currently open (stdio counts as one; stateless HTTP requests are not sessions).",
	}, m.activeSessions)
	for _, ev := range []string{"connection_refused", "session_evicted", "session_refused", "read_timeout"} {
		m.httpLimits.WithLabelValues(ev) // present at 0 from the start
	}
	m.reg.MustRegister(m.calls, m.durations, m.states, m.filters, m.sandbox, active, m.httpLimits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.upstream() // present from the start
	return m
}

// ObserveCall records one finished call of capability with an outcome
// ("ok", "tool_error", "error", "canceled", "denied", "timeout", "invalid").
func (m *Metrics) ObserveCall(capability, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	s := m.callSeriesOf(capability)
	s.counter(m, outcome).Inc()
	s.duration.Observe(d.Seconds())
}

// callOutcomeNames are the outcome label's values, "other" last.
var callOutcomeNames = [...]string{"ok", "tool_error", "error", "canceled", "denied", "timeout", "invalid", "other"}

// callSeries is one capability label's call series, looked up once: the
// duration histogram, and a call counter per outcome, each resolved the
// first time a call has that outcome (a series appears in the exposition
// once it is first counted, as with WithLabelValues at every call).
//
// # Why
//
// Every finished call recorded its metrics through two label lookups
// (hashing the label values under the vector's lock) and the label cap's
// lock; a capability's series never change once created, so the call path
// keeps them.
type callSeries struct {
	label    string
	duration prometheus.Observer
	calls    [len(callOutcomeNames)]atomic.Pointer[prometheus.Counter]
}

// callSeriesOf is capability's series. Only capabilities the label cap
// admits under their own name are kept (at most MaxLabels of them); every
// other name shares the "other" series, so no caller can grow the cache.
func (m *Metrics) callSeriesOf(capability string) *callSeries {
	if s, ok := m.capSeries.Load(capability); ok {
		return s.(*callSeries)
	}
	label := m.caps.value(capability)
	if label == "other" {
		if s := m.otherCalls.Load(); s != nil {
			return s
		}
		s := &callSeries{label: label, duration: m.durations.WithLabelValues(label)}
		if m.otherCalls.CompareAndSwap(nil, s) {
			return s
		}
		return m.otherCalls.Load()
	}
	s, _ := m.capSeries.LoadOrStore(capability, &callSeries{label: label, duration: m.durations.WithLabelValues(label)})
	return s.(*callSeries)
}

// counter is the call counter of s's capability for outcome (unknown
// outcomes count as "other").
func (s *callSeries) counter(m *Metrics, outcome string) prometheus.Counter {
	i := len(callOutcomeNames) - 1
	for j, o := range callOutcomeNames[:i] {
		if o == outcome {
			i = j
			break
		}
	}
	if c := s.calls[i].Load(); c != nil {
		return *c
	}
	c := m.calls.WithLabelValues(s.label, callOutcomeNames[i])
	s.calls[i].Store(&c)
	return c
}

// SetServerState records the current state of an upstream server: one of
// "idle", "starting", "ready", "failed", "closed", "pending".
func (m *Metrics) SetServerState(server, state string) {
	if m == nil {
		return
	}
	s := m.servers.value(server)
	known := false
	for _, st := range serverStates {
		if st == state {
			known = true
		}
	}
	if !known {
		state = "failed"
	}
	for _, st := range serverStates {
		v := 0.0
		if st == state {
			v = 1
		}
		m.states.WithLabelValues(s, st).Set(v)
	}
}

// FilterOutcome counts one run of a result filter ("pass", "modified",
// "blocked", "error", "fail_open", "fail_closed").
func (m *Metrics) FilterOutcome(filter, outcome string) {
	if m == nil {
		return
	}
	m.filters.WithLabelValues(m.filterCaps.value(filter), closed(filterOutcomes, outcome)).Inc()
}

// SandboxOutcome counts one code-mode script run ("ok", "error", "timeout",
// "steps", "calls", "memory", "output", "canceled").
func (m *Metrics) SandboxOutcome(outcome string) {
	if m == nil {
		return
	}
	m.sandbox.WithLabelValues(closed(sandboxOutcomes, outcome)).Inc()
}

// httpLimitEvents is the closed set of HTTPLimit event labels.
var httpLimitEvents = set("connection_refused", "session_evicted", "session_refused", "read_timeout")

// HTTPLimit counts one act of an HTTP limit: "connection_refused",
// "session_evicted", "session_refused" or "read_timeout".
func (m *Metrics) HTTPLimit(event string) {
	if m == nil {
		return
	}
	m.httpLimits.WithLabelValues(closed(httpLimitEvents, event)).Inc()
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// addSessionSource registers a session counter; the returned func removes it.
func (m *Metrics) addSessionSource(f func() int) (remove func()) {
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	if m.sources == nil {
		m.sources = map[int]func() int{}
	}
	id := m.nextSrc
	m.nextSrc++
	m.sources[id] = f
	return func() {
		m.srcMu.Lock()
		delete(m.sources, id)
		m.srcMu.Unlock()
	}
}

func (m *Metrics) activeSessions() float64 {
	m.srcMu.Lock()
	fs := make([]func() int, 0, len(m.sources))
	for _, f := range m.sources {
		fs = append(fs, f)
	}
	m.srcMu.Unlock()
	n := 0
	for _, f := range fs {
		n += f()
	}
	return float64(n)
}

func closed(allowed map[string]bool, v string) string {
	if allowed[v] {
		return v
	}
	return "other"
}

// labelCap admits the first max distinct values of a label and maps every
// later one to "other".
type labelCap struct {
	mu   sync.Mutex
	seen map[string]bool
	max  int
}

func (c *labelCap) value(v string) string {
	if v == "" {
		return "none"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[v] {
		return v
	}
	if len(c.seen) >= c.max {
		return "other"
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[v] = true
	return v
}
