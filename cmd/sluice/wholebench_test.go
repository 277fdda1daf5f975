//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sluice/gateway/mcp/mcptest"
)

// BenchmarkWholeProcess measures a tools/call of the fixture's echo tool
// as an agent sees it: an official Go SDK client in this process, every
// hop a real process, all paths set up side by side and measured in
// interleaved rounds of one run:
//
//   - direct: the client launches the fixture over stdio (the baseline);
//   - relay: a raw line relay between the client and the fixture (the
//     physical floor of any stdio intermediary: two more pipe hops);
//   - serve: 'sluice serve --mode flat' over stdio;
//   - serve-http: 'sluice serve --mode flat --http' (streamable HTTP);
//   - sdk-bridge: a minimal Go SDK stdio→HTTP bridge (benchBridge below),
//     the reference for what the SDK alone costs on HTTP;
//   - http-relay: a raw streamable-HTTP relay on plain net/http
//     (benchHTTPRelay below), the physical floor of any net/http gateway:
//     the HTTP hop plus the two pipe hops, no SDK, no decoding.
//
// For each it reports p50 and p99 of sequential calls, calls/s at 1 and 16
// in flight, and the intermediary's RSS at start (connected, nothing
// called), idle after the first call and peak; the claims are the
// ratios (added latency over direct against the relay's, throughput against
// the relay's), printed as a table. SLUICE_BENCH_BEFORE=BINARY adds
// serve-before and serve-http-before, the same two paths through another
// build of sluice (an earlier commit), so before and after are measured in
// one run. SLUICE_BENCH_TBXARK=BINARY adds tbxark, a build of the
// TBXark/mcp-proxy gateway (Go, streamable HTTP, stateless) serving the
// fixture from a config this benchmark writes, so another gateway's HTTP
// overhead is measured in the same run; SLUICE_BENCH_HTTP_PROCS1=1 adds
// serve-http-p1, the HTTP front with GOMAXPROCS=1; SLUICE_BENCH_NOFILTER=1
// adds serve-nofilter and serve-http-nofilter, both fronts with the default
// shape filter turned off in their user file (no result filter at all);
// SLUICE_BENCH_AUTO=1 adds
// serve-auto and serve-http-auto, both fronts with --procs auto (threads
// that follow the load); SLUICE_BENCH_ONLY=REGEXP
// keeps, beside direct and relay, only the paths whose name it matches
// (say, for a profile of one path with many calls). SLUICE_BENCH_CALLS scales
// the call counts; SLUICE_BENCH_PROFILE=DIR has every sluice serve process
// write a CPU profile into DIR (see profile.go); SLUICE_BENCH_STDERR=DIR
// keeps each path's stderr in DIR/NAME.log. The CPU column is the
// intermediary's own CPU time (every thread, from /proc) over its
// sequential calls, divided by their number, and the CPU @16 column the
// same over the calls at 16 in flight. Nothing here asserts a timing.
func BenchmarkWholeProcess(b *testing.B) {
	// One run is the measurement: b.N is not used (a run takes far longer
	// than -benchtime, so the framework does not ask for a second).
	scale := 1.0
	if s := os.Getenv("SLUICE_BENCH_CALLS"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			b.Fatalf("SLUICE_BENCH_CALLS=%q: want a positive factor", s)
		}
		scale = f
	}
	home := benchWorld(b)
	exe, argv, err := mcptest.Command()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "mcp.yaml"), []byte("servers:\n"+decl("fx", exe, argv...)), 0o600); err != nil {
		b.Fatal(err)
	}
	var serveEnv []string
	if dir := os.Getenv("SLUICE_BENCH_PROFILE"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			b.Fatal(err)
		}
		serveEnv = []string{"SLUICE_CPUPROFILE=" + filepath.Join(abs, "serve-%s.pprof")}
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}

	paths := []*wholePath{
		stdioPath(b, "direct", exec.Command(exe, argv...), false),
		stdioPath(b, "relay", exec.Command(self, append([]string{benchRelayArg, exe}, argv...)...), true),
		stdioPath(b, "serve", envCmd(serveEnv, "stdio", sluiceBin, "serve", "--mode", "flat"), true),
		httpPath(b, "serve-http", envCmd(serveEnv, "http", sluiceBin, "serve", "--mode", "flat", "--http", "127.0.0.1:0")),
		httpPath(b, "sdk-bridge", exec.Command(self, append([]string{benchBridgeArg, exe}, argv...)...)),
		httpPath(b, "http-relay", exec.Command(self, append([]string{benchHTTPRelayArg, exe}, argv...)...)),
	}
	if before := os.Getenv("SLUICE_BENCH_BEFORE"); before != "" {
		// The earlier build keeps its own cache and state: files this build
		// writes in a newer format (tool baselines, say) would otherwise be
		// refused by it, and its tools held.
		own := append(ownStateEnv(b), serveEnv...)
		paths = append(paths,
			stdioPath(b, "serve-before", envCmd(own, "stdio-before", before, "serve", "--mode", "flat"), true),
			httpPath(b, "serve-http-before", envCmd(own, "http-before", before, "serve", "--mode", "flat", "--http", "127.0.0.1:0")))
	}
	if os.Getenv("SLUICE_BENCH_HTTP_PROCS1") != "" {
		paths = append(paths, httpPath(b, "serve-http-p1", envCmd(append([]string{"GOMAXPROCS=1"}, serveEnv...), "http-p1", sluiceBin, "serve", "--mode", "flat", "--http", "127.0.0.1:0")))
	}
	if os.Getenv("SLUICE_BENCH_AUTO") != "" {
		paths = append(paths,
			stdioPath(b, "serve-auto", envCmd(serveEnv, "stdio-auto", sluiceBin, "serve", "--mode", "flat", "--procs", "auto"), true),
			httpPath(b, "serve-http-auto", envCmd(serveEnv, "http-auto", sluiceBin, "serve", "--mode", "flat", "--http", "127.0.0.1:0", "--procs", "auto")))
	}
	if os.Getenv("SLUICE_BENCH_NOFILTER") != "" {
		// The supported way to run without result filters: a builtin:shape
		// entry with no capabilities replaces the default one.
		nf := filepath.Join(b.TempDir(), "home")
		if err := os.MkdirAll(nf, 0o700); err != nil {
			b.Fatal(err)
		}
		yaml := "filters:\n  - module: builtin:shape\n    stage: context\n    capabilities: []\nservers:\n" + decl("fx", exe, argv...)
		if err := os.WriteFile(filepath.Join(nf, "mcp.yaml"), []byte(yaml), 0o600); err != nil {
			b.Fatal(err)
		}
		own := append(append(ownStateEnv(b), "SLUICE_HOME="+nf), serveEnv...)
		paths = append(paths,
			stdioPath(b, "serve-nofilter", envCmd(own, "stdio-nofilter", sluiceBin, "serve", "--mode", "flat"), true),
			httpPath(b, "serve-http-nofilter", envCmd(own, "http-nofilter", sluiceBin, "serve", "--mode", "flat", "--http", "127.0.0.1:0")))
	}
	if bin := os.Getenv("SLUICE_BENCH_TBXARK"); bin != "" {
		paths = append(paths, tbxarkPath(b, bin, exe, argv))
	}
	if only := os.Getenv("SLUICE_BENCH_ONLY"); only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			b.Fatalf("SLUICE_BENCH_ONLY: %v", err)
		}
		kept := paths[:0]
		for _, p := range paths {
			if p.name == "direct" || p.name == "relay" || re.MatchString(p.name) {
				kept = append(kept, p)
			} else {
				p.close()
			}
		}
		paths = kept
	}
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond)
	for _, p := range paths {
		p.startKiB, _ = procStatusKiB(p.pid, "VmRSS") // connected and listed, nothing called yet
	}
	for _, p := range paths {
		p.call(b, ctx) // the first call launches serve's upstream
	}
	time.Sleep(300 * time.Millisecond)
	for _, p := range paths {
		p.idleKiB, _ = procStatusKiB(p.pid, "VmRSS")
	}
	for range int(200 * scale) {
		for _, p := range paths {
			p.call(b, ctx)
		}
	}

	// Sequential calls, rounds interleaved so drift in the machine's load
	// falls on every path alike.
	const rounds = 5
	perRound := int(300 * scale)
	for range rounds {
		for _, p := range paths {
			cpu0 := procCPU(p.pid)
			start := time.Now()
			for range perRound {
				t0 := time.Now()
				p.call(b, ctx)
				p.lat = append(p.lat, time.Since(t0))
			}
			p.rate1 = append(p.rate1, float64(perRound)/time.Since(start).Seconds())
			p.cpu += procCPU(p.pid) - cpu0
			p.cpuCalls += perRound
		}
	}
	// 16 in flight.
	const inflight = 16
	burst := int(1000 * scale)
	for range rounds {
		for _, p := range paths {
			var mu sync.Mutex
			next := 0
			var wg sync.WaitGroup
			cpu0 := procCPU(p.pid)
			start := time.Now()
			for range inflight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						mu.Lock()
						next++
						n := next
						mu.Unlock()
						if n > burst {
							return
						}
						p.call(b, ctx)
					}
				}()
			}
			wg.Wait()
			p.rate16 = append(p.rate16, float64(burst)/time.Since(start).Seconds())
			p.cpu16 += procCPU(p.pid) - cpu0
		}
	}
	for _, p := range paths {
		p.peakKiB, _ = procStatusKiB(p.pid, "VmHWM")
	}
	for _, p := range paths {
		p.close()
	}

	byName := map[string]*wholePath{}
	for _, p := range paths {
		sort.Slice(p.lat, func(i, j int) bool { return p.lat[i] < p.lat[j] })
		byName[p.name] = p
	}
	direct, relay := byName["direct"], byName["relay"]
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	var t strings.Builder
	fmt.Fprintf(&t, "whole process, Go SDK client, echo; %d×%d sequential calls and %d×%d at %d in flight per path\n", rounds, perRound, rounds, burst, inflight)
	fmt.Fprintf(&t, "| path | p50 µs | p99 µs | added p50 µs | added ÷ relay's | CPU µs/call | calls/s @1 | calls/s @16 | @16 ÷ relay | CPU µs/call @16 | start RSS MiB | idle RSS MiB | peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range paths {
		added := p.pct(0.5) - direct.pct(0.5)
		ratio := "—"
		if p != direct && p != relay {
			ratio = fmt.Sprintf("%.2f×", float64(added)/float64(relay.pct(0.5)-direct.pct(0.5)))
		}
		rss := func(k int64) string {
			if p.pid == 0 || k == 0 {
				return "—"
			}
			return fmt.Sprintf("%.1f", float64(k)/1024)
		}
		cpu, cpu16 := "—", "—"
		if p.pid != 0 && p.cpuCalls > 0 {
			cpu = fmt.Sprintf("%.0f", us(p.cpu)/float64(p.cpuCalls))
			cpu16 = fmt.Sprintf("%.0f", us(p.cpu16)/float64(rounds*burst))
		}
		fmt.Fprintf(&t, "| %s | %.0f | %.0f | %+.0f | %s | %s | %.0f | %.0f | %.2f | %s | %s | %s | %s |\n",
			p.name, us(p.pct(0.5)), us(p.pct(0.99)), us(added), ratio, cpu,
			medianF(p.rate1), medianF(p.rate16), medianF(p.rate16)/medianF(relay.rate16), cpu16,
			rss(p.startKiB), rss(p.idleKiB), rss(p.peakKiB))
		b.ReportMetric(us(added), p.name+"-added-µs")
		b.ReportMetric(medianF(p.rate16)/medianF(relay.rate16), p.name+"-x-relay-16")
	}
	// Printed, not logged: the testing package cuts a benchmark's log
	// after a few lines, and the table grows with SLUICE_BENCH_BEFORE.
	fmt.Print(t.String())
}

