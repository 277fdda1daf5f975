package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// hangGuard bounds every wait in these tests; it is never a timing assertion.
const hangGuard = 10 * time.Second

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs Serve over in-memory pipes.
type harness struct {
	t      *testing.T
	inW    *io.PipeWriter
	inR    *io.PipeReader
	outR   *io.PipeReader
	br     *bufio.Reader
	stderr *syncBuf
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, opts *Options) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, inW: inW, inR: inR, outR: outR, br: bufio.NewReaderSize(outR, 1<<20),
		stderr: &syncBuf{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		h.done <- Serve(ctx, inR, outW, h.stderr, opts)
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		inR.Close()
		select {
		case <-h.done:
		case <-time.After(hangGuard):
			t.Errorf("Serve did not return after cleanup")
		}
	})
	return h
}

func (h *harness) send(line string) {
	h.t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := io.WriteString(h.inW, line+"\n")
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil {
			h.t.Fatalf("writing to the fixture: %v", err)
		}
	case <-time.After(hangGuard):
		h.t.Fatalf("the fixture did not read %q", line)
	}
}

// recvLine returns the next stdout line without its newline.
func (h *harness) recvLine() []byte {
	h.t.Helper()
	type res struct {
		b   []byte
		err error
	}
	c := make(chan res, 1)
	go func() {
		b, err := h.br.ReadBytes('\n')
		c <- res{b, err}
	}()
	select {
	case r := <-c:
		if r.err != nil {
			h.t.Fatalf("reading a frame: %v (partial %q)", r.err, trunc(r.b))
		}
		return bytes.TrimSuffix(r.b, []byte("\n"))
	case <-time.After(hangGuard):
		h.t.Fatalf("no frame from the fixture")
	}
	return nil
}

type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw []byte
}

func (h *harness) recv() frame {
	h.t.Helper()
	line := h.recvLine()
	var f frame
	if err := json.Unmarshal(line, &f); err != nil {
		h.t.Fatalf("frame is not JSON: %v: %q", err, trunc(line))
	}
	f.raw = line
	return f
}

func (h *harness) wait() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // keep it for cleanup
		return err
	case <-time.After(hangGuard):
		h.t.Fatalf("Serve did not return")
	}
	return nil
}

