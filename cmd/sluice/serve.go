package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"

	"sluice/gateway"
)

// maxTokenBytes bounds --token-file.
const maxTokenBytes = 4096

func init() {
	register("serve", &command{
		summary: "serve the gateway to agents as an MCP server (stdio or HTTP)",
		help: `Usage: sluice serve [--http ADDR] [--mode gateway|flat|auto] [--no-prefix] [--server ID]
                    [--expose GLOB]...
                    [--allow-remote] [--token-file FILE] [--log-level LEVEL]
                    [--project DIR] [--profile NAME] [--read-timeout DUR] [--idle-timeout DUR]
                    [--max-conns-per-client N] [--max-sessions N]
                    [--admin ADDR] [--admin-remote] [--approval-timeout DUR]
                    [--slow-call DUR] [--procs N|auto]

Serves sluice as an MCP server for agents, in both protocol eras (2025-11-25
and older with initialize, 2026-07-28 without). Servers are launched on
demand when trusted, exactly as for 'sluice call'; untrusted and stale
project servers are never launched.

Transports:
  (default)        stdio: newline-delimited JSON-RPC on stdin and stdout.
                   stdout carries protocol frames only; logs go to stderr.
                   Ends on stdin EOF.
  --http ADDR      streamable HTTP on one endpoint, http://ADDR/mcp, plus
                   /healthz, /readyz and /metrics (Prometheus). ADDR must be
                   a loopback address (127.0.0.1:0 picks a free port; the
                   bound address is logged as "serving MCP over HTTP")
                   unless --allow-remote is given. Loopback is every user
                   and process on this machine: without --token-file (or
                   SLUICE_TOKEN) any of them can call every tool, and
                   serve warns so at start; give a token on a shared
                   machine.

Modes:
  gateway (default)  a small fixed tool surface: find, describe, call,
                     read_result and execute (code mode). The tool list stays
                     small however many servers are configured.
  auto               flat while the trusted servers' tool definitions total
                     at most 16 KiB (about 85 tools), gateway above. Decided
                     at start (logged as "mode auto: chose ...") and again
                     whenever a catalog changes: past 16 KiB it switches to
                     gateway, and back to flat only once the definitions
                     fall to 12 KiB (so it never flaps); the agent gets
                     notifications/tools/list_changed ("mode auto: switched
                     to ..." in the log)
  flat               every trusted capability is its own tool, named
                     SERVER__TOOL (or the bare tool name with --no-prefix when
                     no other server uses it); resources, prompts, completions
                     and logging are passed through. Trusted servers without
                     a recorded catalog are launched once at start to list
                     their tools; the others launch on their first call.
  --server ID        one declared server alone, as if it were its own MCP
                     server: flat, with the server's own tool names (a cli
                     server's tools as declared). A host can run it per
                     session as a typed wrapper of an existing CLI. An
                     unknown or untrusted ID is refused before anything is
                     served; stdout carries frames only, on every path.

Exposed tools: capabilities pinned as direct tools beside the gateway tools,
in gateway and auto mode, named and served exactly as in flat mode (same
names, filters, budget, approvals). They come from the user config's
top-level expose: list of capability globs (expose: [github__search_*]),
each server's own expose: list of tool globs (servers.fs.expose: [read_*]),
and --expose GLOB (repeatable). Only tools flat mode would list can be
exposed: never a tool of an untrusted server, one hidden by tools: or the
profile, or one held for review. A catalog change updates them and sends
notifications/tools/list_changed; a glob that matches nothing is logged as
a warning.

Dashboard: with --http the dashboard is served under http://ADDR/admin/ on
the same listener; --admin ADDR serves it on its own loopback address (with
stdio too). It answers loopback clients only, even with --allow-remote,
unless --admin-remote is given, and asks for a token once: the one given
(--token-file, SLUICE_TOKEN), else one made for this process. The login
link of a token made for the process (ADDR/admin/login#token=...) is
printed on stderr only when stderr is a terminal. An MCP client keeps
sluice's stderr in its logs, so otherwise the link is written to
<state dir>/dashboard-PID-RANDOM.login (readable by you only, removed
when the process ends; one left by a killed process is removed by the
next start or 'sluice status') and stderr and 'sluice status' name that
file: open it with 'cat FILE' and paste the link into the browser.

Profiles: --profile NAME serves only what profiles.NAME in the user config
exposes (its servers, and of their tools those matching its capability
globs), in every mode; a profile that is not declared is refused. Over HTTP
each profile gets its own listener: run one 'sluice serve --http ADDR
--profile NAME' per profile, each on its own address, so a client's URL
decides what it sees and no request can pick a wider profile.

Approvals: a call that needs approval is asked of the agent's user through
MCP elicitation when the agent's client supports it; otherwise it waits
(--approval-timeout, default 2m) for a decision on the dashboard's Activity
page, and without a dashboard it is refused with the exact remedy
('approve:' globs or an action class). A script's calls that need approval
are asked for once, as one set bound to the script's sha256. Every decision
is logged to <state dir>/audit.jsonl (JSON lines, 0600).

Flags:
  --http ADDR         serve streamable HTTP on ADDR instead of stdio
  --mode MODE         gateway, flat or auto (default gateway)
  --no-prefix         direct tools (flat mode's, exposed ones) keep their
                      upstream names when no other server uses them
  --server ID         serve only server ID, flat, with its own tool names
  --expose GLOB       also list the capabilities GLOB matches (SERVER__TOOL,
                      * ? [..]) as direct tools; repeatable
  --allow-remote      HTTP: allow a non-loopback listen address
  --token-file FILE   HTTP: require "Authorization: Bearer TOKEN", TOKEN read
                      from FILE (first line); the environment variable
                      SLUICE_TOKEN is used when no file is given. With
                      stdio and --admin it is the dashboard's login token
  --log-level LEVEL   debug, info, warn or error (default: SLUICE_LOG_LEVEL,
                      else info). At debug every server's stderr is relayed.
  --project DIR       the project root (default: found from the working
                      directory)
  --admin ADDR        serve the dashboard on ADDR (loopback) as well
  --admin-remote      let non-loopback clients reach the dashboard (needs a
                      token: --token-file or SLUICE_TOKEN)
  --approval-timeout DUR
                      how long a call waits for a dashboard decision
                      (default 2m)
  --profile NAME      serve only what profile NAME exposes (see Profiles)
  --slow-call DUR     log a "slow call" warning for every upstream call that
                      takes longer (default 10s; 0 turns it off)
  --procs N|auto      how many threads run sluice's Go code at once (the Go
                      runtime's GOMAXPROCS). Default on stdio: 1, unless the
                      GOMAXPROCS environment variable is set (then it rules);
                      one agent's calls then hand work between goroutines
                      without waking a second thread, which halved the
                      latency serve adds on a 2-core machine. Raise it when
                      CPU-heavy filters or code mode run many calls at once.
                      Default with --http: auto, unless GOMAXPROCS is set.
                      auto: start at 1 and follow the load, either
                      transport: raised to the runtime's default (every
                      core) once the process uses most of a core or
                      goroutines queue for the thread, back to 1 after a
                      few quiet seconds (each change is a "threads raised"
                      or "threads lowered" debug line). Over HTTP it cut
                      the latency serve adds and its CPU per call against
                      the runtime's default, at the same calls/s with 16
                      in flight (BENCHMARKS.md, "Threads that follow the
                      load"). Where the platform gives no process CPU
                      time, the runtime's default stays.

Observability: over HTTP every response carries X-Request-ID: the one the
client sent (or its X-Correlation-ID) when it matches [A-Za-z0-9_-]{1,64},
else a generated one; the request's log lines carry it as request_id.
/livez answers without any I/O, /healthz checks nothing but the listener,
/readyz asks the gateway, /metrics has per-upstream calls, durations,
launches, crashes, restarts and bytes. At shutdown one "summary" log line
gives uptime, calls, failures and per-server counts. With the standard
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
spans go out over OTLP/HTTP: one per agent request (under the traceparent
the agent sent in _meta or as an HTTP header), with children for the
call, admission, each filter and the upstream call, whose _meta carries
the traceparent on. Unset, tracing is off and costs nothing.

HTTP limits (slow or greedy clients cannot hold the gateway):
  --read-timeout DUR  a whole request (headers and body) must arrive within
                      DUR (default 30s; headers alone 10s), else 408
  --idle-timeout DUR  close keep-alive connections idle for DUR (default 2m)
  --max-conns-per-client N
                      open connections per remote IP address (default 64);
                      one more is answered 503 and closed
  --max-sessions N    legacy (initialize) sessions (default 256); one more
                      closes the session idle the longest, or is refused
                      with 503 when every session has a request running.
                      Counted in sluice_http_limit_events_total on /metrics.

Shutdown: on stdin EOF (stdio), SIGTERM, SIGINT or SIGHUP, running calls
get up to 10 seconds to finish, then every launched server is torn down
(process groups, SIGTERM then SIGKILL).

Exit status:
  0    served and shut down cleanly
  1    sluice failed (unreadable files, a server group that survived teardown)
  2    bad flags, or an address it may not listen on
`,
		run: runServe,
	})
}

