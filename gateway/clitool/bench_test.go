package clitool

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkCallVsExec runs the same stub through os/exec (the floor: one
// fork and exec, no group, no watchdog, no validation) and through
// Tool.Call (validation, rendering, its own process group, the watchdog,
// teardown), with and without the watchdog, alternating in one run, and
// reports the ratios.
func BenchmarkCallVsExec(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	spec := gitLog(self)
	spec.Output = OutputText
	spec.Env = map[string]string{childModeEnv: "argv"}
	tool, err := Compile(spec)
	if err != nil {
		b.Fatal(err)
	}
	spec.NoWatchdog = true
	bare, err := Compile(spec)
	if err != nil {
		b.Fatal(err)
	}
	args := raw(`{"limit": 5, "author": "ann"}`)
	var direct, call, callBare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cmd := exec.Command(self, "log", "--max-count=5", "--format=%H %s", "--author=ann")
		cmd.Env = []string{childModeEnv + "=argv"}
		if _, err := cmd.Output(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := tool.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := bare.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		direct += t1.Sub(t0)
		call += t2.Sub(t1)
		callBare += t3.Sub(t2)
	}
	b.ReportMetric(float64(direct.Microseconds())/float64(b.N), "exec-µs/op")
	b.ReportMetric(float64(call.Microseconds())/float64(b.N), "call-µs/op")
	b.ReportMetric(float64(call)/float64(direct), "call/exec")
	b.ReportMetric(float64(callBare)/float64(direct), "call-nowatchdog/exec")
}
