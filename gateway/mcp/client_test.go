package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func echoTools(f *fake, m Message) {
	switch m.Method {
	case "tools/call":
		f.reply(m, `{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":12345678901234567890},"isError":false}`)
	case "tools/list":
		f.reply(m, `{"tools":[{"name":"echo","title":"Echo","description":"d","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}},"annotations":{"readOnlyHint":true}}]}`)
	}
}

func TestLegacyHandshake(t *testing.T) {
	for _, v := range LegacyVersions {
		t.Run(v, func(t *testing.T) {
			c, f := newFake(t, nil, legacyServer(v, echoTools))
			if c.State() != Idle {
				t.Fatalf("state %v", c.State())
			}
			handshake(t, c)
			if c.State() != Ready || c.Era() != EraLegacy || c.ProtocolVersion() != v {
				t.Fatalf("state %v era %q version %q", c.State(), c.Era(), c.ProtocolVersion())
			}
			info := c.ServerInfo()
			if info.Name != "fake" || info.Version != "1.2.3" || info.Title != "Fake" || info.Instructions != "be nice" ||
				string(info.Capabilities) != `{"tools":{"listChanged":true}}` {
				t.Errorf("info %+v", info)
			}
			init := f.await("initialize")
			if got := string(member(init.Params, "protocolVersion")); got != `"2025-11-25"` {
				t.Errorf("asked for %s", got)
			}
			if got := string(member(init.Params, "capabilities")); got != `{}` {
				t.Errorf("advertised %s, want {}", got)
			}
			if got := string(member(member(init.Params, "clientInfo"), "name")); got != `"sluice"` {
				t.Errorf("clientInfo name %s", got)
			}
			f.await("notifications/initialized")
			disc := f.messages("server/discover")
			if len(disc) != 1 {
				t.Fatalf("discover probes: %d", len(disc))
			}
			meta := member(disc[0].Params, "_meta")
			for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo} {
				if member(meta, k) == nil {
					t.Errorf("discover _meta lacks %s: %s", k, meta)
				}
			}
			res, err := c.CallTool(ctx10(t), "echo", json.RawMessage(`{"n": 1.0e5}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res), "12345678901234567890") {
				t.Errorf("result lost number text: %s", res)
			}
			call := f.await("tools/call")
			if member(call.Params, "_meta") != nil {
				t.Errorf("legacy call carries _meta: %s", call.Params)
			}
			if got := string(member(call.Params, "arguments")); got != `{"n": 1.0e5}` {
				t.Errorf("arguments changed: %s", got)
			}
		})
	}
}

func TestLegacyEraForcedSkipsDiscover(t *testing.T) {
	c, f := newFake(t, &Options{Era: EraLegacy}, legacyServer("2025-06-18", nil))
	handshake(t, c)
	if len(f.messages("server/discover")) != 0 {
		t.Error("legacy era probed discover")
	}
}

func TestUnknownLegacyVersionFails(t *testing.T) {
	c, f := newFake(t, nil, legacyServer("1999-01-01", nil))
	err := c.Handshake(ctx10(t))
	mustCode(t, err, CodeProtocol)
	if !strings.Contains(err.Error(), "1999-01-01") || c.State() != Failed || c.Err() == nil {
		t.Errorf("err %v state %v", err, c.State())
	}
	if len(f.messages("notifications/initialized")) != 0 {
		t.Error("sent initialized after refusing the version")
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
}

// A legacy server that ignores server/discover and answers it late, after
// initialize: the fallback must happen and the late answer be dropped.
func TestDiscoverTimeoutLateAnswerDropped(t *testing.T) {
	var discover Message
	var mu sync.Mutex
	handler := func(f *fake, m Message) {
		switch m.Method {
		case "server/discover":
			mu.Lock()
			discover = m
			mu.Unlock()
		case "initialize":
			mu.Lock()
			d := discover
			mu.Unlock()
			// The late answer to the probe, in a shape that would mean
			// "modern" had it come in time.
			f.reply(d, `{"supportedVersions":["2026-07-28"],"capabilities":{}}`)
			f.reply(m, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"slow"}}`)
		default:
			echoTools(f, m)
		}
	}
	c, _ := newFake(t, &Options{DiscoverTimeout: 30 * time.Millisecond}, handler)
	handshake(t, c)
	if c.Era() != EraLegacy {
		t.Fatalf("era %q", c.Era())
	}
	if _, err := c.CallTool(ctx10(t), "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverErrorsMeanLegacy(t *testing.T) {
	for _, code := range []int{-32601, -32600, -32602, -32000, -32603, 1, -32022 /* without data.supported */} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			c, _ := newFake(t, nil, func(f *fake, m Message) {
				if m.Method == "server/discover" {
					f.errorReply(m, code, "nope")
					return
				}
				legacyServer("2025-11-25", nil)(f, m)
			})
			handshake(t, c)
			if c.Era() != EraLegacy {
				t.Errorf("era %q", c.Era())
			}
		})
	}
}

