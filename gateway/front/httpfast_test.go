//go:build unix

package front

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// httpAgent drives the HTTP front with raw requests, as an agent would.
type httpAgent struct {
	t       *testing.T
	url     string
	sid     string
	version string
	rid     int
}

// answer is one HTTP answer reduced to what both paths must agree on.
type answer struct {
	status int
	head   string   // Content-Type, Cache-Control
	events []string // SSE data lines or the JSON body, canonical
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s\n    %s", a.status, a.head, strings.Join(a.events, "\n    "))
}

// post sends body with the usual headers, then applies edit, and reads
// the whole answer.
func (a *httpAgent) post(body string, edit func(h http.Header)) answer {
	a.t.Helper()
	req, err := http.NewRequest("POST", a.url+MCPPath, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	a.rid++
	req.Header.Set(RequestIDHeader, fmt.Sprintf("req-%d", a.rid))
	if a.sid != "" {
		req.Header.Set("Mcp-Session-Id", a.sid)
	}
	if a.version != "" {
		req.Header.Set("Mcp-Protocol-Version", a.version)
	}
	if edit != nil {
		edit(req.Header)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	out := answer{status: resp.StatusCode, head: resp.Header.Get("Content-Type") + " | " + resp.Header.Get("Cache-Control")}
	if got := resp.Header.Get(RequestIDHeader); got != fmt.Sprintf("req-%d", a.rid) {
		a.t.Errorf("X-Request-ID answered %q, sent req-%d", got, a.rid)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && a.sid == "" {
		a.sid = sid
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out.events = append(out.events, canonical(a.t, d))
			} else if l := sc.Text(); l != "" && l != "event: message" {
				out.events = append(out.events, "line: "+l)
			}
		}
		return out
	}
	s := strings.TrimSpace(string(raw))
	if json.Valid([]byte(s)) && s != "" {
		s = canonical(a.t, s)
	}
	out.events = []string{s}
	return out
}

// sameAnswer compares two answers: everything but the order of the
// notifications before the response.
func sameAnswer(x, y answer) bool {
	if x.status != y.status || x.head != y.head || len(x.events) != len(y.events) {
		return false
	}
	if len(x.events) == 0 {
		return true
	}
	a, b := append([]string(nil), x.events...), append([]string(nil), y.events...)
	last := len(a) - 1
	if a[last] != b[last] {
		return false
	}
	sort.Strings(a[:last])
	sort.Strings(b[:last])
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// httpExchange runs one scripted conversation over HTTP and returns every
// answer.
func httpExchange(t *testing.T, opts Options, modern bool) []answer {
	opts.Logger = quietLogger()
	_, srv := newHTTP(t, fastBackend(), &opts)
	a := &httpAgent{t: t, url: srv.URL}
	var out []answer
	meta := func(extra string) string {
		if modern {
			return modernMeta(extra)
		}
		if extra == "" {
			return `"_meta":{}`
		}
		return `"_meta":{` + strings.TrimPrefix(extra, ",") + `}`
	}
	if modern {
		a.version = modernVersion
	} else {
		if got := a.post(legacyInit, nil); got.status != 200 || a.sid == "" {
			t.Fatalf("initialize: %v (session %q)", got, a.sid)
		}
		a.version = "2025-11-25"
		out = append(out, a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil))
		out = append(out, a.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, nil))
	}
	id := 10
	call := func(params string, edit func(http.Header)) {
		id++
		var name struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal([]byte(params), &name)
		out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params), func(h http.Header) {
			if modern {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", name.Name)
			}
			if edit != nil {
				edit(h)
			}
		}))
	}
	for _, n := range []string{"echo", "structured", "nocontent", "iserror", "toolerr", "fail", "panic", "protoerr", "upstreammeta", "image", "odd", "extra", "emptytext", "blockmeta", "annotated", "single", "unknown", "notext"} {
		call(`{"name":"up__`+n+`","arguments":{"x":1},`+meta("")+`}`, nil)
	}
	call(`{"name":"up__echo",`+meta("")+`}`, nil)
	call(`{"name":"up__echo","arguments":null,`+meta("")+`}`, nil)
	call(`{"name":"up__progress","arguments":{},`+meta(`,"progressToken":"tok-1"`)+`}`, nil)
	call(`{"name":"up__progress","arguments":{},`+meta(`,"progressToken":7`)+`}`, nil)
	call(`{"name":"up__nosuch","arguments":{},`+meta("")+`}`, nil)
	call(`{"name":"nosuch","arguments":{},`+meta("")+`}`, nil)
	call(`{"name":"up__echo","arguments":{"x":2},"task":{"ttl":1},`+meta("")+`}`, nil)
	call(`{"name":"","arguments":{}}`, nil)
	call(`{"name":"up__echo","arguments":"not an object"}`, nil)
	call(`[1,2]`, nil)
	// What the SDK's handler checks before a call runs.
	echo := `{"name":"up__echo","arguments":{"y":1},` + meta("") + `}`
	call(echo, func(h http.Header) { h.Set("Content-Type", "text/plain") })
	call(echo, func(h http.Header) { h.Set("Content-Type", "application/json; charset=utf-8") })
	call(echo, func(h http.Header) { h.Set("Accept", "application/json") })
	call(echo, func(h http.Header) { h.Set("Accept", "*/*") })
	call(echo, func(h http.Header) { h.Set("Last-Event-ID", "x_1") })
	call(echo, func(h http.Header) { h.Set("Mcp-Protocol-Version", "1999-01-01") })
	call(echo, func(h http.Header) { h.Set("Mcp-Protocol-Version", "2025-06-18") })
	call(echo, func(h http.Header) { h.Del("Mcp-Protocol-Version") })
	call(echo, func(h http.Header) { h.Set("Mcp-Name", "up__other") })
	call(echo, func(h http.Header) { h.Del("Mcp-Method") })
	call(echo, func(h http.Header) { h.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") })
	id++
	out = append(out, a.post(fmt.Sprintf(`[{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}]`, id, echo), nil))
	id++
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,"extra":1}`, id, echo), nil))
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"str-%d","method":"tools/call","params":%s}`, id, echo), nil))
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d.5,"method":"tools/call","params":%s}`, id, echo), nil))
	out = append(out, a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call"}`, id+1), nil))
	if !modern {
		a.sid = "no-such-session"
		call(echo, nil)
	}
	return out
}