func trunc(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

func modernReq(id int, method, params string) string {
	p := "{" + modernMeta + "}"
	if params != "" {
		p = "{" + params + "," + modernMeta + "}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p)
}

func legacyReq(id int, method, params string) string {
	if params == "" {
		params = "{}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
}

func (h *harness) initLegacy(version string) frame {
	h.t.Helper()
	h.send(legacyReq(1, "initialize", `{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`))
	f := h.recv()
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return f
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decoding %s: %v", trunc(raw), err)
	}
	return v
}

type toolsPage struct {
	Tools []struct {
		Name        string          `json:"name"`
		Annotations json.RawMessage `json:"annotations"`
	} `json:"tools"`
	NextCursor *string `json:"nextCursor"`
	TTL        *int    `json:"ttlMs"`
	Scope      string  `json:"cacheScope"`
	ResultType string  `json:"resultType"`
}

type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    json.RawMessage `json:"isError"`
	ResultType string          `json:"resultType"`
}

func TestLegacyHandshake(t *testing.T) {
	tests := []struct{ asked, want string }{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2024-11-05", "2024-11-05"},
		{"2026-07-28", LatestLegacyVersion},
		{"1900-01-01", LatestLegacyVersion},
	}
	for _, tc := range tests {
		t.Run(tc.asked, func(t *testing.T) {
			h := start(t, nil)
			f := h.initLegacy(tc.asked)
			r := decode[struct {
				ProtocolVersion string          `json:"protocolVersion"`
				Capabilities    json.RawMessage `json:"capabilities"`
				ServerInfo      struct{ Name string }
				ResultType      *string `json:"resultType"`
			}](t, f.Result)
			if r.ProtocolVersion != tc.want || r.ServerInfo.Name != "mcpfixture" || r.ResultType != nil {
				t.Fatalf("initialize result = %s", f.raw)
			}
			h.send(legacyReq(2, "ping", ""))
			if f := h.recv(); string(f.Result) != "{}" || string(f.ID) != "2" {
				t.Fatalf("ping = %s", f.raw)
			}
			h.send(legacyReq(3, "tools/list", ""))
			page := decode[toolsPage](t, h.recv().Result)
			if len(page.Tools) != len(BuiltinTools) || page.NextCursor != nil || page.ResultType != "" || page.TTL != nil {
				t.Fatalf("tools/list: %d tools, cursor %v, resultType %q", len(page.Tools), page.NextCursor, page.ResultType)
			}
			for i, name := range BuiltinTools {
				if page.Tools[i].Name != name {
					t.Errorf("tool %d = %q, want %q", i, page.Tools[i].Name, name)
				}
			}
			h.send(legacyReq(4, "tools/call", `{"name":"echo","arguments":{"text":"héllo"}}`))
			cr := decode[callResult](t, h.recv().Result)
			if len(cr.Content) != 1 || cr.Content[0].Text != "héllo" || cr.ResultType != "" {
				t.Fatalf("echo = %+v", cr)
			}
			h.inW.Close()
			if err := h.wait(); err != nil {
				t.Fatalf("Serve after EOF = %v, want nil", err)
			}
		})
	}
}

func TestModernRequests(t *testing.T) {
	h := start(t, nil)
	h.send(modernReq(1, "server/discover", ""))
	f := h.recv()
	d := decode[struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		TTL               *int            `json:"ttlMs"`
		Scope             string          `json:"cacheScope"`
		ResultType        string          `json:"resultType"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}](t, f.Result)
	if len(d.SupportedVersions) == 0 || d.SupportedVersions[0] != ModernVersion || d.TTL == nil || d.Scope != "public" ||
		d.ResultType != "complete" || d.Meta[MetaServerInfo].Name != "mcpfixture" || !bytes.Contains(d.Capabilities, []byte(`"tools"`)) {
		t.Fatalf("discover = %s", f.raw)
	}

	h.send(modernReq(2, "tools/list", ""))
	page := decode[toolsPage](t, h.recv().Result)
	if page.ResultType != "complete" || page.TTL == nil || page.Scope != "public" || len(page.Tools) != len(BuiltinTools) {
		t.Fatalf("modern tools/list = %+v", page)
	}
	h.send(modernReq(3, "tools/call", `"name":"meta","arguments":{}`))
	cr := decode[callResult](t, h.recv().Result)
	m := decode[struct {
		Era, ProtocolVersion string
		Meta                 map[string]json.RawMessage
	}](t, cr.Structured)
	if cr.ResultType != "complete" || m.Era != "modern" || m.ProtocolVersion != ModernVersion || m.Meta[MetaClientInfo] == nil {
		t.Fatalf("meta tool = %+v / %+v", cr, m)
	}

	errs := []struct {
		name, line string
		code       int
	}{
		{"no meta", legacyReq(10, "tools/list", ""), CodeInvalidParams},
		{"bogus version", `{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, CodeUnsupportedProtocolVersion},
		{"no capabilities", `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, CodeInvalidParams},
		{"non-object clientInfo", `{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"x"}}}`, CodeInvalidParams},
		{"discover without meta", legacyReq(14, "server/discover", ""), CodeInvalidParams},
		{"ping removed", modernReq(15, "ping", ""), CodeMethodNotFound},
		{"unknown method", modernReq(16, "resources/list", ""), CodeMethodNotFound},
		{"unknown tool", modernReq(17, "tools/call", `"name":"nope"`), CodeInvalidParams},
		{"meta not an object", `{"jsonrpc":"2.0","id":18,"method":"tools/list","params":{"_meta":7}}`, CodeInvalidParams},
	}
	for _, tc := range errs {
		h.send(tc.line)
		f := h.recv()
		if f.Error == nil || f.Error.Code != tc.code {
			t.Errorf("%s: got %s, want error %d", tc.name, f.raw, tc.code)
			continue
		}
		if tc.code == CodeUnsupportedProtocolVersion {
			data := decode[struct {
				Supported []string
				Requested string
			}](t, f.Error.Data)
			if len(data.Supported) != 1 || data.Supported[0] != ModernVersion || data.Requested != "1999-01-01" {
				t.Errorf("-32022 data = %s", f.Error.Data)
			}
		}
	}
}

func TestEraModes(t *testing.T) {
	t.Run("modern-only rejects initialize", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeModernOnly}})
		f := h.initLegacy("2025-11-25")
		if f.Error == nil || f.Error.Code != CodeUnsupportedProtocolVersion {
			t.Fatalf("initialize = %s", f.raw)
		}
		h.send(legacyReq(2, "ping", ""))
		if f := h.recv(); f.Error == nil || f.Error.Code != CodeInvalidParams {
			t.Fatalf("legacy ping on modern-only = %s", f.raw)
		}
		h.send(modernReq(3, "server/discover", ""))
		d := decode[struct{ SupportedVersions []string }](t, h.recv().Result)
		if len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != ModernVersion {
			t.Fatalf("modern-only supportedVersions = %v", d.SupportedVersions)
		}
	})
	t.Run("legacy-only rejects discover", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeLegacyOnly}})
		h.send(modernReq(1, "server/discover", ""))
		if f := h.recv(); f.Error == nil || f.Error.Code != CodeMethodNotFound {
			t.Fatalf("discover = %s", f.raw)
		}
		// Like TS SDK v1 servers: served before initialize, _meta ignored.
		h.send(modernReq(2, "tools/list", ""))
		page := decode[toolsPage](t, h.recv().Result)
		if len(page.Tools) != len(BuiltinTools) || page.ResultType != "" {
			t.Fatalf("pre-init tools/list = %+v", page)
		}
		if f := h.initLegacy("2025-11-25"); f.Error != nil {
			t.Fatalf("initialize = %s", f.raw)
		}
	})
	t.Run("after initialize _meta is ignored", func(t *testing.T) {
		h := start(t, nil)
		h.initLegacy("2025-06-18")
		h.send(modernReq(2, "tools/call", `"name":"meta"`))
		m := decode[struct{ Era, ProtocolVersion string }](t, decode[callResult](t, h.recv().Result).Structured)
		if m.Era != "legacy" || m.ProtocolVersion != "2025-06-18" {
			t.Fatalf("meta after initialize = %+v", m)
		}
	})
	t.Run("no-init answers nothing to the handshake", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeNoInit}})
		h.send(modernReq(1, "server/discover", ""))
		h.send(legacyReq(2, "initialize", `{"protocolVersion":"2025-11-25"}`))
		h.send(legacyReq(3, "ping", ""))
		if f := h.recv(); string(f.ID) != "3" {
			t.Fatalf("first frame = %s, want the ping answer", f.raw)
		}
		if !strings.Contains(h.stderr.String(), "not answering initialize") {
			t.Fatalf("stderr = %q", h.stderr.String())
		}
	})
}

func TestPagination(t *testing.T) {
	h := start(t, &Options{Modes: []Mode{ModePaginated}, Tools: 5, PageSize: 4})
	h.initLegacy("2025-11-25")
	var names []string
	var cursor *string
	pages := 0
	for id := 2; ; id++ {
		params := ""
		if cursor != nil {
			params = `{"cursor":` + string(must(json.Marshal(*cursor))) + `}`
		}
		h.send(legacyReq(id, "tools/list", params))
		page := decode[toolsPage](t, h.recv().Result)
		pages++
		if len(page.Tools) > 4 {
			t.Fatalf("page of %d tools, page size 4", len(page.Tools))
		}
		for _, tl := range page.Tools {
			names = append(names, tl.Name)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = page.NextCursor
		if pages > 20 {
			t.Fatal("pagination does not end")
		}
	}
	want := len(BuiltinTools) + 5
	if len(names) != want || pages != (want+3)/4 || names[len(names)-1] != "tool_0005" {
		t.Fatalf("%d pages, %d tools (%v)", pages, len(names), names)
	}
	for _, bad := range []string{`""`, `"AAA"`, `"` + encodeCursor(999) + `"`, `7`} {
		h.send(legacyReq(100, "tools/list", `{"cursor":`+bad+`}`))
		if f := h.recv(); f.Error == nil || f.Error.Code != CodeInvalidParams {
			t.Errorf("cursor %s: %s", bad, f.raw)
		}
	}

	t.Run("cursor-loop", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeCursorLoop}})
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/list", ""))
		p1 := decode[toolsPage](t, h.recv().Result)
		h.send(legacyReq(3, "tools/list", `{"cursor":"`+*p1.NextCursor+`"}`))
		p2 := decode[toolsPage](t, h.recv().Result)
		if p1.NextCursor == nil || p2.NextCursor == nil || *p1.NextCursor != *p2.NextCursor {
			t.Fatalf("cursors %v %v, want the same one twice", p1.NextCursor, p2.NextCursor)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestTools(t *testing.T) {
	h := start(t, &Options{HugeBytes: 100000, Tools: 2})
	h.initLegacy("2025-11-25")
	id := 10
	call := func(name, args string) frame {
		t.Helper()
		id++
		if args == "" {
			args = "{}"
		}
		h.send(legacyReq(id, "tools/call", `{"name":"`+name+`","arguments":`+args+`}`))
		return h.recv()
	}

	f := call("add", `{"a":12345678901234567890,"b":0.5}`)
	if !bytes.Contains(f.raw, []byte(`"structuredContent":{"sum":12345678901234567890.5}`)) ||
		!bytes.Contains(f.raw, []byte(`"text":"12345678901234567890.5"`)) {
		t.Fatalf("add = %s", f.raw)
	}
	if cr := decode[callResult](t, call("add", `{"a":"x","b":1}`).Result); string(cr.IsError) != "true" {
		t.Fatalf("add with a string: %+v", cr)
	}
	if cr := decode[callResult](t, call("echo", `{}`).Result); string(cr.IsError) != "true" {
		t.Fatalf("echo without text: %+v", cr)
	}
	if cr := decode[callResult](t, call("huge", "").Result); len(cr.Content) != 1 || len(cr.Content[0].Text) != 100000 {
		t.Fatalf("huge: %d blocks", len(cr.Content))
	}
	if cr := decode[callResult](t, call("huge", `{"bytes":5}`).Result); cr.Content[0].Text != "aaaaa" {
		t.Fatalf("huge 5 = %+v", cr)
	}
	cr := decode[callResult](t, call("structured", "").Result)
	if cr.Content == nil || len(cr.Content) != 0 || !bytes.Contains(cr.Structured, []byte(`"temperature":-3.5`)) {
		t.Fatalf("structured = %+v %s", cr, cr.Structured)
	}
	if cr := decode[callResult](t, call("bad_iserror", "").Result); string(cr.IsError) != `"true"` {
		t.Fatalf("bad_iserror isError = %s", cr.IsError)
	}
	if cr := decode[callResult](t, call("fail", "").Result); string(cr.IsError) != "true" {
		t.Fatalf("fail isError = %s", cr.IsError)
	}
	if cr := decode[callResult](t, call("stderr", `{"text":"to stderr"}`).Result); cr.IsError != nil || !strings.Contains(h.stderr.String(), "to stderr\n") {
		t.Fatalf("stderr tool: %+v, stderr %q", cr, h.stderr.String())
	}
	if cr := decode[callResult](t, call("grandchild", "").Result); string(cr.IsError) != "true" {
		t.Fatalf("grandchild without Spawn hook: %+v", cr)
	}
	if cr := decode[callResult](t, call("tool_0002", `{"x":"y"}`).Result); cr.Content[0].Text != `tool_0002 called with x="y"` {
		t.Fatalf("tool_0002 = %+v", cr)
	}
	if f := call("late_tool", ""); f.Error == nil || f.Error.Code != CodeInvalidParams {
		t.Fatalf("late_tool before list_changed = %s", f.raw)
	}
	if f := call("echo", `[1]`); f.Error == nil || f.Error.Code != CodeInvalidParams {
		t.Fatalf("array arguments = %s", f.raw)
	}

	// list_changed: the notification comes before the result; then the
	// list has late_tool.
	id++
	h.send(legacyReq(id, "tools/call", `{"name":"list_changed"}`))
	if n := h.recv(); n.Method != "notifications/tools/list_changed" || n.ID != nil {
		t.Fatalf("expected the list_changed notification, got %s", n.raw)
	}
	if r := h.recv(); string(r.ID) != fmt.Sprint(id) || r.Error != nil {
		t.Fatalf("list_changed result = %s", r.raw)
	}
	h.send(legacyReq(99, "tools/list", ""))
	page := decode[toolsPage](t, h.recv().Result)
	found := false
	for _, tl := range page.Tools {
		found = found || tl.Name == "late_tool"
		if tl.Name == "echo" && !bytes.Contains(tl.Annotations, []byte(`"readOnlyHint":true`)) {
			t.Errorf("echo annotations = %s", tl.Annotations)
		}
	}
	if !found {
		t.Fatal("late_tool missing after list_changed")
	}
	if cr := decode[callResult](t, call("late_tool", "").Result); cr.Content[0].Text != "late_tool called" {
		t.Fatalf("late_tool = %+v", cr)
	}
}

func TestExactSum(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"1", "2", "3"},
		{"12345678901234567890", "0.5", "12345678901234567890.5"},
		{"0.1", "0.2", "0.3"},
		{"-1.25", "1.25", "0"},
		{"1e3", "1.5e-2", "1000.015"},
		{"99999999999999999999999", "1", "100000000000000000000000"},
		{"-0.5", "0.25", "-0.25"},
	}
	for _, tc := range tests {
		got, err := exactSum(json.Number(tc.a), json.Number(tc.b))
		if err != nil || got != tc.want {
			t.Errorf("%s + %s = %q, %v; want %s", tc.a, tc.b, got, err, tc.want)
		}
	}
	if _, err := exactSum("x", "1"); err == nil {
		t.Error("exactSum accepted a non-number")
	}
}

func TestProgressAndCancel(t *testing.T) {
	t.Run("progress", func(t *testing.T) {
		h := start(t, nil)
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/call", `{"name":"slow","arguments":{"ms":30,"steps":3},"_meta":{"progressToken":"tok"}}`))
		for i := 1; i <= 3; i++ {
			n := h.recv()
			p := decode[struct {
				ProgressToken string
				Progress      int
				Total         int
			}](t, n.Params)
			if n.Method != "notifications/progress" || p.ProgressToken != "tok" || p.Progress != i || p.Total != 3 {
				t.Fatalf("progress %d = %s", i, n.raw)
			}
		}
		if r := h.recv(); string(r.ID) != "2" || r.Error != nil {
			t.Fatalf("slow result = %s", r.raw)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		h := start(t, nil)
		h.initLegacy("2025-11-25")
		h.send(legacyReq(5, "tools/call", `{"name":"slow","arguments":{"ms":600000,"steps":1}}`))
		h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}}`)
		h.send(legacyReq(6, "ping", ""))
		// The cancelled call is never answered: the next frame is the ping.
		if f := h.recv(); string(f.ID) != "6" {
			t.Fatalf("frame after cancel = %s", f.raw)
		}
		h.inW.Close()
		if err := h.wait(); err != nil {
			t.Fatalf("Serve = %v", err)
		}
		if !strings.Contains(h.stderr.String(), cancelledLog+"5") {
			t.Fatalf("stderr = %q", h.stderr.String())
		}
	})
}