// wholePath is one way of reaching the fixture's echo tool.
type wholePath struct {
	name     string
	cs       *mcp.ClientSession
	tool     string
	pid      int // the intermediary's (0: none)
	close    func()
	lat      []time.Duration
	rate1    []float64
	rate16   []float64
	cpu      time.Duration // the intermediary's CPU over its sequential calls
	cpuCalls int
	cpu16    time.Duration // and over its calls at 16 in flight
	startKiB int64         // RSS once connected, before the first call
	idleKiB  int64         // RSS after the first call (serve's upstream running)
	peakKiB  int64
}

func (p *wholePath) call(b *testing.B, ctx context.Context) {
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: p.tool, Arguments: map[string]any{"text": "bench"}})
	if err != nil {
		b.Fatalf("%s: %v", p.name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		b.Fatalf("%s: unexpected result %+v", p.name, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "bench" {
		b.Fatalf("%s: unexpected content %+v", p.name, res.Content[0])
	}
}

func (p *wholePath) pct(q float64) time.Duration {
	return p.lat[int(float64(len(p.lat)-1)*q)]
}

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// envCmd is a command with extra environment; "%s" in a value becomes tag.
// ownStateEnv is the environment that gives a sluice binary a cache and
// state directory of its own (the declarations in SLUICE_HOME are shared).
func ownStateEnv(b *testing.B) []string {
	b.Helper()
	root := b.TempDir()
	cache := filepath.Join(root, "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { removeSettled(b, cache) })
	return []string{"SLUICE_CACHE_DIR=" + cache, "XDG_STATE_HOME=" + filepath.Join(root, "state")}
}

func envCmd(env []string, tag, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = os.Environ()
	for _, e := range env {
		cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "%s", tag))
	}
	return cmd
}

// benchClient connects the benchmark's SDK client over tr and finds the
// echo tool's name.
func benchClient(b *testing.B, name string, tr mcp.Transport) (*mcp.ClientSession, string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: os.Getenv("SLUICE_BENCH_PROTOCOL")})
	if err != nil {
		b.Fatalf("%s: connect: %v", name, err)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatalf("%s: tools/list: %v", name, err)
	}
	for _, t := range lt.Tools {
		if t.Name == "echo" || strings.HasSuffix(t.Name, "__echo") {
			return cs, t.Name
		}
	}
	b.Fatalf("%s: no echo tool", name)
	return nil, ""
}

