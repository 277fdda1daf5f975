package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/mcp/mcptest"
	"sluice/gateway/proc"
)

// Benchmarks run sluice as a whole process, the way people and scripts use
// it, and report ratios against a baseline measured in the same run:
//
//   - find over 32 servers x 500 cached tools, against 'sluice version' (the
//     floor: process start and exit with no work);
//   - call, against the same fixture server called directly with the native
//     client (cold: spawn + handshake + call + teardown in-process; warm: one
//     call on a running client).

// benchWorld points the environment at a fresh isolated home for b.
func benchWorld(b *testing.B) (home string) {
	b.Helper()
	root := b.TempDir()
	cache, err := os.MkdirTemp("", "sluice-cli-bench-cache-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { removeSettled(b, cache) })
	for k, v := range map[string]string{
		"SLUICE_HOME":      filepath.Join(root, "home"),
		"SLUICE_CACHE_DIR": cache,
		"XDG_STATE_HOME":   filepath.Join(root, "state"),
		"XDG_CONFIG_HOME":  filepath.Join(root, "config"),
		"SLUICE_LOG_LEVEL": "",
	} {
		b.Setenv(k, v)
	}
	home = filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.Fatal(err)
	}
	b.Chdir(root)
	return home
}

// timeProc runs the sluice binary once and returns its wall time.
func timeProc(b *testing.B, wantCode int, args ...string) time.Duration {
	b.Helper()
	return timeBin(b, sluiceBin, nil, wantCode, args...)
}

// timeBin runs bin once with extra environment and returns its wall time.
func timeBin(b *testing.B, bin string, env []string, wantCode int, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatal(err)
	}
	if code != wantCode {
		b.Fatalf("sluice %v: exit %d, want %d\n%s", args, code, wantCode, out.String())
	}
	return d
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func BenchmarkFindCached32x500(b *testing.B) {
	const servers, tools = 32, 500
	home := benchWorld(b)
	var y strings.Builder
	y.WriteString("servers:\n")
	// 487 generated tools + 13 builtin ones = 500 per server.
	for i := 0; i < servers; i++ {
		y.WriteString(fixture(b, fmt.Sprintf("s%02d", i), "-tools", fmt.Sprint(tools-len(mcptest.BuiltinTools))))
	}
	if err := os.WriteFile(filepath.Join(home, "mcp.yaml"), []byte(y.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	// Record every catalog once (each refresh launches one fixture).
	for i := 0; i < servers; i++ {
		var out, errb bytes.Buffer
		if code := run([]string{"find", "--server", fmt.Sprintf("s%02d", i), "--refresh", "--json"}, strings.NewReader(""), &out, &errb); code != exitOK {
			b.Fatalf("refresh s%02d: exit %d\n%s", i, code, errb.String())
		}
		var res struct {
			Servers []struct{ Tools int } `json:"servers"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Servers) != 1 || res.Servers[0].Tools != tools {
			b.Fatalf("refresh s%02d recorded %+v (%v), want %d tools", i, res.Servers, err, tools)
		}
	}
	// SLUICE_BENCH_BEFORE=BINARY: an earlier build measured in the same
	// rounds, with catalogs it recorded itself in a cache of its own (its
	// files may not be this build's).
	before := os.Getenv("SLUICE_BENCH_BEFORE")
	var beforeEnv []string
	if before != "" {
		cache := filepath.Join(b.TempDir(), "before-cache")
		beforeEnv = []string{"SLUICE_CACHE_DIR=" + cache}
		for i := 0; i < servers; i++ {
			timeBin(b, before, beforeEnv, exitOK, "find", "--server", fmt.Sprintf("s%02d", i), "--refresh")
		}
	}
	var finds, versions, bFinds, bVersions []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		finds = append(finds, timeProc(b, exitOK, "find", "generated tool 0042"))
		versions = append(versions, timeProc(b, exitOK, "version"))
		if before != "" {
			bFinds = append(bFinds, timeBin(b, before, beforeEnv, exitOK, "find", "generated tool 0042"))
			bVersions = append(bVersions, timeBin(b, before, beforeEnv, exitOK, "version"))
		}
	}
	b.StopTimer()
	f, v := median(finds), median(versions)
	b.ReportMetric(ms(f), "ms-find-median")
	b.ReportMetric(ms(v), "ms-version-median")
	b.ReportMetric(float64(f)/float64(v), "x-version")
	if before != "" {
		bf, bv := median(bFinds), median(bVersions)
		b.ReportMetric(ms(bf), "ms-before-find-median")
		b.ReportMetric(float64(bf)/float64(bv), "x-before-version")
		b.ReportMetric(float64(f)/float64(bf), "x-before-find")
	}
}

func BenchmarkCallRoundTrip(b *testing.B) {
	home := benchWorld(b)
	exe, argv, err := mcptest.Command()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "mcp.yaml"), []byte("servers:\n"+decl("fx", exe, argv...)), 0o600); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"ping"}`)
	spec := proc.Spec{Server: "fx", Command: exe, Args: argv}
	direct := func(ctx context.Context, c *mcp.Client) {
		raw, err := c.CallTool(ctx, "echo", args, nil)
		if err != nil || !bytes.Contains(raw, []byte("ping")) {
			b.Fatalf("direct call: %s %v", raw, err)
		}
	}
	ctx := context.Background()
	warm, err := mcp.Start(ctx, spec, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close()

	var viaCLI, cold, hot []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		viaCLI = append(viaCLI, timeProc(b, exitOK, "call", "fx__echo", "text=ping"))

		start := time.Now()
		c, err := mcp.Start(ctx, spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		direct(ctx, c)
		if out := c.Close(); !out.Complete {
			b.Fatalf("direct teardown incomplete: %+v", out)
		}
		cold = append(cold, time.Since(start))

		start = time.Now()
		direct(ctx, warm)
		hot = append(hot, time.Since(start))
	}
	b.StopTimer()
	v, c, h := median(viaCLI), median(cold), median(hot)
	b.ReportMetric(ms(v), "ms-cli-call-median")
	b.ReportMetric(ms(c), "ms-direct-cold-median")
	b.ReportMetric(float64(v)/float64(c), "x-direct-cold")
	b.ReportMetric(float64(v)/float64(h), "x-direct-warm")
}
