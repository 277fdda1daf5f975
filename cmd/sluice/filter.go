package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluice/gateway"
)

// maxFilterInput bounds --input (the filter host refuses more than 4 MiB
// anyway; the rest is read to say so clearly).
const maxFilterInput = 64 << 20

// defaultBenchInput is the size of bench's synthetic input.
const defaultBenchInput = 64 << 10

func init() {
	register("filter", &command{
		summary: "test, benchmark and list WASM result filters",
		help: `Usage: sluice filter test MODULE [--config JSON|@FILE] [--input FILE|-]
                          [--stage result|context] [--mode text|result-json]
                          [--timeout DURATION] [--json]
       sluice filter bench MODULE [--config JSON|@FILE] [--input FILE|-] [--n N]
                          [--mode text|result-json] [--timeout DURATION] [--json]
       sluice filter list [--json]
       sluice filter enable [NAME]

MODULE is builtin:NAME (builtin:shape, builtin:redact) or a path to a .wasm
file (ABI mcpf v1; see the wasm package's ABI.md).

test   runs the filter once over a result and prints its status, sizes,
       timings and output. The input (--input FILE, or - for stdin, the
       default) is a CallToolResult JSON object, or any other text, which is
       wrapped as a result with one text item. Offloaded bytes (shape) are
       counted, not stored. --stage is what the filter reads as its stage
       (default: context for builtin:shape, else result); --mode overrides
       the input mode (default: the built-in's, else text).
bench  measures the filter's per-call cost on pooled instances (after a
       warm-up) against a pass-through guest in the same mode, alternating
       the two: median and p90 of each, and the ratio of the medians.
       Default input: a 64 KiB text result; default --n 200.
       --timeout sets the per-call deadline (default 100ms, the gateway's):
       a filter slower than the gateway's deadline fails there too.
list   shows the filters of each running 'sluice serve' (asked over its
       status socket under the state directory) with their state and live
       counters: active, disabled for a server (failed too often in a row
       on its results; back after a one-minute cool-down), failed-to-load
       or inactive (capabilities: []). With no serve running it says so and
       lists the configured filters loaded by itself.
enable re-enables disabled filters (all, or the one named) in every
       running serve.

Exit status:
  0  the filter ran (test: any status but failed; list: every filter loaded)
  1  the filter failed or could not load; list: a filter failed to load
  2  bad flags or arguments, unreadable input
`,
		run: runFilter,
	})
}

// filterSubcommands are the subcommands of 'sluice filter'.
var filterSubcommands = []string{"test", "bench", "list", "enable"}

func runFilter(e *env) int {
	if len(e.args) == 0 {
		return usageErr(e, "filter", "want a subcommand: test, bench, list or enable")
	}
	sub, rest := e.args[0], e.args[1:]
	se := *e
	se.args = rest
	switch sub {
	case "test":
		return runFilterTest(&se, false)
	case "bench":
		return runFilterTest(&se, true)
	case "list":
		return runFilterList(&se)
	case "enable":
		return runFilterEnable(&se)
	case "-h", "--help", "help":
		extra := rest
		if len(extra) > 0 && slices.Contains(filterSubcommands, extra[0]) {
			extra = extra[1:]
		}
		if len(extra) > 0 {
			return usageErr(e, "filter", "unexpected argument %q after %s", extra[0], sub)
		}
		fmt.Fprint(e.stdout, commands["filter"].help)
		return exitOK
	}
	if near := gateway.Suggest(sub, filterSubcommands); near != "" {
		return usageErr(e, "filter", "unknown subcommand %q; did you mean %s? want test, bench, list or enable", sub, near)
	}
	return usageErr(e, "filter", "unknown subcommand %q; want test, bench, list or enable", sub)
}