// stdioPath runs cmd in its own process group with the client on its
// stdio; mid says whether cmd is an intermediary whose RSS is reported.
func stdioPath(b *testing.B, name string, cmd *exec.Cmd, mid bool) *wholePath {
	b.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if f := stderrLog(b, name); f != nil {
		cmd.Stderr = f
	}
	cs, tool := benchClient(b, name, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second})
	pgid := cmd.Process.Pid
	b.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	p := &wholePath{name: name, cs: cs, tool: tool, close: func() { cs.Close() }}
	if mid {
		p.pid = pgid
	}
	return p
}

// stderrLog is the file a path's stderr is kept in with
// SLUICE_BENCH_STDERR=DIR (DIR/NAME.log), else nil.
func stderrLog(b *testing.B, name string) *os.File {
	dir := os.Getenv("SLUICE_BENCH_STDERR")
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// httpPath starts cmd in its own process group, reads the address it
// reports on stderr and connects the client over streamable HTTP.
func httpPath(b *testing.B, name string, cmd *exec.Cmd) *wholePath {
	// The line that reports the bound address: serve's, or the bridge's.
	// Other lines (a warning naming the --http flag's 127.0.0.1:0) do not.
	re := regexp.MustCompile(`"msg":"(?:serving MCP over HTTP|listening)".*"addr":"([^"]+)"`)
	return httpPathAt(b, name, cmd, func(line string) string {
		if m := re.FindStringSubmatch(line); m != nil {
			return "http://" + m[1] + "/mcp"
		}
		return ""
	})
}

// httpPathAt starts cmd in its own process group, waits for a stderr line
// from which ready gives the endpoint and connects the client there over
// streamable HTTP.
func httpPathAt(b *testing.B, name string, cmd *exec.Cmd, ready func(line string) string) *wholePath {
	b.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	pgid := cmd.Process.Pid
	b.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	endc := make(chan string, 1)
	logf := stderrLog(b, name)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if logf != nil {
				fmt.Fprintln(logf, sc.Text())
			}
			if ep := ready(sc.Text()); ep != "" {
				select {
				case endc <- ep:
				default:
				}
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-endc:
	case <-time.After(30 * time.Second):
		b.Fatalf("%s did not report its address", name)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	cs, tool := benchClient(b, name, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true})
	return &wholePath{name: name, cs: cs, tool: tool, pid: pgid, close: func() {
		cs.Close()
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}}
}

// tbxarkPath runs bin, a build of the TBXark/mcp-proxy gateway, with a
// config written here: the fixture as its one stdio server "fx", served
// over stateless streamable HTTP at /fx/mcp on a free loopback port, with
// request logging off (sluice serve logs no line per call either).
func tbxarkPath(b *testing.B, bin, exe string, argv []string) *wholePath {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf, err := json.Marshal(map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://" + addr, "addr": addr, "name": "tbxark", "version": "1",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false},
		},
		"mcpServers": map[string]any{
			"fx": map[string]any{"command": exe, "args": argv, "options": map[string]any{"logEnabled": false}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "tbxark.json")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		b.Fatal(err)
	}
	return httpPathAt(b, "tbxark", exec.Command(bin, "--config", path), func(line string) string {
		// Its servers connect (and their routes appear) in the background;
		// it says so once all are up, and it listens by then or soon after.
		if !strings.Contains(line, "All clients initialized") {
			return ""
		}
		for range 100 {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return "http://" + addr + "/fx/mcp"
	})
}

// procCPU is the CPU time every thread of process pid has used so far
// (0 for pid 0 or when it cannot be read).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// procStatusKiB reads one "kB" field of /proc/PID/status.
func procStatusKiB(pid int, field string) (int64, error) {
	if pid == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// The relay and the bridge run as re-executions of the test binary.
const (
	benchRelayArg     = "-sluice.benchrelay"
	benchBridgeArg    = "-sluice.benchbridge"
	benchHTTPRelayArg = "-sluice.benchhttprelay"
)

func init() {
	if len(os.Args) > 2 {
		switch os.Args[1] {
		case benchRelayArg:
			syscall.Exit(benchRelay(os.Args[2:]))
		case benchBridgeArg:
			syscall.Exit(benchBridge(os.Args[2:]))
		case benchHTTPRelayArg:
			syscall.Exit(benchHTTPRelay(os.Args[2:]))
		}
	}
}

// startUpstream starts argv with its stdin and stdout piped to the caller and
// its stderr on the caller's.
func startUpstream(argv []string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, in, out, nil
}

// benchRelay is a raw line relay: it starts argv and copies newline-framed
// lines both ways without looking at them.
func benchRelay(argv []string) int {
	cmd, in, out, err := startUpstream(argv)
	if err != nil {
		return 1
	}
	lines := func(dst io.Writer, src io.Reader) {
		br := bufio.NewReaderSize(src, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				if _, werr := dst.Write(line); werr != nil {
					return
				}
			}
			if err != nil && err != bufio.ErrBufferFull {
				return
			}
		}
	}
	go lines(os.Stdout, out)
	lines(in, os.Stdin)
	in.Close()
	_ = cmd.Wait()
	return 0
}

// benchBridge is the reference a gateway's HTTP front is compared with: a
// minimal Go SDK stdio→HTTP bridge. It connects an SDK client to argv over
// stdio, serves every upstream tool from an SDK server over streamable
// HTTP on a loopback port, and forwards each call as it is.
func benchBridge(argv []string) int {
	ctx := context.Background()
	up := mcp.NewClient(&mcp.Implementation{Name: "bridge", Version: "1"}, nil)
	cs, err := up.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge: connect:", err)
		return 1
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge: tools/list:", err)
		return 1
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bridge", Version: "1"}, nil)
	for _, t := range lt.Tools {
		name := t.Name
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments})
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if !serveLoopback("bridge", h) {
		return 1
	}
	cs.Close()
	return 0
}

// serveLoopback serves h on a loopback port until SIGTERM or an interrupt,
// after announcing the port on stderr the way sluice serve does (the
// bench's reader takes the address from that line). It reports false when
// it could not listen.
func serveLoopback(name string, h http.Handler) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+": listen:", err)
		return false
	}
	fmt.Fprintf(os.Stderr, "{\"msg\":\"listening\",\"addr\":%q}\n", ln.Addr().String())
	hs := &http.Server{Handler: h}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		hs.Close()
	}()
	_ = hs.Serve(ln)
	return true
}