func TestModernProgress(t *testing.T) {
	h := start(t, nil)
	meta := `"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":20,"steps":2},` + meta + `}}`)
	for i := 1; i <= 2; i++ {
		if n := h.recv(); n.Method != "notifications/progress" || !bytes.Contains(n.Params, []byte(`"progressToken":7`)) {
			t.Fatalf("progress = %s", n.raw)
		}
	}
	if r := decode[callResult](t, h.recv().Result); r.ResultType != "complete" {
		t.Fatalf("result = %+v", r)
	}
}

func TestAskRoots(t *testing.T) {
	h := start(t, nil)
	h.initLegacy("2025-11-25")
	h.send(legacyReq(2, "tools/call", `{"name":"ask_roots"}`))
	req := h.recv()
	if req.Method != "roots/list" || req.ID == nil {
		t.Fatalf("expected roots/list, got %s", req.raw)
	}
	h.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"roots":[{"uri":"file:///x"}]}}`)
	cr := decode[callResult](t, h.recv().Result)
	if !bytes.Contains(cr.Structured, []byte("file:///x")) {
		t.Fatalf("ask_roots = %+v", cr)
	}

	h.send(legacyReq(3, "tools/call", `{"name":"ask_roots"}`))
	req = h.recv()
	h.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"nope"}}`)
	if cr := decode[callResult](t, h.recv().Result); string(cr.IsError) != "true" {
		t.Fatalf("ask_roots refused = %+v", cr)
	}

	m := start(t, nil)
	m.send(modernReq(1, "tools/call", `"name":"ask_roots"`))
	if cr := decode[callResult](t, m.recv().Result); string(cr.IsError) != "true" {
		t.Fatalf("modern ask_roots = %+v", cr)
	}
}

