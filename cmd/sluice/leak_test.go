package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sluice/gateway/mcp/mcptest"
)

// The README's filter config: builtin:redact at the result stage,
// fail-closed (the default), shape by default at 16 KiB.
const readmeFilters = "filters:\n  - module: builtin:redact\n    stage: result\n    onError: fail-closed\n"

// serveLog runs 'sluice serve' over stdio with args, sends an initialize
// handshake and the frames, waits for an answer to each request, closes
// stdin and returns what serve wrote to stdout and to stderr.
func serveLog(t *testing.T, args []string, frames []string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(sluiceBin, append([]string{"serve"}, args...)...)
	stdin, out, errb := startPiped(t, cmd)
	waitFor := func(id string) {
		deadline := time.Now().Add(3 * time.Minute) // a loaded machine starts serve slowly
		for !strings.Contains(out.String(), `"id":`+id+`,`) && !strings.Contains(out.String(), `"id":`+id+`}`) {
			if time.Now().After(deadline) {
				t.Fatalf("no answer to request %s:\nstdout:\n%.4000s\nstderr:\n%.4000s", id, out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	waitFor(`"init"`)
	for _, f := range frames {
		io.WriteString(stdin, f+"\n")
		var m struct{ ID json.RawMessage }
		if json.Unmarshal([]byte(f), &m) == nil && len(m.ID) > 0 {
			waitFor(string(m.ID))
		}
	}
	stdin.Close()
	_ = waitExit(t, cmd, "stdin's end") // the output is what the callers check
	return out.String(), errb.String()
}

// serveFrames runs 'sluice serve' over stdio with args, sends the frames
// (an initialize handshake first), waits for a response to every request
// id and returns every frame serve wrote, decoded.
func serveFrames(t *testing.T, args []string, frames []string) []map[string]any {
	t.Helper()
	stdout, _ := serveLog(t, args, frames)
	var res []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %.200q", line)
		}
		m["_bytes"] = len(line)
		res = append(res, m)
	}
	return res
}

// strs returns every string of a decoded JSON value, member names included.
func strs(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = strs(e, out)
		}
	case map[string]any:
		for k, e := range x {
			out = append(strs(e, out), k)
		}
	}
	return out
}

func call(id int, capability string, meta string) string {
	m := ""
	if meta != "" {
		m = `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call","arguments":{"capability":%q,"arguments":{}}%s}}`, id, capability, m)
}