// benchHTTPRelay is the floor of any gateway on net/http: it starts argv
// and serves it over streamable HTTP on a loopback port with no SDK and no
// decoding beyond what the transport needs. A POST's body is one message,
// written to argv's stdin as a line; a request (a message with an id and a
// method) is answered with argv's line of the same id, as 200
// application/json with its Content-Length; anything else (a notification,
// a response to argv) is answered 202. An initialize answer carries an
// Mcp-Session-Id, which later requests must repeat when they send one (the
// 2025 protocol eras); a newer era's client sends none. GET (the standalone
// stream) is refused with 405, DELETE ends nothing and is answered 204.
func benchHTTPRelay(argv []string) int {
	cmd, in, out, err := startUpstream(argv)
	if err != nil {
		return 1
	}
	r := &httpRelay{in: in, waiting: map[string]chan []byte{}, gone: make(chan struct{})}
	go r.readUpstream(out)
	ok := serveLoopback("http-relay", r)
	in.Close()
	_ = cmd.Wait()
	if !ok {
		return 1
	}
	return 0
}

// httpRelay is benchHTTPRelay's handler and its upstream's two pipes.
type httpRelay struct {
	wmu sync.Mutex // one line at a time on in
	in  io.WriteCloser

	mu      sync.Mutex
	waiting map[string]chan []byte // by the raw id of a request in flight
	session string                 // issued with the initialize answer
	gone    chan struct{}          // closed when the upstream's stdout ends
}