// A legacy server that cannot parse the probe's id answers with a null id:
// that settles the probe at once (no waiting for the discover budget).
func TestDiscoverNullIDError(t *testing.T) {
	c, f := newFake(t, &Options{DiscoverTimeout: time.Hour}, func(f *fake, m Message) {
		if m.Method == "server/discover" {
			f.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`)
			return
		}
		legacyServer("2025-11-25", nil)(f, m)
	})
	handshake(t, c)
	if c.Era() != EraLegacy {
		t.Fatalf("era %q", c.Era())
	}
	// Later null-id errors are not attributed to anyone.
	f.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	if _, err := c.Request(ctx10(t), "ping", nil, nil); CodeOf(err) != CodeServer {
		t.Fatalf("ping: %v", err)
	}
	if c.State() != Ready {
		t.Errorf("state %v", c.State())
	}
}

func TestModernHandshake(t *testing.T) {
	c, f := newFake(t, nil, modernServer(func(f *fake, m Message) {
		switch m.Method {
		case "tools/list":
			f.reply(m, `{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"resultType":"complete","ttlMs":0,"cacheScope":"public"}`)
		case "tools/call":
			switch string(member(m.Params, "name")) {
			case `"missing"`:
				f.reply(m, `{"content":[]}`)
			case `"weird"`:
				f.reply(m, `{"content":[],"resultType":"maybe"}`)
			case `"input"`:
				f.reply(m, `{"resultType":"input_required","inputRequests":{}}`)
			}
		}
	}))
	handshake(t, c)
	if c.Era() != EraModern || c.ProtocolVersion() != "2026-07-28" {
		t.Fatalf("era %q version %q", c.Era(), c.ProtocolVersion())
	}
	if i := c.ServerInfo(); i.Name != "modern-fake" || i.Version != "9" || i.Instructions != "modern" || string(i.Capabilities) != `{"tools":{}}` {
		t.Errorf("info %+v", i)
	}
	if len(f.messages("initialize")) != 0 {
		t.Error("modern server got initialize")
	}
	tl, err := c.ListTools(ctx10(t))
	if err != nil || len(tl.Tools) != 1 {
		t.Fatalf("%v %+v", err, tl)
	}
	list := f.await("tools/list")
	meta := member(list.Params, "_meta")
	if string(member(meta, metaProtocolVersion)) != `"2026-07-28"` || string(member(meta, metaClientCapabilities)) != `{}` ||
		string(member(member(meta, metaClientInfo), "name")) != `"sluice"` {
		t.Errorf("tools/list _meta: %s", meta)
	}
	if _, err := c.CallTool(ctx10(t), "missing", nil, nil); err != nil {
		t.Errorf("missing resultType: %v", err)
	}
	_, err = c.CallTool(ctx10(t), "weird", nil, nil)
	mustCode(t, err, CodeProtocol)
	_, err = c.CallTool(ctx10(t), "input", nil, nil)
	mustCode(t, err, CodeProtocol)
	if c.State() != Ready {
		t.Errorf("a bad result made the client %v", c.State())
	}
	// Caller meta and the modern fields merge.
	if _, err := c.CallTool(ctx10(t), "missing", json.RawMessage(`{}`), &CallOptions{Meta: json.RawMessage(`{"traceparent":"00-x","io.modelcontextprotocol/protocolVersion":"bogus"}`)}); err != nil {
		t.Fatal(err)
	}
	calls := f.messages("tools/call")
	meta = member(calls[len(calls)-1].Params, "_meta")
	if string(member(meta, "traceparent")) != `"00-x"` || string(member(meta, metaProtocolVersion)) != `"2026-07-28"` {
		t.Errorf("merged meta %s", meta)
	}
}

func TestModernUnsupportedVersion(t *testing.T) {
	tests := []struct {
		name      string
		supported string
		wantEra   string
		wantCode  Code
	}{
		{"no common version", `["2099-01-01"]`, "", CodeProtocol},
		{"only legacy offered", `["2025-11-25"]`, EraLegacy, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newFake(t, nil, func(f *fake, m Message) {
				if m.Method == "server/discover" {
					f.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32022,"message":"unsupported","data":{"supported":` + tt.supported + `,"requested":"2026-07-28"}}}`)
					return
				}
				legacyServer("2025-11-25", nil)(f, m)
			})
			err := c.Handshake(ctx10(t))
			if tt.wantCode != "" {
				mustCode(t, err, tt.wantCode)
				if len(f.messages("initialize")) != 0 {
					t.Error("fell back to initialize after a modern error")
				}
				var e *Error
				if !errors.As(err, &e) || e.RPC == nil || e.RPC.Code != -32022 {
					t.Errorf("RPC error not kept: %#v", err)
				}
				return
			}
			if err != nil || c.Era() != tt.wantEra {
				t.Fatalf("err %v era %q", err, c.Era())
			}
		})
	}
}

