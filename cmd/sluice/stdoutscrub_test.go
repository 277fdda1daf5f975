package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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

// echoRemote is a remote MCP server (streamable HTTP, JSON answers) that
// repeats the headers it is sent in its instructions, its tool's
// description, a tool result and a failed call's error, and refuses a
// GET (an event stream, the legacy transport) with a body repeating them.
func echoRemote(t *testing.T, heard func(r *http.Request) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "bad credentials: "+heard(r), http.StatusBadRequest)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ Name string }
		}
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/mcp" || json.Unmarshal(b, &m) != nil {
			http.NotFound(w, r)
			return
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		said := heard(r)
		var res any
		switch m.Method {
		case "initialize":
			res = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "echo", "version": "1"}, "instructions": "you sent " + said}
		case "tools/list":
			res = map[string]any{"tools": []any{
				map[string]any{"name": "whoami", "description": "says what it got: " + said, "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "refuse", "description": "fails", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			if m.Params.Name == "refuse" {
				answerJSON(w, map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32000, "message": "refused " + said, "data": said}})
				return
			}
			res = map[string]any{"content": []any{map[string]any{"type": "text", "text": "you sent " + said}}, "structuredContent": map[string]any{"heard": said}}
		default:
			answerJSON(w, map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			return
		}
		answerJSON(w, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func answerJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// TestRemoteServerEchoIsScrubbed: a remote server that repeats the
// headers sluice sends it (a declared bearer token and API key) puts
// them nowhere: not in find, describe or a call's output, its error, the
// catalog cache or the log.
func TestRemoteServerEchoIsScrubbed(t *testing.T) {
	w := newWorld(t)
	const bearer, apiKey = "rem0te-Bearer-Value-2026x", "Api/Key<2026>&value-2026x"
	t.Setenv("SLUICE_TEST_BEARER", bearer)
	t.Setenv("SLUICE_TEST_APIKEY", apiKey)
	srv := echoRemote(t, func(r *http.Request) string {
		return r.Header.Get("Authorization") + " and " + r.Header.Get("X-Api-Key")
	})
	hdrs := `headers: {Authorization: "Bearer ${env:SLUICE_TEST_BEARER}", X-Api-Key: "${env:SLUICE_TEST_APIKEY}"}`
	w.writeUser("approve: [\"rem__*\"]\nservers:\n" +
		remoteDecl("rem", srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http", hdrs) +
		remoteDecl("old", srv.URL+"/sse", "allowPrivate: true", "actionClass: read", "transport: sse", hdrs))
	t.Setenv("SLUICE_LOG_LEVEL", "debug")
	var outs []string
	for _, args := range [][]string{
		{"find", "--server", "rem", "--refresh"},
		{"describe", "rem__whoami"},
		{"call", "rem__whoami"},
		{"call", "rem__refuse"},
		{"find", "--server", "old", "--refresh"},
	} {
		r := sluiceProc(t, "", args...)
		noLeak(t, "sluice "+strings.Join(args, " "), r.stdout+r.stderr)
		outs = append(outs, r.stdout+r.stderr)
	}
	if all := strings.Join(outs, "\n"); !strings.Contains(all, "you sent Bearer (hidden) and (hidden)") || !strings.Contains(all, "refused Bearer (hidden)") ||
		!strings.Contains(all, "bad credentials: Bearer (hidden) and (hidden)") {
		t.Errorf("the echoed headers are not shown hidden:\n%s", all)
	}
	stdout, stderr := serveLog(t, nil, []string{call(10, "rem__whoami", ""), call(11, "rem__refuse", ""), tool(12, "describe", `{"capabilities":["rem__whoami"]}`)})
	noLeak(t, "serve's answers", stdout)
	noLeak(t, "serve's log", stderr)
	if n := noLeakOnDisk(t, w.root, w.cache); n == 0 {
		t.Error("no file to check")
	}
}

// TestRemoteOAuthTokensEchoIsScrubbed: a remote server that repeats the
// OAuth access token it is sent and the refresh token it issued shows
// neither, also after the tokens are refreshed while sluice serve runs
// (the server forgets each access token once it answered a call with it).
func TestRemoteOAuthTokensEchoIsScrubbed(t *testing.T) {
	w := newWorld(t)
	p := newProtectedServer(t)
	inner := p.srv.Config.Handler
	var issued []string // every token the server saw or issued
	p.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if r.URL.Path == "/mcp" && bytes.Contains(b, []byte(`"tools/call"`)) {
			p.mu.Lock()
			at := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			_, ok := p.access[at]
			var rts []string
			for rt := range p.refresh {
				rts = append(rts, rt)
			}
			if ok {
				issued = append(append(issued, at), rts...)
				p.access = map[string]string{} // the next call refreshes
			}
			p.mu.Unlock()
			if ok {
				var m struct{ ID json.RawMessage }
				json.Unmarshal(b, &m)
				answerJSON(rw, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{map[string]any{"type": "text",
					"text": "you sent " + r.Header.Get("Authorization") + "; your refresh token is " + strings.Join(rts, ",")}}}})
				return
			}
		}
		inner.ServeHTTP(rw, r)
	})
	w.writeUser("approve: [\"prot__*\"]\nservers:\n" + remoteDecl("prot", p.srv.URL+"/mcp", "allowPrivate: true", "actionClass: read", "transport: streamable-http"))
	authorizeInProcess(t, "prot")
	r := sluiceProc(t, "", "call", "prot__whoami")
	want(t, r, exitOK, "you sent Bearer (hidden); your refresh token is (hidden)")
	stdout, stderr := serveLog(t, nil, []string{call(10, "prot__whoami", ""), call(11, "prot__whoami", ""), call(12, "prot__whoami", "")})
	p.mu.Lock()
	refreshes, seen := p.refreshes, slices.Clone(issued)
	p.mu.Unlock()
	if refreshes < 3 || len(seen) < 8 {
		t.Fatalf("%d refreshes, %d tokens: the calls did not each refresh\n%s", refreshes, len(seen), stdout)
	}
	if n := strings.Count(stdout, "you sent Bearer (hidden); your refresh token is (hidden)"); n != 3 {
		t.Errorf("%d of 3 calls answered with the tokens hidden:\n%s", n, stdout)
	}
	for _, tok := range seen {
		for where, out := range map[string]string{"call": r.stdout + r.stderr, "serve's answers": stdout, "serve's log": stderr} {
			if strings.Contains(out, tok) {
				t.Errorf("%s shows the token %s:\n%s", where, tok, out)
			}
		}
	}
}

