package front

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// upstreamLines are the sluice_upstream_* lines of a scrape.
func upstreamLines(t *testing.T, m *Metrics) string {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(scrape(t, m), "\n") {
		if strings.HasPrefix(l, "sluice_upstream_") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// A server's resolved series record exactly what UpstreamCall and
// UpstreamBytes record: the same series, values and label cap, an
// outcome's series appearing only once it happened, an unknown outcome as
// "other".
func TestUpstreamSeriesRecordsAsUpstreamCall(t *testing.T) {
	type call struct {
		server, outcome string
		d               time.Duration
		in, out         int64
	}
	calls := []call{
		{"fx", "ok", 3 * time.Millisecond, 120, 16},
		{"fx", "tool_error", 40 * time.Millisecond, 30, 2},
		{"fx", "ok", 2 * time.Second, 0, 0},
		{"db", "timeout", time.Minute, 0, 64},
		{"db", "bogus", time.Millisecond, 5, 5},
		{"third", "ok", time.Millisecond, 1, 1}, // past the cap of 2: "other"
	}
	direct, viaSeries := NewMetrics(&MetricsOptions{MaxLabels: 2}), NewMetrics(&MetricsOptions{MaxLabels: 2})
	series := map[string]*UpstreamSeries{}
	for _, c := range calls {
		direct.UpstreamCall(c.server, c.outcome, c.d)
		direct.UpstreamBytes(c.server, c.in, c.out)
		s := series[c.server]
		if s == nil {
			s = viaSeries.UpstreamSeriesOf(c.server)
			series[c.server] = s
		}
		s.Call(c.outcome, c.d, c.in, c.out)
	}
	want, got := upstreamLines(t, direct), upstreamLines(t, viaSeries)
	if got != want {
		t.Fatalf("series recorded\n%s\nwant (UpstreamCall, UpstreamBytes)\n%s", got, want)
	}
	for _, line := range []string{
		`sluice_upstream_calls_total{outcome="ok",server="fx"} 2`,
		`sluice_upstream_calls_total{outcome="other",server="db"} 1`,
		`sluice_upstream_calls_total{outcome="ok",server="other"} 1`,
		`sluice_upstream_bytes_total{direction="in",server="fx"} 150`,
	} {
		if !strings.Contains(got, line) {
			t.Errorf("missing %s in\n%s", line, got)
		}
	}
	if regexp.MustCompile(`outcome="(canceled|error)"`).MatchString(got) {
		t.Errorf("an outcome that never happened has a series:\n%s", got)
	}
	var nilSeries *UpstreamSeries
	nilSeries.Call("ok", time.Second, 1, 1) // no-op
	if (*Metrics)(nil).UpstreamSeriesOf("fx") != nil {
		t.Fatal("a nil Metrics must give nil series")
	}
}