// -32022 naming another modern version we speak: retry discover with it,
// never fall back to initialize.
func TestModernVersionRetry(t *testing.T) {
	saved := ModernVersions
	ModernVersions = []string{"2099-01-01", "2026-07-28"}
	defer func() { ModernVersions = saved }()
	c, f := newFake(t, nil, func(f *fake, m Message) {
		if m.Method == "server/discover" {
			v := member(member(m.Params, "_meta"), metaProtocolVersion)
			if string(v) != `"2026-07-28"` {
				f.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":` + string(v) + `}}}`)
				return
			}
		}
		modernServer(nil)(f, m)
	})
	handshake(t, c)
	if c.Era() != EraModern || c.ProtocolVersion() != "2026-07-28" {
		t.Fatalf("era %q version %q", c.Era(), c.ProtocolVersion())
	}
	if n := len(f.messages("server/discover")); n != 2 {
		t.Errorf("%d discover probes, want 2", n)
	}
	if len(f.messages("initialize")) != 0 {
		t.Error("fell back to initialize")
	}
}

func TestModernEraForcedRejectsLegacy(t *testing.T) {
	c, _ := newFake(t, &Options{Era: EraModern}, legacyServer("2025-11-25", nil))
	mustCode(t, c.Handshake(ctx10(t)), CodeProtocol)
}

func TestInitializeTimeout(t *testing.T) {
	c, f := newFake(t, &Options{InitializeTimeout: 100 * time.Millisecond, DiscoverTimeout: 20 * time.Millisecond}, nil)
	err := c.Handshake(ctx10(t))
	mustCode(t, err, CodeTimeout)
	if c.State() != Failed {
		t.Errorf("state %v", c.State())
	}
	if len(f.messages("notifications/cancelled")) != 0 {
		t.Error("cancelled initialize")
	}
}

