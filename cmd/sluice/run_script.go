package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sluice/gateway"
)

// maxScriptBytes bounds a script read from a file or stdin.
const maxScriptBytes = 4 << 20

func init() {
	register("run", &command{
		summary: "run a code-mode Starlark script that calls tools as functions",
		help: `Usage: sluice run FILE|- [--json] [--timeout DURATION] [--project DIR] [--profile NAME]

Runs a code-mode script (Starlark, a small Python dialect) from FILE, or from
stdin with -. Every trusted server is a module named after its id and every
tool a function taking keyword arguments:

    entries = fs.list_directory(path="/tmp")
    r = call("fs__read_text_file", {"path": "a.txt"})   # errors as values
    outs = parallel([("fx__echo", {"text": t}) for t in ["a", "b"]], limit=4)
    print("read", len(entries))
    result = {"first": entries[:3]}

The script assigns 'result'; print() goes to the log. 'sluice describe
SERVER__TOOL' shows a tool's code-mode signature. Untrusted and stale
project servers are not modules and are never launched. A trusted server
without a recorded catalog is launched once to list its tools, and only when
the script names one of its tools.

Before anything runs, the script is checked (unknown tools, unknown or
missing arguments: every problem at once) and every tool it names is
admitted: a tool that needs approval refuses the whole run (exit 4) and the
message names the 'approve:' glob or action class that lets it run. Tools
named only at run time are refused when called (call() returns the refusal
as a value).

Limits come from the 'sandbox:' block of the user file (maxSteps, timeoutMs,
maxCalls, maxResultBytes, maxLogBytes, maxOutputBytes, maxMemoryBytes,
maxConcurrency, maxDepth); --timeout lowers the wall time further. Two bounds
are fixed: a value may nest at most 200 levels deep to be printed, compared,
hashed or encoded (valueDepth), and a tuple used as a dict key may have at
most 65536 parts (keySize). The time limit and SIGTERM hold inside every
built-in.

Output:
  The script's log goes to stderr, then its result, pretty JSON, to stdout,
  then one line summing up the tool calls and the run's counters (stderr).
  A result a context filter shortened is shown as text: the shortened
  answer, the note saying what was left out and the handle of the full
  value ('sluice result HANDLE' reads it in pages).
  A failed run prints its kind, message, line:column, backtrace, problems
  and the fix on stderr. --json prints the whole run object on stdout:
  {"result", "resultFiltered", "resultBytes", "logs", "calls", "stats",
  "notes", "error"}; the exit status is the same.

Flags:
  --json              print the run object as JSON
  --timeout DURATION  wall time of the run (e.g. 10s), capped by the
                      sandbox.timeoutMs setting (default 30s)
  --project DIR       the project root (default: found from the working
                      directory)
` + profileHelpWide + `

Exit status:
  0    the script ran and assigned its result
  1    sluice or a limit stopped it: a run limit (steps, time, calls, bytes,
       memory, depth, valueDepth, keySize), a fail-closed filter, sluice
       itself failed
  2    bad input: flags, an unreadable file, a syntax or pre-flight error, a
       runtime error of the script (fail(), wrong types)
  3    a tool failed (isError, crash, timeout, or its server did not start)
       and the script did not handle it
  4    refused: a tool needs approval, or the script names an untrusted or
       stale server
  130  interrupted (SIGINT or SIGTERM); every launched server was stopped
`,
		run: runScript,
	})
}

func runScript(e *env) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	timeout := fs.Duration("timeout", 0, "")
	project := fs.String("project", "", "")
	profile := fs.String("profile", "", "")
	pos, code, ok := flagsOrExit(e, "run", fs)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 0:
		return usageErr(e, "run", "missing FILE (or - for stdin)")
	case len(pos) > 1:
		return usageErr(e, "run", "one script at a time, got %d arguments: %s", len(pos), jsonList(pos))
	case *timeout < 0:
		return usageErr(e, "run", "--timeout must be positive, got %s", *timeout)
	}
	src, name, err := readScript(pos[0], e.stdin)
	if err != nil {
		return usageErr(e, "run", "%v", err)
	}

	g, closeFn, code, ok := openGatewayProfile(e, "run", *project, *profile)
	if !ok {
		return code
	}
	defer closeFn()
	ctx, cancel := interruptible()
	defer cancel()

	res, err := g.Execute(ctx, gateway.ExecuteRequest{Script: src, Filename: name, Timeout: *timeout})
	if err != nil {
		return failed(ctx, e.stderr, "run", err)
	}
	if *asJSON {
		if err := writeJSON(e.stdout, res); err != nil {
			fmt.Fprintf(e.stderr, "sluice run: cannot write the result: %v\n", err)
			return exitFailure
		}
	} else {
		printRun(e, res)
	}
	if res.Error != nil && res.Error.Kind == gateway.RunCancelled && ctx.Err() != nil {
		if !*asJSON {
			fmt.Fprintln(e.stderr, "sluice run: interrupted; launched servers were stopped")
		}
		return exitInterrupted
	}
	return runExit(res.Error)
}