func TestMalformedInput(t *testing.T) {
	h := start(t, nil)
	tests := []struct {
		line string
		code int
	}{
		{`not json at all`, CodeParseError},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, CodeInvalidParams},
	}
	for _, tc := range tests {
		h.send(tc.line)
		f := h.recv()
		if f.Error == nil || f.Error.Code != tc.code {
			t.Errorf("%q -> %s, want %d", tc.line, f.raw, tc.code)
		}
		if tc.code != CodeInvalidParams && string(f.ID) != "null" {
			t.Errorf("%q -> id %s, want null", tc.line, f.ID)
		}
	}
	// Stray responses and notifications are ignored; the server still works.
	h.send(`{"jsonrpc":"2.0","id":"nobody","result":{}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/whatever"}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}`)
	h.send(`{"jsonrpc":"2.0"}`)
	h.send(modernReq(3, "tools/call", `"arguments":{}`))
	if f := h.recv(); f.Error == nil || f.Error.Code != CodeInvalidParams || string(f.ID) != "3" {
		t.Fatalf("tools/call without a name = %s", f.raw)
	}
}

func TestMisbehaviourModes(t *testing.T) {
	t.Run("banner", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeBanner}})
		if l := h.recvLine(); string(l) != BannerLine {
			t.Fatalf("first line = %q", l)
		}
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
		if l := h.recvLine(); string(l) != NoiseLine {
			t.Fatalf("line before the result = %q", l)
		}
		if f := h.recv(); string(f.ID) != "2" {
			t.Fatalf("result = %s", f.raw)
		}
	})
	t.Run("invalid-utf8", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeInvalidUTF8}})
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
		l := h.recvLine()
		if utf8.Valid(l) || !bytes.Contains(l, []byte(InvalidUTF8)) || !bytes.HasPrefix(l, []byte(`{`)) {
			t.Fatalf("frame = %q", trunc(l))
		}
	})
	t.Run("huge", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeHuge}, HugeBytes: 300000})
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
		if l := h.recvLine(); len(l) <= 300000 {
			t.Fatalf("line of %d bytes, want > 300000", len(l))
		}
	})
	t.Run("slow", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeSlow}, Delay: time.Millisecond})
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
		if f := h.recv(); string(f.ID) != "2" {
			t.Fatalf("result = %s", f.raw)
		}
	})
	t.Run("flood", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeFlood}})
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/list", ""))
		buf := make([]byte, 1<<20)
		if _, err := io.ReadFull(h.br, buf); err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(buf, '\n') >= 0 {
			t.Fatal("flood wrote a newline")
		}
		h.outR.Close()
		if err := h.wait(); err == nil {
			t.Fatal("Serve returned nil after its stdout closed mid-flood")
		}
	})
	t.Run("flood instead of the handshake", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeFlood, ModeNoInit}})
		h.send(modernReq(1, "server/discover", ""))
		buf := make([]byte, 256<<10)
		if _, err := io.ReadFull(h.br, buf); err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(buf, '\n') >= 0 {
			t.Fatal("flood wrote a newline")
		}
	})
	t.Run("crash", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeCrash}})
		h.initLegacy("2025-11-25")
		h.send(legacyReq(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
		partial := make(chan []byte, 1)
		go func() {
			b, _ := h.br.ReadBytes('\n')
			partial <- b
		}()
		if err := h.wait(); !errors.Is(err, ErrCrashed) {
			t.Fatalf("Serve = %v, want ErrCrashed", err)
		}
		h.outR.Close()
		if b := <-partial; !bytes.HasPrefix(b, []byte(`{"jsonrpc":"2.0","id":2,`)) || bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("torn frame = %q", b)
		}
	})
	t.Run("crash tool", func(t *testing.T) {
		h := start(t, nil)
		h.send(modernReq(2, "tools/call", `"name":"crash"`))
		go io.Copy(io.Discard, h.br)
		if err := h.wait(); !errors.Is(err, ErrCrashed) {
			t.Fatalf("Serve = %v, want ErrCrashed", err)
		}
	})
	t.Run("exit-at-start", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeExitAtStart}})
		if err := h.wait(); err == nil || !strings.Contains(h.stderr.String(), "fatal") {
			t.Fatalf("Serve = %v, stderr %q", err, h.stderr.String())
		}
	})
	t.Run("stderr-flood", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeStderrFlood}})
		h.initLegacy("2025-11-25")
		deadline := time.Now().Add(hangGuard)
		for strings.Count(h.stderr.String(), "stderr flood") < 100 {
			if time.Now().After(deadline) {
				t.Fatal("no stderr flood")
			}
			time.Sleep(time.Millisecond)
		}
		h.send(legacyReq(2, "ping", ""))
		if f := h.recv(); string(f.ID) != "2" {
			t.Fatalf("ping during the flood = %s", f.raw)
		}
	})
	t.Run("ignore-eof", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeIgnoreEOF}})
		h.initLegacy("2025-11-25")
		h.inW.Close()
		deadline := time.Now().Add(hangGuard)
		for !strings.Contains(h.stderr.String(), "staying up") {
			if time.Now().After(deadline) {
				t.Fatalf("stderr = %q", h.stderr.String())
			}
			time.Sleep(time.Millisecond)
		}
		select {
		case err := <-h.done:
			t.Fatalf("Serve returned %v after EOF in ignore-eof mode", err)
		default:
		}
		h.cancel()
		if err := h.wait(); !errors.Is(err, ErrStopped) {
			t.Fatalf("Serve = %v, want ErrStopped", err)
		}
	})
	t.Run("stop-reading", func(t *testing.T) {
		h := start(t, &Options{Modes: []Mode{ModeStopReading}})
		h.send(modernReq(1, "server/discover", ""))
		h.recv()
		wrote := make(chan int, 1)
		go func() {
			n, _ := io.WriteString(h.inW, legacyReq(2, "ping", "")+"\n")
			wrote <- n
		}()
		h.cancel()
		if err := h.wait(); !errors.Is(err, ErrStopped) {
			t.Fatalf("Serve = %v", err)
		}
		// Serve is gone without having read a byte after the handshake;
		// closing the reading end unblocks the writer with 0 bytes written.
		h.inR.Close()
		select {
		case n := <-wrote:
			if n != 0 {
				t.Fatalf("the fixture read %d bytes after the handshake", n)
			}
		case <-time.After(hangGuard):
			t.Fatal("writer still blocked")
		}
	})
}

