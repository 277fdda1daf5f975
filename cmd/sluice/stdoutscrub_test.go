package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// leakedSecret is the credential the hostile fixture is given in its env
// and repeats on every path of ModeLeaky: with a '/', '<', '>' and '&',
// so Go's encoder writes it escaped (\u003c ...).
const leakedSecret = "Sk/<K3y>&Value-2026x"

// leakTail is a part of leakedSecret no encoder escapes: found in any
// output however the secret around it was written, in any case.
const leakTail = "value-2026x"

// leakyDecl declares the hostile fixture as server "leak", its token
// taken from the environment (so no file of the test holds it).
func leakyDecl(t *testing.T) string {
	t.Setenv("SLUICE_TEST_LEAKED", leakedSecret)
	return "approve: [\"leak__*\"]\nsandbox:\n  timeoutMs: 60000\nservers:\n" +
		fixture(t, "leak", "-mode", "leaky", "-leak-env", "LEAK_API_TOKEN") +
		"    env:\n      LEAK_API_TOKEN: \"${env:SLUICE_TEST_LEAKED}\"\n"
}

// noLeak fails when out shows the secret in any form.
func noLeak(t *testing.T, where, out string) {
	t.Helper()
	if i := strings.Index(strings.ToLower(out), leakTail); i >= 0 {
		t.Errorf("%s shows the server's credential: ...%s...", where, out[max(0, i-300):min(len(out), i+100)])
	}
}

// noLeakOnDisk fails when any file under the dirs holds the secret.
func noLeakOnDisk(t *testing.T, dirs ...string) (files int) {
	t.Helper()
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				files++
				noLeak(t, "file "+p, string(b))
			}
			return nil
		})
	}
	return files
}

// TestServerStdoutIsScrubbedOfItsCredentials: a server that repeats the
// token the gateway gave it in its env, on every path a message takes
// (tool results of every shape, an error's message and data, progress
// and log notifications, resources, prompts, completions, its catalog
// and instructions), puts it nowhere: not in what an MCP client of
// `sluice serve` reads (gateway and flat mode, code mode), not in the
// CLI's output, not in the log, not in any file sluice writes (catalog
// cache, stored results), and the answers are still answers.
func TestServerStdoutIsScrubbedOfItsCredentials(t *testing.T) {
	w := newWorld(t)
	w.writeUser(leakyDecl(t))
	t.Setenv("SLUICE_LOG_LEVEL", "debug")
	frames := []string{
		call(10, "leak__leak_error", ""),
		call(11, "leak__leak_big_error", ""),
		call(12, "leak__leak_notify", `{"progressToken":"p1"}`),
		call(13, "leak__leak_fields", ""),
		call(15, "leak__leak_structured", ""),
		call(16, "leak__leak_huge_text", ""),
		call(17, "leak__leak_escaped_content", ""),
		tool(20, "find", `{"query":"leak"}`),
		tool(21, "describe", `{"capabilities":["leak__leak_fields","leak__leak_error","leak__leak_long_title"]}`),
		tool(30, "execute", `{"script":"print(leak.leak_fields())\nprint(call(\"leak__leak_error\", {}))"}`),
	}
	stdout, stderr := serveLog(t, nil, frames)
	noLeak(t, "serve's stdout (gateway mode)", stdout)
	noLeak(t, "serve's log (gateway mode)", stderr)
	for _, want := range []string{`"id":10,`, `"id":13,`, `"id":16,`, `"id":30,`, "(hidden)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("serve's answers lack %s:\n%.3000s", want, stdout)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("serve wrote a line that is not JSON: %.300s", line)
		}
	}

	stdout, stderr = serveLog(t, []string{"--mode", "flat"}, []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		tool(8, "leak__leak_error", `{}`),
		tool(9, "leak__leak_fields", `{}`),
		tool(10, "leak__leak_notify", `{}`),
	})
	noLeak(t, "serve's stdout (flat mode)", stdout)
	noLeak(t, "serve's log (flat mode)", stderr)
	for _, want := range []string{`"id":2,`, `"id":8,`, `"id":9,`, `"id":10,`, "leak__leak_long_title"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("flat serve's answers lack %s:\n%.3000s", want, stdout)
		}
	}

	for _, args := range [][]string{
		{"find", "--server", "leak", "--refresh"},
		{"find", "leak", "--json"},
		{"describe", "leak__leak_long_title"},
		{"call", "leak__leak_error"},
		{"call", "leak__leak_fields"},
		{"call", "leak__leak_notify"},
	} {
		r := sluiceProc(t, "", args...)
		if r.code != exitOK && args[0] != "call" {
			t.Errorf("sluice %v: %s", args, r)
		}
		noLeak(t, "sluice "+strings.Join(args, " "), r.stdout+r.stderr)
	}
	if n := noLeakOnDisk(t, w.root, w.cache); n == 0 {
		t.Error("sluice wrote no file to check (no catalog cache?)")
	}
}