// runExit maps a run's error kind to the exit status documented in help.
func runExit(e *gateway.RunError) int {
	if e == nil {
		return exitOK
	}
	switch e.Kind {
	case gateway.RunSyntax, gateway.RunRuntime:
		return exitUsage
	case gateway.RunTool:
		return exitToolError
	case gateway.RunAdmission:
		return exitRefused
	default: // limit, filter, cancelled
		return exitFailure
	}
}

// readScript reads FILE or stdin (-), bounded, and returns the source and
// the name shown in positions (the base name: no directories of this
// machine reach a model).
func readScript(src string, stdin io.Reader) (string, string, error) {
	var r io.Reader
	name := "stdin.star"
	if src == "-" {
		r = stdin
	} else {
		f, err := os.Open(src)
		if err != nil {
			return "", "", fmt.Errorf("cannot read the script: %v", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return "", "", fmt.Errorf("%s is a directory; pass a .star file", src)
		}
		r = f
		name = filepath.Base(src)
	}
	b, err := io.ReadAll(io.LimitReader(r, maxScriptBytes+1))
	if err != nil {
		return "", "", fmt.Errorf("cannot read the script: %v", err)
	}
	if len(b) > maxScriptBytes {
		return "", "", fmt.Errorf("the script is over %d bytes; scripts call tools for data instead of holding it", maxScriptBytes)
	}
	return string(b), name, nil
}

// printRun renders a run for a person: log (stderr), result (stdout),
// summary (stderr), then the error, if any (stderr).
func printRun(e *env, res *gateway.ExecuteResult) {
	term := isTerminal(e.stdout)
	for _, l := range res.Logs {
		fmt.Fprintln(e.stderr, clean(l))
	}
	if res.Error == nil {
		if res.ResultFiltered {
			// A shortened value is an MCP result: show its text (the
			// answer, then the note naming the handle) as a person reads
			// it, not as the JSON a model gets (that is --json).
			handle, err := printShortened(e.stdout, res.Result, term)
			if err != nil {
				fmt.Fprintln(e.stdout, pretty(res.Result, ""))
			}
			if handle != "" {
				fmt.Fprintf(e.stderr, "sluice run: the result (%s) was shortened by a context filter; the whole value: sluice result %s\n", sizeText(res.ResultBytes), clean(handle))
			} else {
				fmt.Fprintf(e.stderr, "sluice run: the result (%s) was shortened by a context filter\n", sizeText(res.ResultBytes))
			}
		} else {
			body := pretty(res.Result, "")
			if term {
				body = clean(body)
			}
			fmt.Fprintln(e.stdout, body)
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintf(e.stderr, "note: %s\n", clean(n))
	}
	fmt.Fprintln(e.stderr, callsLine(res))
	if res.Error != nil {
		printRunError(e.stderr, res.Error)
	}
}

// callsLine sums up the calls and counters in one line, e.g.
// "calls: 3 (1 failed; 2.1 KiB in) fx__echo×2 fx__fail×1 · 1234 steps, 12 ms".
func callsLine(res *gateway.ExecuteResult) string {
	failed, in := 0, 0
	var order []string
	count := map[string]int{}
	for _, c := range res.Calls {
		if !c.OK {
			failed++
		}
		in += c.Bytes
		if count[c.Capability] == 0 {
			order = append(order, c.Capability)
		}
		count[c.Capability]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "calls: %d", len(res.Calls))
	if len(res.Calls) > 0 {
		fmt.Fprintf(&b, " (%d failed, %s in)", failed, sizeText(in))
		const shown = 6
		for i, c := range order {
			if i == shown {
				fmt.Fprintf(&b, " +%d more", len(order)-shown)
				break
			}
			fmt.Fprintf(&b, " %s×%d", clean(c), count[c])
		}
	}
	s := res.Stats
	fmt.Fprintf(&b, " · %d steps, %d ms, max depth %d", s.Steps, s.ElapsedMs, s.MaxDepth)
	if res.Error == nil {
		fmt.Fprintf(&b, ", result %s", sizeText(res.ResultBytes))
	}
	if res.LogsTruncated {
		b.WriteString(", log truncated (maxLogBytes)")
	}
	return b.String()
}

func printRunError(w io.Writer, e *gateway.RunError) {
	kind := string(e.Kind)
	if e.Limit != "" {
		kind += " (" + e.Limit + ")"
	}
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf(" at line %d:%d", e.Line, e.Column)
	}
	fmt.Fprintf(w, "sluice run: %s error%s: %s\n", kind, at, clean(e.Message))
	for _, p := range e.Problems {
		fmt.Fprintf(w, "  %d:%d: %s\n", p.Line, p.Column, clean(p.Message))
	}
	if len(e.Backtrace) > 0 {
		fmt.Fprintln(w, "  backtrace (innermost last):")
		for _, f := range e.Backtrace {
			fmt.Fprintf(w, "    %s\n", clean(f))
		}
	}
	if e.Remedy != "" {
		fmt.Fprintf(w, "  fix: %s\n", clean(e.Remedy))
	}
}