func runFilterTest(e *env, bench bool) int {
	fs := flag.NewFlagSet("filter", flag.ContinueOnError)
	cfg := fs.String("config", "", "")
	input := fs.String("input", "", "")
	stage := fs.String("stage", "", "")
	mode := fs.String("mode", "", "")
	n := intFlag(fs, "n", gateway.DefaultBenchCalls, 1, 1_000_000)
	timeout := fs.Duration("timeout", 0, "")
	asJSON := fs.Bool("json", false, "")
	pos, code, ok := flagsOrExit(e, "filter", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "filter", "want exactly one MODULE (builtin:NAME or a .wasm path), got %d arguments", len(pos))
	}
	if *stage != "" && *stage != "result" && *stage != "context" {
		return usageErr(e, "filter", "--stage must be result or context")
	}
	if *mode != "" && *mode != "text" && *mode != "result-json" {
		return usageErr(e, "filter", "--mode must be text or result-json")
	}
	if *timeout < 0 || *timeout > time.Minute {
		return usageErr(e, "filter", "--timeout must be between 0 and 1m")
	}
	req := gateway.FilterTestRequest{Module: pos[0], Stage: *stage, Mode: *mode, CacheDir: gateway.CompileCacheDir(os.Getenv), Timeout: *timeout}
	if *cfg != "" {
		b, err := readConfigArg(*cfg)
		if err != nil {
			return usageErr(e, "filter", "--config: %v", err)
		}
		req.Config = b
	}
	src := *input
	if src == "" && !bench {
		if isTerminal(e.stdin) {
			return usageErr(e, "filter", "no input: pass --input FILE, or pipe a result (or text) on stdin")
		}
		src = "-"
	}
	if src != "" {
		b, err := readInput(src, e.stdin)
		if err != nil {
			return usageErr(e, "filter", "--input: %v", err)
		}
		req.Input = b
	} else {
		req.Input = benchInput()
	}
	ctx, stop := interruptible()
	defer stop()
	if bench {
		res, err := gateway.FilterBench(ctx, gateway.FilterBenchRequest{FilterTestRequest: req, N: *n})
		if err != nil {
			return failed(ctx, e.stderr, "filter bench", err)
		}
		if *asJSON {
			_ = writeJSON(e.stdout, res)
			return exitOK
		}
		fmt.Fprintf(e.stdout, "%s (mode %s), %d calls on a %s input, status %s, loaded in %s\n", clean(res.Name), res.Mode, res.N, sizeText(res.InputBytes), res.Status, dur(res.LoadTime))
		table(e.stdout, []string{
			"\tmedian\tp90",
			fmt.Sprintf("filter\t%s\t%s", dur(res.Median), dur(res.P90)),
			fmt.Sprintf("pass-through baseline\t%s\t%s", dur(res.BaselineMedian), dur(res.BaselineP90)),
		})
		fmt.Fprintf(e.stdout, "ratio (median / baseline median): %.1fx\n", res.Ratio)
		return exitOK
	}
	res, err := gateway.FilterTest(ctx, req)
	if err != nil {
		return failed(ctx, e.stderr, "filter test", err)
	}
	code = exitOK
	if res.Status == "failed" {
		code = exitFailure
	}
	if *asJSON {
		_ = writeJSON(e.stdout, res)
		return code
	}
	in := sizeText(res.InputBytes)
	if res.Wrapped {
		in += " (text, wrapped as one text item)"
	}
	rows := []string{
		"filter:\t" + clean(res.Name) + " (mode " + res.Mode + ", stage " + res.Stage + ")",
		"status:\t" + res.Status,
		"input:\t" + in,
	}
	switch res.Status {
	case "failed":
		rows = append(rows, "error:\t"+clean(res.Error))
	case "blocked":
		rows = append(rows, "reason:\t"+clean(res.Reason))
	default:
		rows = append(rows, "output:\t"+sizeText(res.OutputBytes))
	}
	if res.Offloads > 0 {
		rows = append(rows, fmt.Sprintf("offload:\t%s in %s (counted, not stored)", sizeText(res.Offloaded), plural(res.Offloads, "call")))
	}
	rows = append(rows, "time:\tload "+dur(res.LoadTime)+", call "+dur(res.CallTime))
	table(e.stdout, rows)
	if res.Output != nil {
		fmt.Fprintln(e.stdout, "--- output")
		fmt.Fprintln(e.stdout, clean(pretty(res.Output, "")))
	}
	return code
}