func TestServerRequests(t *testing.T) {
	tests := []struct {
		name    string
		hook    func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
		method  string
		want    string // substring of the reply line
		wantErr int
	}{
		{"ping", nil, "ping", `"result":{}`, 0},
		{"roots", nil, "roots/list", `"result":{"roots":[]}`, 0},
		{"unknown", nil, "sampling/createMessage", "", -32601},
		{"hook answers", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage("{\n\"roots\": [{\"uri\":\"file:///x\"}]}"), nil
		}, "roots/list", `"result":{"roots":[{"uri":"file:///x"}]}`, 0},
		{"hook falls back", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, ErrMethodNotFound
		}, "ping", `"result":{}`, 0},
		{"hook rpc error", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, &RPCError{Code: -32602, Message: "no", Data: json.RawMessage(`{"x":1}`)}
		}, "elicitation/create", `"data":{"x":1}`, -32602},
		{"hook plain error", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("secret detail")
		}, "x", "", -32603},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newFake(t, &Options{OnRequest: tt.hook}, legacyServer("2025-11-25", nil))
			handshake(t, c)
			// Capture the client's reply by reading the server side.
			f.send(`{"jsonrpc":"2.0","id":"s1","method":"` + tt.method + `","params":{}}`)
			deadline := time.After(10 * time.Second)
			for {
				var reply *Message
				f.mu.Lock()
				for i := range f.got {
					if f.got[i].Kind != KindRequest && f.got[i].Kind != KindNotification && string(f.got[i].ID) == `"s1"` {
						reply = &f.got[i]
					}
				}
				f.mu.Unlock()
				if reply != nil {
					if tt.wantErr != 0 {
						if reply.Kind != KindError || reply.Error.Code != tt.wantErr {
							t.Fatalf("reply %s", reply.Raw)
						}
						if strings.Contains(string(reply.Raw), "secret") {
							t.Errorf("error detail leaked: %s", reply.Raw)
						}
					}
					if !strings.Contains(string(reply.Raw), tt.want) {
						t.Fatalf("reply %s lacks %s", reply.Raw, tt.want)
					}
					return
				}
				select {
				case <-f.gotCh:
				case <-deadline:
					t.Fatal("no reply")
				}
			}
		})
	}
}

