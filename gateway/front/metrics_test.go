package front

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestMetrics(t *testing.T) {
	m := NewMetrics(&MetricsOptions{MaxLabels: 2})
	m.ObserveCall("fs__read", "ok", time.Millisecond)
	m.ObserveCall("fs__write", "tool_error", time.Millisecond)
	m.ObserveCall("fs__third", "ok", time.Millisecond)      // over the cap
	m.ObserveCall("fs__read", "weird-outcome", time.Second) // outside the closed set
	m.SetServerState("fs", "starting")
	m.SetServerState("fs", "ready")
	m.SetServerState("git", "exploded")
	m.FilterOutcome("shape", "modified")
	m.FilterOutcome("shape", "???")
	m.SandboxOutcome("steps")
	var nilMetrics *Metrics
	nilMetrics.ObserveCall("x", "ok", 0) // a nil *Metrics ignores calls
	out := scrape(t, m)
	for _, want := range []string{
		`sluice_calls_total{capability="fs__read",outcome="ok"} 1`,
		`sluice_calls_total{capability="fs__write",outcome="tool_error"} 1`,
		`sluice_calls_total{capability="other",outcome="ok"} 1`,
		`sluice_calls_total{capability="fs__read",outcome="other"} 1`,
		`sluice_upstream_server_state{server="fs",state="ready"} 1`,
		`sluice_upstream_server_state{server="fs",state="starting"} 0`,
		`sluice_upstream_server_state{server="git",state="failed"} 1`,
		`sluice_filter_outcomes_total{filter="shape",outcome="modified"} 1`,
		`sluice_filter_outcomes_total{filter="shape",outcome="other"} 1`,
		`sluice_sandbox_outcomes_total{outcome="steps"} 1`,
		`sluice_active_sessions 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(out, "fs__third") {
		t.Error("label cap exceeded")
	}
}

func TestActiveSessionsGauge(t *testing.T) {
	m := NewMetrics(nil)
	s := connect(t, newFake(), &Options{Metrics: m}, nil, "2025-11-25")
	_ = s
	if out := scrape(t, m); !strings.Contains(out, "sluice_active_sessions 1") {
		t.Fatalf("active sessions not 1:\n%s", grepLines(out, "sluice_active"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