// TestHTTPFastPathAnswersAsTheSDK runs one conversation through the HTTP
// front with the tools/call fast path and once without it, in both eras,
// and requires the same answers (status, content type, events; the order
// of notifications aside): results, tool errors, hidden failures, panics,
// protocol errors, stripped upstream fields, progress and log
// notifications, unknown tools, and requests the SDK's handler refuses.
func TestHTTPFastPathAnswersAsTheSDK(t *testing.T) {
	for _, era := range []struct {
		name   string
		modern bool
	}{{"legacy", false}, {"modern", true}} {
		t.Run(era.name, func(t *testing.T) {
			var viaSDK, viaFast atomic.Int64
			sdk := httpExchange(t, Options{Mode: ModeFlat, noFastPath: true, fastTaken: &viaSDK}, era.modern)
			fast := httpExchange(t, Options{Mode: ModeFlat, fastTaken: &viaFast}, era.modern)
			if viaSDK.Load() != 0 {
				t.Fatalf("the fast path took %d calls while switched off", viaSDK.Load())
			}
			if n := viaFast.Load(); n < 22 {
				t.Fatalf("the fast path took only %d calls", n)
			}
			if len(sdk) != len(fast) {
				t.Fatalf("%d answers through the SDK, %d on the fast path", len(sdk), len(fast))
			}
			for i := range sdk {
				if !sameAnswer(sdk[i], fast[i]) {
					t.Errorf("request %d:\n sdk:  %v\n fast: %v", i, sdk[i], fast[i])
				}
			}
		})
	}
}