func TestConcurrentRequestsOutOfOrder(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	var held []Message
	c, _ := newFake(t, nil, legacyServer("2025-11-25", func(f *fake, m Message) {
		if m.Method != "tools/call" {
			return
		}
		mu.Lock()
		held = append(held, m)
		if len(held) == n {
			// Answer in reverse order, each echoing its argument.
			for i := len(held) - 1; i >= 0; i-- {
				f.reply(held[i], `{"content":[],"echo":`+string(member(member(held[i].Params, "arguments"), "i"))+`}`)
			}
		}
		mu.Unlock()
	}))
	handshake(t, c)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.CallTool(ctx10(t), "t", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), nil)
			if err != nil {
				errs <- err
				return
			}
			if got := string(member(res, "echo")); got != fmt.Sprint(i) {
				errs <- fmt.Errorf("call %d got echo %s", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	var mu sync.Mutex
	var held []Message
	c, f := newFake(t, nil, legacyServer("2025-11-25", func(f *fake, m Message) {
		switch m.Method {
		case "tools/call":
			if string(member(m.Params, "name")) == `"fast"` {
				f.reply(m, `{"content":[]}`)
				return
			}
			mu.Lock()
			held = append(held, m)
			mu.Unlock()
		case "notifications/cancelled":
			// Answer late anyway, as servers do.
			mu.Lock()
			for _, h := range held {
				f.reply(h, `{"content":[{"type":"text","text":"late"}]}`)
			}
			held = nil
			mu.Unlock()
		}
	}))
	handshake(t, c)

	_, err := c.CallTool(ctx10(t), "slow", nil, &CallOptions{Timeout: 50 * time.Millisecond})
	mustCode(t, err, CodeTimeout)
	cn := f.await("notifications/cancelled")
	if member(cn.Params, "requestId") == nil || !strings.Contains(string(member(cn.Params, "reason")), "timed out") {
		t.Errorf("cancel params %s", cn.Params)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		f.await("tools/call")
		for len(f.messages("tools/call")) < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = c.CallTool(ctx, "slow", nil, nil)
	mustCode(t, err, CodeAborted)
	for len(f.messages("notifications/cancelled")) < 2 {
		f.await("notifications/cancelled")
		time.Sleep(time.Millisecond)
	}
	// The late answers are dropped; the client keeps working.
	if _, err := c.CallTool(ctx10(t), "fast", nil, nil); err != nil {
		t.Fatal(err)
	}
	if c.State() != Ready {
		t.Errorf("state %v", c.State())
	}
}

func TestProgressAndNotifications(t *testing.T) {
	release := make(chan struct{})
	var notes []string
	var nmu sync.Mutex
	gotNote := make(chan struct{}, 10)
	opts := &Options{OnNotification: func(method string, params json.RawMessage) {
		nmu.Lock()
		notes = append(notes, method)
		nmu.Unlock()
		gotNote <- struct{}{}
		if method == "notifications/message" {
			<-release // a slow callback must not stall the reader
		}
	}}
	c, _ := newFake(t, opts, legacyServer("2025-11-25", func(f *fake, m Message) {
		switch m.Method {
		case "tools/call":
			tok := member(member(m.Params, "_meta"), "progressToken")
			if string(member(m.Params, "name")) == `"log"` {
				f.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
				f.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				f.reply(m, `{"content":[]}`)
				return
			}
			f.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"stray","progress":1}}`)
			for i := 1; i <= 3; i++ {
				f.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(tok) + `,"progress":` + fmt.Sprint(i) + `,"total":3}}`)
			}
			f.reply(m, `{"content":[]}`)
		}
	}))
	handshake(t, c)
	var progress []string
	var pmu sync.Mutex
	done := make(chan struct{})
	_, err := c.CallTool(ctx10(t), "long", nil, &CallOptions{OnProgress: func(p json.RawMessage) {
		pmu.Lock()
		progress = append(progress, string(member(p, "progress")))
		if len(progress) == 3 {
			close(done)
		}
		pmu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Every progress notification sent before the response has been
	// delivered by the time CallTool returns.
	select {
	case <-done:
	default:
		t.Fatalf("progress before the result not delivered: %v", progress)
	}
	pmu.Lock()
	for i, p := range progress {
		if p != fmt.Sprint(i+1) {
			t.Errorf("progress %v", progress)
		}
	}
	pmu.Unlock()

	// A blocked OnNotification does not stall responses.
	if _, err := c.CallTool(ctx10(t), "log", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx10(t), "log", nil, nil); err != nil {
		t.Fatal(err)
	}
	close(release)
	for range 4 {
		select {
		case <-gotNote:
		case <-time.After(10 * time.Second):
			t.Fatal("notifications not delivered")
		}
	}
	nmu.Lock()
	defer nmu.Unlock()
	want := []string{"notifications/message", "notifications/tools/list_changed", "notifications/message", "notifications/tools/list_changed"}
	if fmt.Sprint(notes) != fmt.Sprint(want) {
		t.Errorf("notes %v", notes)
	}
}

func pagedServer(pages int, perPage int, cursor func(page int) string) func(f *fake, m Message) {
	return func(f *fake, m Message) {
		if m.Method != "tools/list" {
			return
		}
		page := 0
		if c := member(m.Params, "cursor"); c != nil {
			var s string
			_ = json.Unmarshal(c, &s)
			fmt.Sscanf(strings.TrimPrefix(s, "c"), "%d", &page)
			if s == "" {
				page = 1
			}
		}
		var tools []string
		for i := range perPage {
			tools = append(tools, fmt.Sprintf(`{"name":"t%d_%d","inputSchema":{"type":"object"}}`, page, i))
		}
		res := `{"tools":[` + strings.Join(tools, ",") + `]`
		if page+1 < pages {
			res += `,"nextCursor":` + cursor(page)
		}
		f.reply(m, res+"}")
	}
}

func TestListToolsPagination(t *testing.T) {
	next := func(p int) string { return fmt.Sprintf(`"c%d"`, p+1) }
	tests := []struct {
		name      string
		srv       func(f *fake, m Message)
		modern    bool
		tools     int
		truncated bool
		errSub    string
	}{
		{"three pages", pagedServer(3, 2, next), false, 6, false, ""},
		{"tool cap", pagedServer(6, 100, next), false, MaxTools, true, ""},
		{"exact cap", pagedServer(5, 100, next), false, MaxTools, false, ""},
		{"page cap", pagedServer(1000, 1, next), false, MaxToolPages, true, ""},
		{"repeated cursor", pagedServer(10, 1, func(int) string { return `"same"` }), false, 0, false, "repeated cursor"},
		{"null cursor ends", func(f *fake, m Message) { f.reply(m, `{"tools":[],"nextCursor":null}`) }, false, 0, false, ""},
		{"legacy empty cursor ends", pagedServer(3, 1, func(int) string { return `""` }), false, 1, false, ""},
		{"modern empty cursor continues", pagedServer(2, 1, func(int) string { return `""` }), true, 2, false, ""},
		{"cursor not string", func(f *fake, m Message) { f.reply(m, `{"tools":[],"nextCursor":5}`) }, false, 0, false, "nextCursor"},
		{"tools missing", func(f *fake, m Message) { f.reply(m, `{}`) }, false, 0, false, "tools"},
		{"tool without name", func(f *fake, m Message) { f.reply(m, `{"tools":[{"title":"x"}]}`) }, false, 0, false, "no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := legacyServer("2025-11-25", func(f *fake, m Message) {
				if m.Method == "tools/list" {
					tt.srv(f, m)
				}
			})
			if tt.modern {
				h = modernServer(func(f *fake, m Message) {
					if m.Method == "tools/list" {
						tt.srv(f, m)
					}
				})
			}
			c, _ := newFake(t, nil, h)
			handshake(t, c)
			tl, err := c.ListTools(ctx10(t))
			if tt.errSub != "" {
				mustCode(t, err, CodeProtocol)
				if !strings.Contains(err.Error(), tt.errSub) {
					t.Errorf("error %v lacks %q", err, tt.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Tools) != tt.tools || tl.Truncated != tt.truncated {
				t.Errorf("tools %d truncated %v, want %d %v", len(tl.Tools), tl.Truncated, tt.tools, tt.truncated)
			}
		})
	}
}

func TestListToolsFields(t *testing.T) {
	c, _ := newFake(t, nil, legacyServer("2025-11-25", echoTools))
	handshake(t, c)
	tl, err := c.ListTools(ctx10(t))
	if err != nil {
		t.Fatal(err)
	}
	tool := tl.Tools[0]
	if tool.Name != "echo" || tool.Title != "Echo" || tool.Description != "d" ||
		!strings.Contains(string(tool.InputSchema), "1e400") || string(tool.Annotations) != `{"readOnlyHint":true}` ||
		!strings.HasPrefix(string(tool.Raw), `{"name":"echo"`) {
		t.Errorf("tool %+v", tool)
	}
}

func TestCallToolResults(t *testing.T) {
	c, _ := newFake(t, nil, legacyServer("2025-11-25", func(f *fake, m Message) {
		if m.Method != "tools/call" {
			return
		}
		switch string(member(m.Params, "name")) {
		case `"badIsError"`:
			f.reply(m, `{"content":[],"isError":"yes"}`)
		case `"rpcError"`:
			f.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"Unknown tool","data":{"n":18446744073709551616}}}`)
		case `"toolError"`:
			f.reply(m, `{"content":[{"type":"text","text":"failed"}],"isError":true}`)
		case `"notObject"`:
			f.reply(m, `[1]`)
		}
	}))
	handshake(t, c)
	_, err := c.CallTool(ctx10(t), "badIsError", nil, nil)
	mustCode(t, err, CodeProtocol)
	if !strings.Contains(err.Error(), "malformed result") {
		t.Errorf("%v", err)
	}
	_, err = c.CallTool(ctx10(t), "rpcError", nil, nil)
	mustCode(t, err, CodeServer)
	var e *Error
	if !errors.As(err, &e) || e.RPC == nil || e.RPC.Code != -32602 || string(e.RPC.Data) != `{"n":18446744073709551616}` {
		t.Errorf("rpc error %#v", err)
	}
	var rpc *RPCError
	if !errors.As(err, &rpc) {
		t.Error("RPCError not in the chain")
	}
	res, err := c.CallTool(ctx10(t), "toolError", nil, nil)
	if err != nil || !strings.Contains(string(res), `"isError":true`) {
		t.Errorf("tool error result %s %v", res, err)
	}
	_, err = c.CallTool(ctx10(t), "notObject", nil, nil)
	mustCode(t, err, CodeProtocol)
	_, err = c.CallTool(ctx10(t), "x", json.RawMessage(`[1]`), nil)
	mustCode(t, err, CodeProtocol)
	_, err = c.CallTool(ctx10(t), "x", json.RawMessage(`{"a":`), nil)
	mustCode(t, err, CodeProtocol)
	if c.State() != Ready {
		t.Errorf("state %v", c.State())
	}
}