// authorizeInProcess runs `sluice auth ID --no-browser` and approves the
// authorization as a browser would.
func authorizeInProcess(t *testing.T, id string) {
	t.Helper()
	authURL, done, out, errb := startAuth(t, id)
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("sluice auth: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// TestServerInitializeErrorIsScrubbed: a server that refuses the
// handshake with an error repeating the token it was given does not put
// it in find's error, a call's error or the log.
func TestServerInitializeErrorIsScrubbed(t *testing.T) {
	w := newWorld(t)
	t.Setenv("SLUICE_TEST_LEAKED", leakedSecret)
	w.writeUser("servers:\n" + fixture(t, "bad", "-mode", "leaky,init-refused", "-leak-env", "LEAK_API_TOKEN") +
		"    env:\n      LEAK_API_TOKEN: \"${env:SLUICE_TEST_LEAKED}\"\n")
	t.Setenv("SLUICE_LOG_LEVEL", "debug")
	var all []string
	for _, args := range [][]string{{"find", "--server", "bad", "--refresh"}, {"call", "bad__echo", "text=x"}, {"servers", "--json"}} {
		r := sluiceProc(t, "", args...)
		noLeak(t, "sluice "+strings.Join(args, " "), r.stdout+r.stderr)
		all = append(all, r.stdout+r.stderr)
	}
	if !strings.Contains(all[0], "refused: the key (hidden) is not valid") {
		t.Errorf("find does not show the scrubbed refusal:\n%s", all[0])
	}
	noLeakOnDisk(t, w.root, w.cache)
}

// TestCLIToolStdoutIsScrubbed: a cli tool whose program prints the token
// its env was given (here printenv) returns it hidden, to the CLI and to
// an agent of sluice serve.
func TestCLIToolStdoutIsScrubbed(t *testing.T) {
	w := newWorld(t)
	t.Setenv("SLUICE_TEST_LEAKED", leakedSecret)
	w.writeUser(`approve: ["api__*"]
servers:
  api:
    cli:
      env:
        API_TOKEN: "${env:SLUICE_TEST_LEAKED}"
      tools:
        show:
          argv: [printenv, API_TOKEN]
          annotations: {readOnlyHint: true}
`)
	r := sluiceProc(t, "", "call", "api__show")
	want(t, r, exitOK, "(hidden)")
	noLeak(t, "sluice call api__show", r.stdout+r.stderr)
	stdout, stderr := serveLog(t, []string{"--mode", "flat"}, []string{tool(2, "api__show", `{}`)})
	if !strings.Contains(stdout, "(hidden)") {
		t.Errorf("the tool's answer hides nothing:\n%s", stdout)
	}
	noLeak(t, "serve's answer", stdout)
	noLeak(t, "serve's log", stderr)
}
