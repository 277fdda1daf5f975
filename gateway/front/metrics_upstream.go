package front

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// upstreamMetrics are the per-upstream-server series: calls by outcome,
// call durations, launches, crashes, restarts and bytes each way. The
// server label goes through the same cap as the state gauge, so the
// series count stays bounded whatever the declarations say.
type upstreamMetrics struct {
	calls     *prometheus.CounterVec
	durations *prometheus.HistogramVec
	launches  *prometheus.CounterVec
	crashes   *prometheus.CounterVec
	restarts  *prometheus.CounterVec
	bytes     *prometheus.CounterVec
}

var launchOutcomes = set("ok", "error")

// upstream returns m's upstream series, registering them on first use.
func (m *Metrics) upstream() *upstreamMetrics {
	m.upOnce.Do(func() {
		u := &upstreamMetrics{
			calls: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_upstream_calls_total",
				Help: "Calls sent to upstream servers, by server and outcome (ok, tool_error, error, canceled, timeout).",
			}, []string{"server", "outcome"}),
			durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "sluice_upstream_call_duration_seconds",
				Help:    "Duration of calls to upstream servers, by server.",
				Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
			}, []string{"server"}),
			launches: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_upstream_launches_total",
				Help: "Upstream server launches (spawn or connect, handshake, first listing), by server and outcome (ok, error).",
			}, []string{"server", "outcome"}),
			crashes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_upstream_crashes_total",
				Help: "Running upstream servers that died (exited, broke the protocol or lost their connection), by server.",
			}, []string{"server"}),
			restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_upstream_restarts_total",
				Help: "Launches of an upstream server after it crashed, by server.",
			}, []string{"server"}),
			bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "sluice_upstream_bytes_total",
				Help: "Bytes of tool arguments sent (out) and tool results received (in), by server and direction.",
			}, []string{"server", "direction"}),
		}
		m.reg.MustRegister(u.calls, u.durations, u.launches, u.crashes, u.restarts, u.bytes)
		m.up = u
	})
	return m.up
}

// upstreamOutcomes is the closed set of UpstreamCall outcomes.
var upstreamOutcomes = set("ok", "tool_error", "error", "canceled", "timeout")

// UpstreamCall records one call sent to server.
func (m *Metrics) UpstreamCall(server, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	u, s := m.upstream(), m.servers.value(server)
	u.calls.WithLabelValues(s, closed(upstreamOutcomes, outcome)).Inc()
	u.durations.WithLabelValues(s).Observe(d.Seconds())
}

// UpstreamBytes adds the bytes of one call: in (the result) and out (the
// arguments).
func (m *Metrics) UpstreamBytes(server string, in, out int64) {
	if m == nil {
		return
	}
	u, s := m.upstream(), m.servers.value(server)
	u.bytes.WithLabelValues(s, "in").Add(float64(in))
	u.bytes.WithLabelValues(s, "out").Add(float64(out))
}

// UpstreamLaunch counts a launch of server (ok: it came up).
func (m *Metrics) UpstreamLaunch(server string, ok bool) {
	if m == nil {
		return
	}
	o := "ok"
	if !ok {
		o = "error"
	}
	m.upstream().launches.WithLabelValues(m.servers.value(server), closed(launchOutcomes, o)).Inc()
}

// UpstreamCrash counts a running server that died.
func (m *Metrics) UpstreamCrash(server string) {
	if m == nil {
		return
	}
	m.upstream().crashes.WithLabelValues(m.servers.value(server)).Inc()
}

// UpstreamRestart counts a launch after a crash.
func (m *Metrics) UpstreamRestart(server string) {
	if m == nil {
		return
	}
	m.upstream().restarts.WithLabelValues(m.servers.value(server)).Inc()
}

// UpstreamSeries are one server's per-call series, resolved once (label
// cap and label lookups included): recording a call through them is a few
// atomic adds, for a caller that records every call of a server. An
// outcome's series appears on its first call, as with UpstreamCall.
type UpstreamSeries struct {
	u        *upstreamMetrics
	server   string // the label value, after the cap
	calls    [len(seriesOutcomes)]atomic.Pointer[prometheus.Counter]
	duration prometheus.Observer
	in, out  prometheus.Counter
}

// seriesOutcomes index UpstreamSeries.calls: upstreamOutcomes, then "other".
var seriesOutcomes = [...]string{"ok", "tool_error", "error", "canceled", "timeout", "other"}

// UpstreamSeriesOf returns server's series; nil (every method a no-op)
// for a nil m.
func (m *Metrics) UpstreamSeriesOf(server string) *UpstreamSeries {
	if m == nil {
		return nil
	}
	u, s := m.upstream(), m.servers.value(server)
	return &UpstreamSeries{u: u, server: s, duration: u.durations.WithLabelValues(s),
		in: u.bytes.WithLabelValues(s, "in"), out: u.bytes.WithLabelValues(s, "out")}
}

// Call records one call, as UpstreamCall and UpstreamBytes do.
func (r *UpstreamSeries) Call(outcome string, d time.Duration, in, out int64) {
	if r == nil {
		return
	}
	i := len(seriesOutcomes) - 1
	for j, o := range seriesOutcomes[:i] {
		if o == outcome {
			i = j
			break
		}
	}
	c := r.calls[i].Load()
	if c == nil {
		cc := r.u.calls.WithLabelValues(r.server, seriesOutcomes[i])
		c = &cc
		r.calls[i].Store(c)
	}
	(*c).Inc()
	r.duration.Observe(d.Seconds())
	r.in.Add(float64(in))
	r.out.Add(float64(out))
}