func TestFatalFaults(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		inject string // what the server writes instead of answering tools/call
		close  bool   // server closes stdout instead
		code   Code
		sub    string
	}{
		{name: "stdout closed", close: true, code: CodeClosed, sub: "closed its stdout"},
		{name: "invalid utf8", inject: "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"s\":\"\xc0\xaf\"}}", code: CodeProtocol, sub: "UTF-8"},
		{name: "over cap", opts: Options{MaxLineBytes: 300}, inject: `{"jsonrpc":"2.0","method":"x","params":{"s":"` + strings.Repeat("a", 500) + `"}}`, code: CodeProtocol, sub: "maxLineBytes"},
		{name: "batch", inject: `[{"jsonrpc":"2.0","id":1,"result":{}}]`, code: CodeProtocol, sub: "batch"},
		{name: "noise fatal", opts: Options{NoiseFatal: true}, inject: "Server started!", code: CodeProtocol, sub: "stdoutNoise"},
		{name: "bad envelope", inject: `{"jsonrpc":"2.0","id":1}`, code: CodeProtocol, sub: "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			c, _ := newFake(t, &opts, legacyServer("2025-11-25", func(f *fake, m Message) {
				if m.Method != "tools/call" {
					return
				}
				if tt.close {
					f.out.Close()
					return
				}
				f.send(tt.inject)
			}))
			handshake(t, c)
			_, err := c.CallTool(ctx10(t), "x", nil, nil)
			mustCode(t, err, tt.code)
			if !strings.Contains(err.Error(), tt.sub) || !strings.Contains(err.Error(), `"srv"`) {
				t.Errorf("error %q lacks %q or the server name", err, tt.sub)
			}
			<-c.Done()
			if c.State() != Failed || CodeOf(c.Err()) != tt.code {
				t.Errorf("state %v err %v", c.State(), c.Err())
			}
			// Never restarts: later calls fail the same way.
			_, err = c.CallTool(ctx10(t), "x", nil, nil)
			mustCode(t, err, tt.code)
		})
	}
}