func tool(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

// TestServeRedactsEveryPath: with the README's redaction config, the key a
// hostile server plants reaches the agent through none of the paths, and
// every answer of the gateway tools fits the 16 KiB budget.
func TestServeRedactsEveryPath(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nsandbox:\n  timeoutMs: 60000\nservers:\n" + fixture(t, "fx", "-mode", "leaky") + readmeFilters)
	frames := []string{
		call(10, "fx__leak_error", ""),
		call(11, "fx__leak_big_error", ""),
		call(12, "fx__leak_notify", `{"progressToken":"p1"}`),
		call(13, "fx__leak_fields", ""),
		call(14, "fx__leak_split", ""),
		call(15, "fx__leak_structured", ""),
		call(16, "fx__leak_huge_text", ""),
		call(17, "fx__leak_escaped_content", ""),
		tool(20, "find", `{"query":"leak"}`),
		tool(21, "describe", `{"capabilities":["fx__leak_fields","fx__leak_error","fx__leak_long_title"]}`),
		tool(22, "find", `{"query":"long title"}`),
		tool(30, "execute", `{"script":"r = fx.leak_fields()\nprint(r)\nprint(fx.leak_split())\nresult = {\"v\": fx.leak_structured()}"}`),
		tool(31, "execute", `{"script":"e = call(\"fx__leak_error\", {})\nprint(e)\nfail(\"boom AKIA\" + \"IOSFODNN7EXAMPLE \" + \"x\" * 3000000)"}`),
		tool(32, "execute", `{"script":"for i in range(300):\n    print(\"line %d AKIA\" % i + \"IOSFODNN7EXAMPLE\")\nresult = \"y\" * 20000"}`),
		// an exception whose text carries the key, after calls that failed
		tool(33, "execute", `{"script":"for i in range(3):\n    call(\"fx__leak_big_error\", {})\nd = {}\nx = d[\"AKIA\" + \"IOSFODNN7EXAMPLE \" + \"z\" * 100000]"}`),
	}
	got := serveFrames(t, nil, frames)
	budget := 16384
	var handle string
	seen := map[float64]bool{}
	for _, f := range got {
		for _, s := range strs(f, nil) {
			if strings.Contains(s, mcptest.LeakKey) {
				b, _ := json.Marshal(f)
				t.Errorf("the key reached the agent in frame %.1500s", b)
				break
			}
		}
		id, _ := f["id"].(float64)
		seen[id] = true
		if id >= 10 && f["_bytes"].(int) > budget+2048 {
			t.Errorf("answer %v is %d bytes, over the %d budget (plus the envelope)", id, f["_bytes"], budget)
		}
		if id == 17 {
			if b, _ := json.Marshal(f); !strings.Contains(string(b), "handle r-") {
				t.Errorf("the result with escaped member names was not shortened and stored: %.1500s", b)
			}
		}
		if id == 16 {
			b, _ := json.Marshal(f)
			if i := strings.Index(string(b), "handle r-"); i >= 0 {
				handle = string(b)[i+7 : i+7+34]
				if !strings.Contains(string(b), `"type":"resource_link"`) || !strings.Contains(string(b), `"uri":"sluice://results/`+handle+`"`) {
					t.Errorf("the shortened result has no resource_link to the stored one: %.3000s", b)
				}
			}
		}
	}
	for _, id := range []float64{10, 11, 12, 13, 14, 15, 16, 17, 20, 21, 22, 30, 31, 32, 33} {
		if !seen[id] {
			t.Errorf("no answer to %v", id)
		}
	}
	if handle == "" {
		for _, f := range got {
			if id, _ := f["id"].(float64); id == 16 {
				b, _ := json.Marshal(f)
				t.Fatalf("the huge result named no handle: %.2000s", b)
			}
		}
	}
	// read_result pages are held to the budget whatever length is asked;
	// the stored result is a resource too, read in pages.
	uri := "sluice://results/" + handle
	got = serveFrames(t, nil, []string{
		tool(40, "read_result", `{"handle":"`+handle+`","offset":0,"length":1048576}`),
		`{"jsonrpc":"2.0","id":41,"method":"resources/read","params":{"uri":"` + uri + `"}}`,
		`{"jsonrpc":"2.0","id":42,"method":"resources/read","params":{"uri":"` + uri + `?offset=15000"}}`,
	})
	pages := 0
	for _, f := range got {
		id, _ := f["id"].(float64)
		if id == 40 && (f["_bytes"].(int) > budget+512 || f["error"] != nil) {
			t.Errorf("read_result answer: %d bytes, %v", f["_bytes"], f["error"])
		}
		if id == 41 || id == 42 {
			b, _ := json.Marshal(f)
			res, _ := f["result"].(map[string]any)
			contents, _ := res["contents"].([]any)
			if len(contents) != 1 || f["_bytes"].(int) > budget+512 || !strings.Contains(string(b), `"next":"sluice://results/`+handle+`?offset=`) {
				t.Errorf("resources/read %v of the stored result: %.600s", id, b)
			}
			pages++
		}
	}
	if pages != 2 {
		t.Errorf("%d resources/read answers, want 2", pages)
	}
}

// TestServeFlatRedactsPassThrough: in flat mode, resources/list and
// resources/read, prompts/get, completions and tool errors are redacted
// too; a resource whose uri carries the key is listed redacted and read
// by that uri.
func TestServeFlatRedactsPassThrough(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "leaky") + readmeFilters)
	frames := []string{
		`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`,
		// The resource is listed under its uri redacted, and read by it.
		`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"leak://secret/[REDACTED:aws-access-key-id]"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"fx__leak"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"fx__leak"},"argument":{"name":"a","value":"v"}}}`,
		tool(6, "fx__leak_error", `{}`),
		tool(7, "fx__leak_fields", `{}`),
		// A template listed redacted is expanded by the agent as listed
		// and read by the server's own uri; the span is mapped back only
		// where the template puts it, not anywhere in a uri.
		`{"jsonrpc":"2.0","id":8,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"leak://t/[REDACTED:aws-access-key-id]/42"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"leak://t/x/[REDACTED:aws-access-key-id]/42"}}`,
	}
	got := serveFrames(t, []string{"--mode", "flat"}, frames)
	seen := map[float64]bool{}
	for _, f := range got {
		id, _ := f["id"].(float64)
		seen[id] = true
		for _, s := range strs(f, nil) {
			if strings.Contains(s, mcptest.LeakKey) {
				b, _ := json.Marshal(f)
				t.Errorf("the key reached the agent in frame %.1500s", b)
				break
			}
		}
	}
	for _, id := range []float64{2, 3, 4, 5, 6, 7, 8, 9, 10} {
		if !seen[id] {
			t.Errorf("no answer to %v", id)
		}
	}
	for _, f := range got {
		id, _ := f["id"].(float64)
		all := strings.Join(strs(f, nil), " ")
		b, _ := json.Marshal(f)
		switch {
		case id == 8 && !strings.Contains(all, "leak://t/[REDACTED:aws-access-key-id]/{id}"):
			t.Errorf("the template is not listed redacted: %.1500s", b)
		case id == 9 && !strings.Contains(all, "template body 42 [REDACTED"):
			t.Errorf("a uri expanded from the redacted template was not read by the server's own: %.1500s", b)
		case id == 10 && (f["error"] == nil || strings.Contains(all, "template body")):
			t.Errorf("the redacted span was mapped back outside its place in the template: %.1500s", b)
		}
	}
	for _, f := range got {
		if id, _ := f["id"].(float64); id == 3 && !strings.Contains(strings.Join(strs(f, nil), " "), "resource body [REDACTED") {
			b, _ := json.Marshal(f)
			t.Errorf("the resource listed under its redacted uri was not read by it: %.1500s", b)
		}
	}
}

