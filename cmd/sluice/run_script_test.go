package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sluice/gateway"
)

func writeScript(t *testing.T, w *world, name, src string) string {
	t.Helper()
	p := filepath.Join(w.root, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunScriptOutputAndExitCodes(t *testing.T) {
	demo := filepath.Join(repoRoot(t), "testdata", "scripts", "fixture_demo.star")
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx") + "approve: [\"fx__fail\"]\n")

	// The committed demo: result on stdout (pretty JSON, exact numbers),
	// log and the calls line on stderr.
	r := sluice(t, "", "run", demo)
	want(t, r, exitOK, "fx__fail failed as expected (tool)", "calls: 10 (1 failed", "fx__slow×5", "steps")
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout must be the result JSON alone: %v\n%s", err, r)
	}
	if string(got["sum"]) != "12345678901234567891.5" || string(got["greeting"]) != `"hello from a script"` || string(got["parallel_ok"]) != "5" {
		t.Fatalf("result:\n%s", r)
	}
	if !strings.Contains(r.stdout, "\n  \"greeting\"") {
		t.Fatalf("the result is pretty-printed:\n%s", r)
	}
	noChildren(t, "run")

	// --json: the whole run object; stdin as the script.
	r = sluice(t, "print('hi')\nresult = fx.echo(text='x')\n", "run", "-", "--json")
	want(t, r, exitOK)
	var run struct {
		Result json.RawMessage `json:"result"`
		Logs   []string        `json:"logs"`
		Calls  []struct {
			Capability string `json:"capability"`
			OK         bool   `json:"ok"`
			Bytes      int    `json:"bytes"`
		} `json:"calls"`
		Stats struct {
			Steps uint64 `json:"steps"`
		} `json:"stats"`
		ResultBytes int `json:"resultBytes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatalf("--json: %v\n%s", err, r)
	}
	if string(run.Result) != `"x"` || len(run.Logs) != 1 || run.Logs[0] != "hi" || len(run.Calls) != 1 || !run.Calls[0].OK || run.Calls[0].Bytes == 0 || run.Stats.Steps == 0 || run.ResultBytes != 3 {
		t.Fatalf("--json run object:\n%s", r)
	}

	for _, tc := range []struct {
		name, src string
		code      int
		frags     []string
	}{
		{"syntax", "x = fx.ecko(text='a')\ny = fx.echo(txt=1)\n", exitUsage,
			[]string{"syntax error at line 1:", "1:8: server \"fx\" has no tool fx.ecko (did you mean fx.echo?)", "2:"}},
		{"runtime", "def f():\n    fail('boom')\nf()\n", exitUsage,
			[]string{"runtime error at line 2:", "boom", "backtrace (innermost last):", "runtime.star:3:"}},
		{"tool", "fx.fail()\n", exitToolError,
			[]string{"tool error at line 1:", "the fixture failed on purpose"}},
		{"refused", "a = fx.echo(text='a')\nfx.crash()\n", exitRefused,
			[]string{"admission error", "fx__crash", "needs approval", "fix: add \"fx__crash\" to the 'approve:' list", "calls: 0"}},
		{"handled", "r = call('fx__fail')\nresult = r.ok\n", exitOK, []string{"false", "calls: 1 (1 failed"}},
	} {
		p := writeScript(t, w, tc.name+".star", tc.src)
		r := sluice(t, "", "run", p)
		want(t, r, tc.code, tc.frags...)
		if tc.code != exitOK && strings.TrimSpace(r.stdout) != "" {
			t.Fatalf("%s: a failed run prints nothing on stdout:\n%s", tc.name, r)
		}
		if strings.Contains(r.stderr, p) {
			t.Fatalf("%s: the script's directory must not appear:\n%s", tc.name, r)
		}
		noChildren(t, tc.name)
	}

	// A limit from the user file: exit 1, named.
	w.writeUser("servers:\n" + fixture(t, "fx") + "sandbox: {maxCalls: 1}\n")
	p := writeScript(t, w, "limit.star", "fx.echo(text='1')\nfx.echo(text='2')\n")
	want(t, sluice(t, "", "run", p), exitFailure, "limit (calls) error", "maxCalls")

	// --timeout caps the wall time.
	p = writeScript(t, w, "slow.star", "fx.slow(ms=30000, steps=1)\n")
	want(t, sluice(t, "", "run", p, "--timeout", "300ms"), exitFailure, "limit (time) error")

	// Usage problems.
	want(t, sluice(t, "", "run"), exitUsage, "missing FILE")
	want(t, sluice(t, "", "run", "a.star", "b.star"), exitUsage, "one script at a time")
	want(t, sluice(t, "", "run", filepath.Join(w.root, "nope.star")), exitUsage, "cannot read the script")
	want(t, sluice(t, "", "run", w.root), exitUsage, "is a directory")
	want(t, sluice(t, "", "run", p, "--timeout", "-1s"), exitUsage, "--timeout must be positive")
	r = sluice(t, "", "run", "--help")
	want(t, r, exitOK, "Usage: sluice run FILE|-", "Exit status:")
	noChildren(t, "run")
}

// An untrusted project server is not a module: the run is refused with the
// trust remedy and its command never runs.
func TestRunScriptCanary(t *testing.T) {
	w := newWorld(t)
	marker := filepath.Join(t.TempDir(), "launched")
	w.writeProject(fmt.Sprintf("servers:\n  canary:\n    command: touch\n    args: [%q]\n", marker))
	p := writeScript(t, w, "canary.star", "result = canary.anything()\n")
	r := sluice(t, "", "run", p)
	want(t, r, exitRefused, "admission error", "server canary is untrusted", "fix: run 'sluice trust canary")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the canary was launched")
	}
	noChildren(t, "canary")
}

func TestRunExitTable(t *testing.T) {
	for _, tc := range []struct {
		err  *gateway.RunError
		code int
	}{
		{nil, exitOK},
		{&gateway.RunError{Kind: gateway.RunSyntax}, exitUsage},
		{&gateway.RunError{Kind: gateway.RunRuntime}, exitUsage},
		{&gateway.RunError{Kind: gateway.RunTool}, exitToolError},
		{&gateway.RunError{Kind: gateway.RunAdmission}, exitRefused},
		{&gateway.RunError{Kind: gateway.RunLimit}, exitFailure},
		{&gateway.RunError{Kind: gateway.RunFilter}, exitFailure},
		{&gateway.RunError{Kind: gateway.RunCancelled}, exitFailure},
	} {
		if got := runExit(tc.err); got != tc.code {
			t.Errorf("%+v: exit %d, want %d", tc.err, got, tc.code)
		}
	}
}

// aliasedEqual compares two values that share their parts: 10^12 leaves in
// a few kilobytes, so the comparison is one built-in call that would run
// for hours if it were not interruptible.
const aliasedEqual = `a = [list(range(1000))] * 1000
b = [list(range(1000))] * 1000
x = [[a] * 1000] * 1000
y = [[b] * 1000] * 1000
r = x == y
result = r
`

// TestRunSignalEndsBuiltin: SIGTERM ends a run whose time is spent inside
// one built-in (a comparison, a sort of shared lists): the process exits
// with the documented status and message.
func TestRunSignalEndsBuiltin(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	for _, tc := range []struct {
		name, src string
		after     time.Duration // when SIGTERM is sent
	}{
		{"equal", aliasedEqual, 500 * time.Millisecond},
		{"sorted", "result = len(sorted([list(range(100000))] * 20000))\n", 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeScript(t, w, "sig.star", tc.src)
			cmd := exec.Command(sluiceBin, "run", p)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			time.Sleep(tc.after)
			sent := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("sluice run did not exit within 10 s of SIGTERM:\n%s", out.String())
			}
			took := time.Since(sent)
			code := cmd.ProcessState.ExitCode()
			// A script that ended on its own before the signal would exit
			// 0 or with a limit: both mean the case tested nothing.
			if code != exitInterrupted || !strings.Contains(out.String(), "interrupted") {
				t.Fatalf("exit %d, want %d (interrupted):\n%s", code, exitInterrupted, out.String())
			}
			t.Logf("%s: exited %d %v after SIGTERM", tc.name, code, took.Round(time.Millisecond))
		})
	}
}

// TestRunLimitsHoldInsideBuiltin: the two runs through the binary.
// str() of a list nested a million deep ends with the valueDepth limit;
// sorted() of shared lists ends at --timeout 1s.
func TestRunLimitsHoldInsideBuiltin(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers: {}\n")
	deep := writeScript(t, w, "deep.star", "x = []\nfor i in range(1000000):\n    x = [x]\nresult = len(str(x))\n")
	start := time.Now()
	r := sluiceProc(t, "", "run", deep)
	want(t, r, exitFailure, "limit (valueDepth) error at line 4", "nested more than 200 levels deep", "fix: keep values flatter")
	t.Logf("str(deep): exit %d after %v", r.code, time.Since(start).Round(time.Millisecond))

	sorted := writeScript(t, w, "sorted.star", "result = len(sorted([list(range(10000))] * 20000))\n")
	start = time.Now()
	r = sluiceProc(t, "", "run", "--timeout", "1s", sorted)
	want(t, r, exitFailure, "limit (time) error at line 1", "longer than 1s")
	t.Logf("sorted with --timeout 1s: exit %d after %v", r.code, time.Since(start).Round(time.Millisecond))
}