func TestNoiseSetAside(t *testing.T) {
	c, _ := newFake(t, nil, legacyServer("2025-11-25", func(f *fake, m Message) {
		if m.Method == "tools/call" {
			for i := range 20 {
				f.send(fmt.Sprintf("banner %d %s", i, strings.Repeat("é", 200)))
			}
			f.send(`{"level":"debug"}`)
			f.reply(m, `{"content":[]}`)
		}
	}))
	handshake(t, c)
	if _, err := c.CallTool(ctx10(t), "x", nil, nil); err != nil {
		t.Fatal(err)
	}
	n, recent := c.Noise()
	if n != 21 || len(recent) != 16 {
		t.Fatalf("noise %d, %d recent", n, len(recent))
	}
	if !strings.HasPrefix(recent[0], "banner 5 ") || recent[15] != `{"level":"debug"}` {
		t.Errorf("ring order: %q ... %q", recent[0], recent[15])
	}
	for _, s := range recent {
		if len(s) > 256 || !utf8Valid(s) {
			t.Errorf("noise line not bounded/valid: %d bytes", len(s))
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestOutboundOverload(t *testing.T) {
	stopReading := make(chan struct{})
	c, f := newFake(t, &Options{MaxOutboundBytes: 1 /* raised to the minimum */}, legacyServer("2025-11-25", nil))
	handshake(t, c)
	// A single message over the cap is refused on its own.
	big := json.RawMessage(`{"s":"` + strings.Repeat("a", MinOutboundBytes) + `"}`)
	_, err := c.CallTool(ctx10(t), "x", big, &CallOptions{Timeout: time.Second})
	mustCode(t, err, CodeOverload)
	if c.State() != Ready {
		t.Fatalf("a single oversized message failed the client: %v", c.Err())
	}
	// Now the server stops reading stdin: the queue fills and crosses the cap.
	f.mu.Lock()
	f.handle = func(*fake, Message) { <-stopReading }
	f.mu.Unlock()
	defer close(stopReading)
	arg := json.RawMessage(`{"s":"` + strings.Repeat("b", 1000) + `"}`)
	var wg sync.WaitGroup
	var overloads atomic.Int32
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.CallTool(ctx10(t), "x", arg, nil)
			if CodeOf(err) == CodeOverload {
				overloads.Add(1)
			}
		}()
	}
	wg.Wait()
	if overloads.Load() == 0 || CodeOf(c.Err()) != CodeOverload || c.State() != Failed {
		t.Fatalf("overloads %d err %v state %v", overloads.Load(), c.Err(), c.State())
	}
	if !strings.Contains(c.Err().Error(), "stopped reading") {
		t.Errorf("%v", c.Err())
	}
}

func TestCloseFailsPendingAndIsIdempotent(t *testing.T) {
	c, f := newFake(t, nil, legacyServer("2025-11-25", func(*fake, Message) {}))
	handshake(t, c)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "hang", nil, nil)
		errc <- err
	}()
	f.await("tools/call")
	out := c.Close()
	if !out.Complete {
		t.Errorf("outcome %+v", out)
	}
	mustCode(t, <-errc, CodeClosed)
	if c.State() != Closed || CodeOf(c.Err()) != CodeClosed {
		t.Errorf("state %v err %v", c.State(), c.Err())
	}
	c.Close()
	_, err := c.ListTools(ctx10(t))
	mustCode(t, err, CodeClosed)
	mustCode(t, c.Notify("x", nil), CodeClosed)
}