// mcpHTTP posts one JSON-RPC message to a streamable-HTTP endpoint and
// returns the response frame (JSON or the first SSE data line), keeping
// the session id.
type mcpHTTP struct {
	t       *testing.T
	url     string
	session string
}

func (c *mcpHTTP) post(body string) map[string]any {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusAccepted || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var last map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["jsonrpc"] != nil {
			last = m
		}
	}
	if last == nil {
		c.t.Fatalf("POST %s: %d %s", body, resp.StatusCode, b)
	}
	return last
}

// TestServeFilterHealthIsLive: every filter run of a running serve is
// counted in sluice_filter_outcomes_total, and 'sluice filter list' shows
// that serve's live counters (and says plainly when no serve runs).
//
// 'filter list' runs as the built binary: without a serve it compiles the
// filters itself, and compiling builtin:redact inside a race-instrumented
// test process on a loaded machine can take longer than the two minutes
// a filter load is allowed (DefaultFilterLoadTimeout), which is the
// product's bound and stays. For the same reason redact is given a
// generous per-call deadline in the configuration (timeoutMs, as an
// operator may): the default 100 ms is the product's and stays, but on a
// loaded machine a run can exceed it and fail closed, and the deadline is
// not what this test is about.
func TestServeFilterHealthIsLive(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "leaky") + readmeFilters + "    timeoutMs: 30000\n")
	r := sluiceProc(t, "", "filter", "list")
	want(t, r, exitOK, "builtin:redact")
	if !strings.Contains(r.stderr, "no sluice serve is running") {
		t.Errorf("filter list without a serve must say so; stderr: %s", r.stderr)
	}
	url, stop := startHTTPServe(t)
	defer stop()
	c := &mcpHTTP{t: t, url: url}
	c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, capability := range []string{"fx__leak_fields", "fx__echo"} {
		args := `{}`
		if capability == "fx__echo" {
			args = `{"text":"hi"}`
		}
		res := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call","arguments":{"capability":%q,"arguments":%s}}}`, 10+i, capability, args))
		if res["result"] == nil {
			t.Fatalf("call %s: %v", capability, res)
		}
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{
		`sluice_filter_outcomes_total{filter="builtin:redact",outcome="modified"} 1`,
		`sluice_filter_outcomes_total{filter="builtin:redact",outcome="pass"} 1`,
		`sluice_filter_outcomes_total{filter="builtin:shape",outcome="pass"}`,
	} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %q:\n%s", m, grepLines(string(body), "sluice_filter"))
		}
	}
	r = sluiceProc(t, "", "filter", "list")
	want(t, r, exitOK, "sluice serve (pid", "builtin:redact outcomes: pass 1, modified 1")
	if strings.Contains(r.stderr, "no sluice serve is running") {
		t.Errorf("filter list with a serve running: %s", r.stderr)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestToolsListBytes measures what tools/list costs an agent in each mode
// with 10, 100 and 600 upstream tools (the fixture's generated tools,
// about 190 bytes each, 600 from two servers; tools.allow hides the
// built-in ones): flat, gateway,
// auto, and gateway with three tools exposed. It asserts only what each
// mode promises: gateway mode's list does not grow with the upstream
// tools, nor does it with a fixed set exposed (which costs only those
// tools' definitions on top); auto mode lists what flat mode lists while
// the definitions fit its 16 KiB budget and what gateway mode lists above
// it. The table goes to BENCHMARKS.md (go test -run TestToolsListBytes -v).
func TestToolsListBytes(t *testing.T) {
	modes := []struct {
		name string
		args []string
	}{
		{"flat", []string{"--mode", "flat"}},
		{"gateway", []string{"--mode", "gateway"}},
		{"auto", []string{"--mode", "auto"}},
		{"gateway+expose 3", []string{"--mode", "gateway", "--expose", "fx__tool_000[1-3]"}},
	}
	table := []string{"| upstream tools | flat | gateway | auto | gateway + 3 exposed | gateway / flat |", "|---:|---:|---:|---:|---:|---:|"}
	var gw, gx []int
	for _, n := range []int{10, 100, 600} {
		w := newWorld(t)
		// A server lists at most 500 tools (mcp.MaxTools): 600 come from two.
		decls := fixture(t, "fx", "-tools", fmt.Sprint(n)) + "    tools: {allow: [\"tool_*\"]}\n"
		if n > 500 {
			decls = fixture(t, "fx", "-tools", fmt.Sprint(n/2)) + "    tools: {allow: [\"tool_*\"]}\n" +
				fixture(t, "fy", "-tools", fmt.Sprint(n-n/2)) + "    tools: {allow: [\"tool_*\"]}\n"
		}
		w.writeUser("servers:\n" + decls)
		sizes := map[string]int{}
		for _, mode := range modes {
			got := serveFrames(t, mode.args, []string{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`})
			for _, f := range got {
				if id, _ := f["id"].(float64); id == 2 {
					sizes[mode.name] = f["_bytes"].(int)
					if mode.name == "flat" {
						if tools := f["result"].(map[string]any)["tools"].([]any); len(tools) != n+1 { // + sluice__read_result
							t.Fatalf("flat mode listed %d tools, want %d upstream tools and sluice__read_result", len(tools), n)
						}
					}
				}
			}
		}
		flat, gateway, auto, exposed := sizes["flat"], sizes["gateway"], sizes["auto"], sizes["gateway+expose 3"]
		table = append(table, fmt.Sprintf("| %d | %d | %d | %d | %d | %.2f |", n, flat, gateway, auto, exposed, float64(gateway)/float64(flat)))
		// flat's listing is the definitions plus its envelope: the budget
		// is met or not by a margin wider than that envelope here.
		switch {
		case flat <= 16<<10 && auto != flat:
			t.Errorf("%d tools (%d bytes flat): auto listed %d bytes, want flat's", n, flat, auto)
		case flat > 20<<10 && auto != gateway:
			t.Errorf("%d tools (%d bytes flat): auto listed %d bytes, want gateway's %d", n, flat, auto, gateway)
		}
		if exposed <= gateway {
			t.Errorf("%d tools: gateway with 3 exposed tools listed %d bytes, not more than gateway's %d", n, exposed, gateway)
		}
		gw, gx = append(gw, gateway), append(gx, exposed)
	}
	t.Logf("tools/list bytes per mode:\n%s", strings.Join(table, "\n"))
	if gw[0] != gw[2] || gx[0] != gx[2] {
		t.Errorf("gateway mode's tools/list grew with the upstream tools: gateway %v, with 3 exposed %v", gw, gx)
	}
}

// TestServeFastPathsRedact: the tools/call fast paths (flat tools and
// exposed tools in gateway mode, stdio) answer every leaky tool, its
// progress and log notifications included, without the key.
func TestServeFastPathsRedact(t *testing.T) {
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "leaky") + "    expose: [\"leak_*\"]\n" + readmeFilters)
	leaky := []string{"leak_error", "leak_big_error", "leak_notify", "leak_fields", "leak_split", "leak_structured", "leak_huge_text", "leak_escaped_content"}
	for _, mode := range [][]string{{"--mode", "flat"}, {"--mode", "gateway"}, {"--mode", "auto"}} {
		t.Run(mode[1], func(t *testing.T) {
			frames := []string{`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`}
			for i, n := range leaky {
				frames = append(frames, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fx__%s","arguments":{},"_meta":{"progressToken":"p%d"}}}`, 10+i, n, i))
			}
			got := serveFrames(t, mode, frames)
			seen := map[float64]bool{}
			notes := 0
			for _, f := range got {
				if m, _ := f["method"].(string); m == "notifications/progress" || m == "notifications/message" {
					notes++
				}
				id, _ := f["id"].(float64)
				seen[id] = true
				for _, s := range strs(f, nil) {
					if strings.Contains(s, mcptest.LeakKey) {
						b, _ := json.Marshal(f)
						t.Errorf("the key reached the agent in frame %.1500s", b)
						break
					}
				}
			}
			for i := range leaky {
				if !seen[float64(10+i)] {
					t.Errorf("no answer to %s", leaky[i])
				}
			}
			if notes == 0 {
				t.Errorf("leak_notify's progress and log notifications did not reach the agent at all")
			}
		})
	}
}
