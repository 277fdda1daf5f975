package front

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// callLines is the call-count and duration series of a scrape.
func callLines(t *testing.T, m *Metrics) string {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(scrape(t, m), "\n") {
		if strings.HasPrefix(l, "sluice_calls_total") || strings.HasPrefix(l, "sluice_call_duration_seconds") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestObserveCallSeriesMatchLookups: ObserveCall through its kept series
// exposes exactly what a label lookup at every call exposes, for names
// within and beyond the label cap, the empty name, a name spelled
// "other" and outcomes in and outside the closed set; and it keeps no
// series for names beyond the cap.
func TestObserveCallSeriesMatchLookups(t *testing.T) {
	caps := []string{"fs__read", "fs__write", "", "other", "git__log", "git__diff", "x__y", "fs__read2"}
	outcomes := []string{"ok", "tool_error", "error", "canceled", "denied", "timeout", "invalid", "other", "weird", ""}
	allowed := set("ok", "tool_error", "error", "canceled", "denied", "timeout", "invalid")
	for _, max := range []int{1, 3, 200} {
		got := NewMetrics(&MetricsOptions{MaxLabels: max})
		want := NewMetrics(&MetricsOptions{MaxLabels: max})
		r := rand.New(rand.NewPCG(uint64(max), 7))
		type obs struct {
			capability, outcome string
			d                   time.Duration
		}
		var seq []obs
		for range 2000 {
			seq = append(seq, obs{caps[r.IntN(len(caps))], outcomes[r.IntN(len(outcomes))], time.Duration(r.IntN(400)) * time.Millisecond})
		}
		for _, o := range seq {
			got.ObserveCall(o.capability, o.outcome, o.d)
		}
		for _, o := range seq {
			c := want.caps.value(o.capability)
			want.calls.WithLabelValues(c, closed(allowed, o.outcome)).Inc()
			want.durations.WithLabelValues(c).Observe(o.d.Seconds())
		}
		if g, w := callLines(t, got), callLines(t, want); g != w {
			t.Fatalf("max %d: kept series expose\n%s\nlookups expose\n%s", max, g, w)
		}
		kept := 0
		got.capSeries.Range(func(any, any) bool { kept++; return true })
		if kept > max+1 { // the empty name is "none", outside the cap
			t.Fatalf("max %d: %d capabilities kept", max, kept)
		}
	}
}

// TestObserveCallConcurrent: calls recorded from several goroutines at
// once are all counted, under one series per admitted name and "other".
func TestObserveCallConcurrent(t *testing.T) {
	m := NewMetrics(&MetricsOptions{MaxLabels: 2})
	caps := []string{"a__x", "b__y", "c__z"}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				m.ObserveCall(caps[(i+w)%len(caps)], "ok", time.Millisecond)
			}
		}()
	}
	wg.Wait()
	out := scrape(t, m)
	total, names := 0, map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "sluice_calls_total{") {
			var n int
			if _, err := fmt.Sscanf(l[strings.LastIndexByte(l, ' ')+1:], "%d", &n); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			total += n
			names[l[strings.Index(l, "capability="):strings.IndexByte(l, ',')]] = true
		}
	}
	// Which two names the cap admits depends on which goroutine ran first.
	if total != 8*500 || len(names) != 3 || !names[`capability="other"`] {
		t.Fatalf("counted %d of %d calls:\n%s", total, 8*500, out)
	}
}

// TestObserveCallSeriesAppearWhenCounted: a capability's counter for an
// outcome is exposed only once a call had that outcome.
func TestObserveCallSeriesAppearWhenCounted(t *testing.T) {
	m := NewMetrics(nil)
	m.ObserveCall("fs__read", "ok", time.Millisecond)
	out := scrape(t, m)
	if !strings.Contains(out, `sluice_calls_total{capability="fs__read",outcome="ok"} 1`) {
		t.Fatalf("ok call not counted:\n%s", out)
	}
	if strings.Contains(out, `outcome="error"`) {
		t.Fatalf("an outcome no call had is exposed:\n%s", out)
	}
}