// TestServerStdoutIsScrubbedOverHTTP: the same server behind `sluice
// serve --http`: an MCP client over HTTP, and the dashboard's API (tools,
// activity, stored results) see no credential either.
func TestServerStdoutIsScrubbedOverHTTP(t *testing.T) {
	w := newWorld(t)
	w.writeUser(leakyDecl(t))
	addr, _, stop := startHTTPServeProc(t, nil)
	stop = once(stop)
	defer stop()
	c := &mcpHTTP{t: t, url: "http://" + addr + "/mcp"}
	var got []string
	add := func(m map[string]any) {
		b, _ := json.Marshal(m)
		got = append(got, string(b))
	}
	add(c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, f := range []string{
		call(10, "leak__leak_error", ""),
		call(11, "leak__leak_fields", ""),
		call(12, "leak__leak_notify", `{"progressToken":"p1"}`),
		call(13, "leak__leak_huge_text", ""),
		tool(20, "find", `{"query":"leak"}`),
		tool(21, "describe", `{"capabilities":["leak__leak_long_title"]}`),
	} {
		add(c.post(f))
	}
	all := strings.Join(got, "\n")
	noLeak(t, "the HTTP client's answers", all)
	if !strings.Contains(all, "(hidden)") || !strings.Contains(all, "handle r-") {
		t.Errorf("the answers hide nothing or stored no result:\n%.3000s", all)
	}
	d := newDash(t, addr)
	for _, p := range []string{"/admin/api/servers", "/admin/api/tools", "/admin/api/activity", "/admin/api/results", "/admin/tools", "/admin/servers"} {
		_, body := d.get(p)
		noLeak(t, "GET "+p, body)
		if p == "/admin/api/results" {
			if i := strings.Index(body, `r-`); i >= 0 {
				h := body[i : i+34]
				_, page := d.get("/admin/api/results/" + h)
				noLeak(t, "GET /admin/api/results/"+h, page)
				if !strings.Contains(page, "(hidden)") {
					t.Errorf("the stored result %s hides nothing: %.500s", h, page)
				}
			} else {
				t.Errorf("the dashboard lists no stored result: %.500s", body)
			}
		}
	}
	stop()
	noLeakOnDisk(t, w.root, w.cache)
}

// TestServerStdoutIsScrubbedInFlatListings: in flat mode over HTTP, the
// server's resources, templates, prompts and completions, read through
// sluice, hide the credential the server repeats in them.
func TestServerStdoutIsScrubbedInFlatListings(t *testing.T) {
	w := newWorld(t)
	w.writeUser(leakyDecl(t))
	addr, _, stop := startHTTPServeProc(t, nil, "--mode", "flat")
	stop = once(stop)
	defer stop()
	c := &mcpHTTP{t: t, url: "http://" + addr + "/mcp"}
	c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var got []string
	post := func(f string) string {
		b, _ := json.Marshal(c.post(f))
		got = append(got, string(b))
		return string(b)
	}
	// the server's prompts and resources are registered once it runs
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(post(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`), `leak__leak`) ||
		!strings.Contains(post(`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`), `leak://`) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's prompts and resources were never listed:\n%s", strings.Join(got, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	wants := map[string]string{
		`{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`:                                                                                           `leak://t/`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"leak://secret/(hidden)"}}`:                                                           "resource body (hidden)",
		`{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"leak__leak"}}`:                                                                         "prompt (hidden)",
		`{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"leak__leak"},"argument":{"name":"a","value":"v"}}}`: "v (hidden)",
	}
	for f, want := range wants {
		if out := post(f); !strings.Contains(out, want) {
			t.Errorf("%s answered without %q: %.1000s", f, want, out)
		}
	}
	noLeak(t, "the flat answers", strings.Join(got, "\n"))
	stop()
	noLeakOnDisk(t, w.root, w.cache)
}

// once is f, run at its first call only.
func once(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}