func TestParseModes(t *testing.T) {
	m, err := ParseModes(" paginated, banner ,,")
	if err != nil || len(m) != 2 || m[0] != ModePaginated || m[1] != ModeBanner {
		t.Fatalf("ParseModes = %v, %v", m, err)
	}
	if m, err := ParseModes(""); err != nil || len(m) != 1 || m[0] != ModeEcho {
		t.Fatalf("ParseModes(\"\") = %v, %v", m, err)
	}
	var me *ModeError
	if _, err := ParseModes("echo,bogus"); !errors.As(err, &me) || me.Name != "bogus" || !strings.Contains(err.Error(), "stop-reading") {
		t.Fatalf("ParseModes(bogus) = %v", err)
	}
	if len(Modes()) != len(allModes) {
		t.Fatal("Modes() is incomplete")
	}
}

func FuzzServeLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"b2Zmc2V0OjI"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1e400,"b":-0}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{"ms":1,"steps":5},"_meta":{"progressToken":{}}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}`,
		modernReq(5, "tools/call", `"name":"echo","arguments":{"text":"\u0000"}`),
		`[]`, `{`, `null`, `"x"`, `{"id":null,"method":"ping"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.Contains(line, "crash") || strings.Contains(line, "ask_roots") ||
			strings.Contains(line, "slow") || strings.Contains(line, "huge") {
			return
		}
		in := strings.NewReader(legacyReq(1, "initialize", `{"protocolVersion":"2025-11-25"}`) + "\n" +
			strings.ReplaceAll(line, "\n", " ") + "\n")
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		var out bytes.Buffer
		if err := Serve(ctx, in, &out, io.Discard, nil); err != nil {
			t.Fatalf("Serve = %v", err)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if !json.Valid(l) {
				t.Fatalf("invalid frame %q", trunc(l))
			}
		}
	})
}