func runFilterList(e *env) int {
	fs := flag.NewFlagSet("filter", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	pos, code, ok := flagsOrExit(e, "filter", fs)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageErr(e, "filter", "list takes no arguments")
	}
	g, closeFn, code, ok := openGateway(e, "filter list", "")
	if !ok {
		return code
	}
	defer closeFn()
	ctx, stop := interruptible()
	defer stop()
	// A running serve's filters, with their live health and counters.
	if live, err := gateway.LiveFilterStatuses(ctx, g.StateDir()); err == nil {
		if *asJSON {
			_ = writeJSON(e.stdout, live)
			return exitOK
		}
		for _, l := range live {
			fmt.Fprintf(e.stdout, "sluice serve (pid %d, running since %s):\n", l.PID, l.Started.Format(time.RFC3339))
			filterTable(e, l.Filters, l.Outcomes)
		}
		return exitOK
	}
	fmt.Fprintln(e.stderr, "no sluice serve is running: the filters below are loaded by this command, so their counters are zero")
	lctx, cancel := context.WithTimeout(ctx, gateway.DefaultFilterLoadTimeout)
	defer cancel()
	loadErr := g.LoadFilters(lctx)
	st := g.FilterStatuses()
	code = exitOK
	if loadErr != nil {
		code = exitFailure
	}
	if *asJSON {
		_ = writeJSON(e.stdout, st)
		return code
	}
	filterTable(e, st, nil)
	if loadErr != nil && ctx.Err() != nil {
		return failed(ctx, e.stderr, "filter list", loadErr)
	}
	return code
}

// filterTable prints filter statuses (and, from a running serve, each
// filter's outcome counts).
func filterTable(e *env, st []gateway.FilterStatus, outcomes map[string]map[string]int) {
	rows := []string{"#\tMODULE\tSTAGE\tON ERROR\tCAPABILITIES\tSTATE\tCALLS\tFAILURES"}
	for _, s := range st {
		idx := strconv.Itoa(s.Index)
		if s.Default {
			idx = "default"
		}
		state := s.State
		if len(s.DisabledFor) > 0 {
			state += " for " + clean(strings.Join(s.DisabledFor, ","))
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d", idx, clean(s.Module), s.Stage, s.OnError, clean(jsonList(s.Capabilities)), state, s.Calls, s.Failures))
	}
	table(e.stdout, rows)
	for _, s := range st {
		if m := outcomes[s.Name]; len(m) > 0 {
			var parts []string
			for _, o := range []string{"pass", "modified", "blocked", "fail_open", "fail_closed"} {
				if m[o] > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", o, m[o]))
				}
			}
			fmt.Fprintf(e.stdout, "%s outcomes: %s\n", clean(s.Name), strings.Join(parts, ", "))
		}
		if !s.ReenabledAt.IsZero() {
			fmt.Fprintf(e.stdout, "%s: re-enabled at %s\n", clean(s.Name), s.ReenabledAt.Format(time.RFC3339))
		}
		if s.LastError != "" {
			fmt.Fprintf(e.stdout, "%s: %s\n", clean(s.Name), clean(s.LastError))
		}
	}
}

// runFilterEnable re-enables disabled filters in every running serve.
func runFilterEnable(e *env) int {
	if len(e.args) > 1 {
		return usageErr(e, "filter", "enable takes at most one filter name")
	}
	name := ""
	if len(e.args) == 1 {
		name = e.args[0]
	}
	g, closeFn, code, ok := openGateway(e, "filter enable", "")
	if !ok {
		return code
	}
	defer closeFn()
	ctx, stop := interruptible()
	defer stop()
	res, err := gateway.EnableLiveFilters(ctx, g.StateDir(), name)
	if err != nil {
		fmt.Fprintln(e.stderr, "sluice filter enable: no sluice serve is running; a filter is enabled again when serve starts")
		return exitFailure
	}
	for pid, names := range res {
		if len(names) == 0 {
			fmt.Fprintf(e.stdout, "serve pid %d: no disabled filter to enable\n", pid)
			continue
		}
		fmt.Fprintf(e.stdout, "serve pid %d: enabled %s\n", pid, clean(strings.Join(names, ", ")))
	}
	return exitOK
}

// readConfigArg reads --config: inline JSON or @FILE.
func readConfigArg(v string) (json.RawMessage, error) {
	b := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if b, err = os.ReadFile(name); err != nil {
			return nil, err
		}
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, fmt.Errorf("not valid JSON: %s", firstLineOf(string(b)))
	}
	return b, nil
}

// readInput reads FILE, or stdin for "-", bounded.
func readInput(src string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if src == "-" {
		r = stdin
	} else {
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxFilterInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFilterInput {
		return nil, fmt.Errorf("input is over %d bytes", maxFilterInput)
	}
	return b, nil
}

// benchInput is a 64 KiB text result of lines of prose.
func benchInput() []byte {
	var b strings.Builder
	for i := 0; b.Len() < defaultBenchInput; i++ {
		fmt.Fprintf(&b, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	out, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": b.String()[:defaultBenchInput]}}})
	return out
}

// dur prints a duration with 3 significant digits.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d >= time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%dns", d.Nanoseconds())
}