func (r *httpRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.Method {
	case http.MethodPost:
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if sid := req.Header.Get("Mcp-Session-Id"); sid != "" {
		r.mu.Lock()
		known := r.session
		r.mu.Unlock()
		if sid != known {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
	}
	line := make([]byte, 0, min(max(req.ContentLength, 512), 4<<20)+1)
	buf := bytes.NewBuffer(line)
	if _, err := buf.ReadFrom(io.LimitReader(req.Body, 4<<20)); err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	line = buf.Bytes()
	id, method, ok := relayMembers(line)
	if !ok || bytes.IndexByte(line, '\n') >= 0 {
		http.Error(w, "the body is not one JSON object on one line", http.StatusBadRequest)
		return
	}
	line = append(line, '\n')
	if id == nil || method == nil {
		if err := r.send(line); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	key := string(id)
	ch := make(chan []byte, 1)
	r.mu.Lock()
	if _, dup := r.waiting[key]; dup {
		r.mu.Unlock()
		http.Error(w, "a request with this id is in flight", http.StatusBadRequest)
		return
	}
	r.waiting[key] = ch
	r.mu.Unlock()
	if err := r.send(line); err != nil {
		r.drop(key)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	var answer []byte
	select {
	case answer = <-ch:
	case <-r.gone:
		r.drop(key)
		http.Error(w, "the upstream ended", http.StatusBadGateway)
		return
	case <-req.Context().Done():
		r.drop(key)
		return
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(answer))}
	if string(method) == `"initialize"` {
		sid := strconv.FormatInt(time.Now().UnixNano(), 36)
		r.mu.Lock()
		r.session = sid
		r.mu.Unlock()
		h["Mcp-Session-Id"] = []string{sid}
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer)
}

func (r *httpRelay) send(line []byte) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_, err := r.in.Write(line)
	return err
}

func (r *httpRelay) drop(key string) {
	r.mu.Lock()
	delete(r.waiting, key)
	r.mu.Unlock()
}

// readUpstream hands each line of the upstream's stdout that answers a
// waiting request to it (without its newline); other lines (the upstream's
// notifications and requests) have nowhere to go with GET refused and are
// dropped.
func (r *httpRelay) readUpstream(out io.Reader) {
	defer close(r.gone)
	br := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && err == nil {
			line = line[:len(line)-1]
			if id, method, ok := relayMembers(line); ok && id != nil && method == nil {
				r.mu.Lock()
				ch := r.waiting[string(id)]
				delete(r.waiting, string(id))
				r.mu.Unlock()
				if ch != nil {
					ch <- line
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// relayMembers finds the raw values of a JSON object's top-level "id" and
// "method" members (nil when absent) without decoding it; ok is false when
// line is not an object. Names are compared as written: the SDK never
// escapes them. The values are not checked beyond their extent: the
// upstream validates what it reads.
func relayMembers(line []byte) (id, method []byte, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return nil, nil, skipSpace(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return nil, nil, false
		}
		end := skipString(line, i)
		if end < 0 {
			return nil, nil, false
		}
		name := line[i+1 : end-1]
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ':' {
			return nil, nil, false
		}
		i = skipSpace(line, i+1)
		vend := skipValue(line, i)
		if vend < 0 {
			return nil, nil, false
		}
		switch string(name) {
		case "id":
			id = line[i:vend]
		case "method":
			method = line[i:vend]
		}
		i = skipSpace(line, vend)
		if i >= len(line) {
			return nil, nil, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			if skipSpace(line, i+1) != len(line) {
				return nil, nil, false
			}
			return id, method, true
		default:
			return nil, nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1 when it does not end.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1:
// strings and brackets are followed, a scalar runs to the next delimiter.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