func runServe(e *env) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	httpAddr := fs.String("http", "", "")
	mode := fs.String("mode", "gateway", "")
	noPrefix := fs.Bool("no-prefix", false, "")
	server := fs.String("server", "", "")
	allowRemote := fs.Bool("allow-remote", false, "")
	tokenFile := fs.String("token-file", "", "")
	level := fs.String("log-level", "", "")
	project := fs.String("project", "", "")
	profile := fs.String("profile", "", "")
	readTimeout := fs.Duration("read-timeout", 0, "")
	idleTimeout := fs.Duration("idle-timeout", 0, "")
	maxConns := intFlag(fs, "max-conns-per-client", 0, 0, math.MaxInt32)
	maxSessions := intFlag(fs, "max-sessions", 0, 0, math.MaxInt32)
	adminAddr := fs.String("admin", "", "")
	adminRemote := fs.Bool("admin-remote", false, "")
	approvalTimeout := fs.Duration("approval-timeout", 0, "")
	slowCall := fs.Duration("slow-call", gateway.DefaultSlowCall, "")
	procs := fs.String("procs", "", "")
	var expose []string
	fs.Func("expose", "", func(v string) error {
		expose = append(expose, v)
		return nil
	})
	pos, code, ok := flagsOrExit(e, "serve", fs)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(e, "serve", "unexpected argument %q", pos[0])
	}
	if *mode != "gateway" && *mode != "flat" && *mode != "auto" {
		return usageErr(e, "serve", "--mode must be gateway, flat or auto, not %q", *mode)
	}
	if *server != "" {
		modeSet := false
		fs.Visit(func(f *flag.Flag) { modeSet = modeSet || f.Name == "mode" })
		if modeSet && *mode != "flat" {
			return usageErr(e, "serve", "--server serves one server flat; it cannot be combined with --mode %s", *mode)
		}
		*mode, *noPrefix = "flat", true
	}
	if len(expose) > 0 && *server != "" {
		return usageErr(e, "serve", "--expose applies to the gateway surface; --server serves every tool of its server directly already")
	}
	if len(expose) > 0 && *mode == "flat" {
		return usageErr(e, "serve", "--expose pins tools beside the gateway tools; in --mode flat every tool is direct already (use --mode gateway or auto)")
	}
	limits := gateway.HTTPLimits{ReadTimeout: *readTimeout, IdleTimeout: *idleTimeout, MaxConnsPerClient: *maxConns, MaxSessions: *maxSessions}
	for _, c := range []struct {
		name string
		set  bool
		bad  bool
		want string
	}{
		{"--read-timeout", *readTimeout != 0, *readTimeout < 0, "a positive duration such as 30s"},
		{"--idle-timeout", *idleTimeout != 0, *idleTimeout < 0, "a positive duration such as 2m"},
		{"--max-conns-per-client", *maxConns != 0, *maxConns < 0, "a positive number"},
		{"--max-sessions", *maxSessions != 0, *maxSessions < 0, "a positive number"},
	} {
		if c.bad {
			return usageErr(e, "serve", "%s must be %s", c.name, c.want)
		}
		if c.set && *httpAddr == "" {
			return usageErr(e, "serve", "%s applies to --http only", c.name)
		}
	}
	nprocs, adapt, ok := procsFor(*procs, *httpAddr == "", os.Getenv("GOMAXPROCS") != "")
	if !ok {
		if _, err := strconv.ParseInt(*procs, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return usageErr(e, "serve", "--procs %s is out of range: want auto or a whole number of threads from 1 to %d", *procs, maxProcs)
		}
		return usageErr(e, "serve", "--procs must be auto or a whole number of threads from 1 to %d, such as 1 or 2, not %q", maxProcs, *procs)
	}
	if nprocs > 0 {
		runtime.GOMAXPROCS(nprocs)
	}
	lockStderr(e)
	lv := logLevel(e.stderr)
	if *level != "" {
		l, ok := parseLevel(*level)
		if !ok {
			return usageErr(e, "serve", "--log-level must be debug, info, warn or error, not %q", *level)
		}
		lv = l
	} else if os.Getenv("SLUICE_LOG_LEVEL") == "" {
		lv = slog.LevelInfo
	}
	token, err := readToken(*tokenFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice serve: %v\n", err)
		return exitUsage
	}
	if *slowCall < 0 {
		return usageErr(e, "serve", "--slow-call must be a duration such as 5s (0 turns the warning off)")
	}
	if *slowCall == 0 {
		*slowCall = -1 // off
	}
	if token != "" && *httpAddr == "" && *adminAddr == "" {
		return usageErr(e, "serve", "a token applies to --http or --admin only (stdio has no authentication: the agent starts sluice itself)")
	}
	if *adminRemote && token == "" {
		return usageErr(e, "serve", "--admin-remote needs a token (the dashboard runs tools and trusts servers): add --token-file FILE or set SLUICE_TOKEN")
	}
	httpToken := token // with stdio and --admin, the token guards the dashboard only
	if *httpAddr == "" {
		httpToken = ""
	}
	lh := newLogHandler(e.stderr, lv)
	log := slog.New(lh)
	if adapt {
		if stop, ok := gateway.AdaptThreads(log); ok {
			defer func() { log.Debug("threads adapted", "changes", stop()) }()
		} else if *procs == "auto" {
			log.Warn("--procs auto: this platform gives no process CPU time; threads stay at the runtime's default", "gomaxprocs", runtime.GOMAXPROCS(0))
		}
	}
	log.Debug("threads running Go code", "gomaxprocs", runtime.GOMAXPROCS(0))
	opts := &gateway.Options{
		Profile:       *profile,
		Project:       *project,
		SlowCall:      *slowCall,
		Logger:        log,
		ClientName:    "sluice",
		ClientVersion: versionString(),
	}
	if lv <= slog.LevelDebug {
		opts.ServerStderr = lh.serverStderr()
	}
	g, err := gateway.Open(opts)
	if err != nil {
		return reportErr(e.stderr, "serve", err)
	}
	lh.redactWith(g.RedactLog)
	if *httpAddr != "" && httpToken == "" && !*allowRemote { // --allow-remote without a token is warned of by the front
		log.Warn("HTTP without a token: every user and process on this machine can reach /mcp on loopback and call every tool; require one with --token-file FILE or SLUICE_TOKEN", "listen", *httpAddr)
	}
	so := gateway.ServeOptions{
		HTTP:   *httpAddr,
		Server: *server,
		Front: gateway.FrontOptions{
			Mode:        gateway.ModeGateway,
			NoPrefix:    *noPrefix,
			AllowRemote: *allowRemote,
			Token:       httpToken,
			Version:     versionString(),
			Logger:      log,
			HTTPLimits:  limits,
		},
		Stdin:  e.stdin,
		Stdout: e.stdout,
		Expose: expose,
	}
	switch *mode {
	case "flat":
		so.Front.Mode = gateway.ModeFlat
	case "auto":
		so.Front.Mode = gateway.ModeAuto
	}
	if *approvalTimeout < 0 {
		return usageErr(e, "serve", "--approval-timeout must be a positive duration such as 2m")
	}
	if *adminRemote && *adminAddr == "" && *httpAddr == "" {
		return usageErr(e, "serve", "--admin-remote applies to a dashboard: add --http ADDR or --admin ADDR")
	}
	if *httpAddr != "" || *adminAddr != "" {
		dl := &dashLogin{stateDir: g.StateDir(), terminal: isTerminal(e.stderr)}
		defer dl.done()
		so.Dashboard = &gateway.DashboardOptions{Addr: *adminAddr, Remote: *adminRemote, Token: token, PlanText: planText,
			ApprovalTimeout: *approvalTimeout, Version: versionString(),
			OnListen: func(base, login string) {
				fmt.Fprintf(e.stderr, "sluice serve: dashboard at %s/admin/%s\n", base, dl.note(login))
			}}
	}
	if err := gateway.Serve(context.Background(), g, so); err != nil {
		return reportErr(e.stderr, "serve", err)
	}
	return exitOK
}

func parseLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

// readToken reads the bearer token from a file (first line), else from
// SLUICE_TOKEN. The token is never printed.
func readToken(path string) (string, error) {
	if path == "" {
		v, set := os.LookupEnv("SLUICE_TOKEN")
		tok := strings.TrimSpace(v)
		if set && tok == "" {
			// Set but blank: the operator meant to require a token and
			// would get an unauthenticated server.
			return "", fmt.Errorf("SLUICE_TOKEN is set but blank; set it to the token, or unset it")
		}
		if strings.ContainsFunc(tok, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			return "", fmt.Errorf("SLUICE_TOKEN holds whitespace or control characters inside the token; a bearer token is one word")
		}
		return tok, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %v", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("--token-file: %v", err)
	}
	n := len(buf)
	if n > maxTokenBytes {
		return "", fmt.Errorf("--token-file %s: larger than %d bytes; it should hold one token", path, maxTokenBytes)
	}
	tok, _, _ := strings.Cut(string(buf[:n]), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("--token-file %s: the first line is empty; write the token on it", path)
	}
	return tok, nil
}

// procsFor is how many threads run Go code at once: n > 0 fixes the
// count (--procs N, and one on stdio when nothing is said); adapt starts
// the load-following monitor (--procs auto, and --http when nothing is
// said); n == 0 and adapt false leave the runtime's choice (GOMAXPROCS
// set by the user, which rules unless --procs is given). ok is false for a --procs value that
// is neither. On stdio one agent's call is handed between a few
// goroutines (the frame reader, a worker, the upstream client's reader),
// and with a second P idle the runtime wakes a thread for each hand-off
// (a futex wake and a context switch, several microseconds on a small
// machine); with one P the readied goroutine runs next on the same
// thread. See BENCHMARKS.md ("stdio hand-offs on one thread") for the
// measurements, and "Threads that follow the load" for why HTTP follows
// the load by default and stdio stays at one.
// maxProcs bounds --procs N: the runtime makes a thread for each, and
// far more threads than cores only cost (100000 ended the process).
const maxProcs = 256

func procsFor(flag string, stdio, userSet bool) (n int, adapt, ok bool) {
	switch {
	case flag == "auto":
		return 0, true, true
	case flag != "":
		n, err := strconv.Atoi(flag)
		if err != nil || n < 1 || n > maxProcs {
			return 0, false, false
		}
		return n, false, true
	case userSet:
		return 0, false, true
	case !stdio:
		return 0, true, true
	}
	return 1, false, true
}