func TestNotReady(t *testing.T) {
	c, _ := newFake(t, nil, legacyServer("2025-11-25", nil))
	_, err := c.CallTool(ctx10(t), "x", nil, nil)
	mustCode(t, err, CodeClosed)
	handshake(t, c)
	mustCode(t, c.Handshake(ctx10(t)), CodeProtocol)
}

func TestNoGoroutineLeak(t *testing.T) {
	settle := func() int {
		n := runtime.NumGoroutine()
		for range 200 {
			time.Sleep(5 * time.Millisecond)
			m := runtime.NumGoroutine()
			if m == n {
				return m
			}
			n = m
		}
		return n
	}
	before := settle()
	for i := range 10 {
		c, f := newFake(t, &Options{OnNotification: func(string, json.RawMessage) {}, OnRequest: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done() // a handler still running at Close
			return nil, ctx.Err()
		}}, legacyServer("2025-11-25", echoTools))
		handshake(t, c)
		if _, err := c.ListTools(ctx10(t)); err != nil {
			t.Fatal(err)
		}
		f.send(`{"jsonrpc":"2.0","id":"r","method":"roots/list"}`)
		f.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		if i%2 == 0 {
			go func() { _, _ = c.CallTool(context.Background(), "hang", nil, nil) }()
			f.await("tools/call")
		}
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	after := settle()
	for after > before && time.Now().Before(deadline) {
		after = settle()
	}
	if after > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines before %d after %d\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
