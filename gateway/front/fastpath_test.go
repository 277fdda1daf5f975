package front

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioPeer drives ServeStdio over pipes with raw frames.
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func startStdio(t *testing.T, b Backend, opts *Options) *stdioPeer {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	opts.NoSignals = true
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, lines: make(chan string, 256), done: make(chan error, 1)}
	go func() {
		p.done <- ServeStdio(context.Background(), b, opts, inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-p.done:
		case <-time.After(30 * time.Second): // hang guard
			t.Error("ServeStdio did not return after stdin EOF")
		}
	})
	return p
}

func (p *stdioPeer) send(frame string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, frame+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// end closes stdin and waits for ServeStdio to return.
func (p *stdioPeer) end() {
	p.t.Helper()
	p.in.Close()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			p.t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // hang guard
		p.t.Fatal("ServeStdio did not return after stdin EOF")
	}
}

// until reads frames until one answers id, returning the frames read
// (notifications included) with the response last.
func (p *stdioPeer) until(id int) []string {
	p.t.Helper()
	var got []string
	want := fmt.Sprintf(`"id":%d,`, id)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("stdout closed waiting for the answer to %d (read %q)", id, got)
			}
			got = append(got, l)
			if strings.Contains(l, want) && !strings.Contains(l, `"method"`) {
				return got
			}
		case <-time.After(20 * time.Second): // hang guard
			p.t.Fatalf("no answer to request %d (read %q)", id, got)
		}
	}
}

// requestIDs matches the per-process request ids in messages.
var requestIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9]+`)

// canonical re-encodes a frame with sorted keys and the request id blanked.
func canonical(t *testing.T, frame string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(frame), &v); err != nil {
		t.Fatalf("frame is not JSON: %v: %s", err, frame)
	}
	b, _ := json.Marshal(v)
	return requestIDs.ReplaceAllString(string(b), "RID")
}

// fastBackend returns the results and failures both paths must answer
// alike.
func fastBackend() *fakeBackend {
	b := newFake()
	var tools []Item
	for _, n := range []string{"echo", "structured", "nocontent", "iserror", "toolerr", "fail", "panic", "protoerr", "progress", "upstreammeta", "image", "odd", "extra", "emptytext", "blockmeta", "annotated", "single", "unknown", "notext"} {
		tools = append(tools, toolItem("up", n, "Answers as "+n+"."))
	}
	b.setItems(KindTools, tools...)
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		switch strings.TrimPrefix(r.Capability, "up__") {
		case "echo":
			return textResult("echo " + string(r.Arguments)), nil
		case "structured":
			return json.RawMessage(`{"content":[{"type":"text","text":"n"}],"structuredContent":{"big":12345678901234567890,"f":1.50},"_meta":{"k":"v"}}`), nil
		case "nocontent":
			return json.RawMessage(`{"structuredContent":{"a":1}}`), nil
		case "iserror":
			return json.RawMessage(`{"content":[{"type":"text","text":"tool said no"}],"isError":true}`), nil
		case "toolerr":
			return nil, &ToolError{Message: "bad input", Remedy: "pass x"}
		case "fail":
			return nil, errors.New("secret detail the model must not see")
		case "panic":
			panic("backend bug")
		case "protoerr":
			return nil, &ProtocolError{Code: -32602, Message: "Unknown tool: up__protoerr"}
		case "progress":
			_ = p.Progress(ctx, 1, 2, "half")
			_ = p.Log(ctx, "error", "up", json.RawMessage(`"a log line"`))
			return textResult("progressed"), nil
		case "upstreammeta":
			return json.RawMessage(`{"content":[{"type":"text","text":"m"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"upstream","version":"9"},"keep":true}}`), nil
		case "image":
			return json.RawMessage(`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`), nil
		case "odd":
			return json.RawMessage(`{"content":[{"type":"hologram","data":"?"}]}`), nil
		case "extra":
			return json.RawMessage(`{"content":[{"type":"text","text":"e"}],"isError":false,"structuredContent":null}`), nil
		case "emptytext":
			return json.RawMessage(`{"content":[{"type":"text","text":""},{"type":"text","text":"<&>\u00e9"}]}`), nil
		case "blockmeta":
			return json.RawMessage(` {"content":[{"type":"text","text":"b","_meta":{"m":[1,2]}}],"isError":true} `), nil
		case "annotated":
			return json.RawMessage(`{"content":[{"type":"text","text":"a","annotations":{"audience":["user"],"priority":0.5,"other":1}}]}`), nil
		case "single":
			return json.RawMessage(`{"content":{"type":"text","text":"one"}}`), nil
		case "unknown":
			return json.RawMessage(`{"content":[{"type":"text","text":"u","Text":"x"}],"extraField":1}`), nil
		case "notext":
			return json.RawMessage(`{"content":[{"type":"text"}]}`), nil
		}
		return nil, fmt.Errorf("no tool %s", r.Tool)
	}
	return b
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func modernMeta(extra string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}` + extra + `}`
}

// exchange runs one scripted conversation and returns every frame read,
// canonical, request by request.
func exchange(t *testing.T, opts Options, modern bool) [][]string {
	p := startStdio(t, fastBackend(), &opts)
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
		// The first modern request sets the session's era.
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta("") + `}}`)
		p.until(1)
	} else {
		p.send(legacyInit)
		p.until(1)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`)
		p.until(2)
	}
	var out [][]string
	id := 10
	call := func(params string) {
		id++
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
		var frames []string
		for _, f := range p.until(id) {
			frames = append(frames, canonical(t, f))
		}
		out = append(out, frames)
	}
	for _, n := range []string{"echo", "structured", "nocontent", "iserror", "toolerr", "fail", "panic", "protoerr", "upstreammeta", "image", "odd", "extra", "emptytext", "blockmeta", "annotated", "single", "unknown", "notext"} {
		call(`{"name":"up__` + n + `","arguments":{"x":1},` + meta("") + `}`)
	}
	call(`{"name":"up__echo",` + meta("") + `}`)
	call(`{"name":"up__echo","arguments":null,` + meta("") + `}`)
	call(`{"name":"up__progress","arguments":{},` + meta(`,"progressToken":"tok-1"`) + `}`)
	call(`{"name":"up__progress","arguments":{},` + meta(`,"progressToken":7`) + `}`)
	call(`{"name":"up__nosuch","arguments":{},` + meta("") + `}`)
	call(`{"name":"nosuch","arguments":{},` + meta("") + `}`)
	call(`{"name":"up__echo","arguments":{"x":2},"task":{"ttl":1},` + meta("") + `}`)
	call(`{"name":"","arguments":{}}`)
	call(`{"name":"up__echo","arguments":"not an object"}`)
	call(`[1,2]`)
	return out
}

// TestStdioFastPathAnswersAsTheSDK runs one conversation through
// ServeStdio with the tools/call fast path and once without it, in both
// eras, and requires the same frames (key order and request ids aside):
// results, tool errors, hidden failures, panics, protocol errors, stripped
// upstream fields, progress and log notifications, unknown tools and
// requests only the SDK takes.
func TestStdioFastPathAnswersAsTheSDK(t *testing.T) {
	for _, era := range []struct {
		name   string
		modern bool
	}{{"legacy", false}, {"modern", true}} {
		t.Run(era.name, func(t *testing.T) {
			var viaSDK, viaFast atomic.Int64
			sdk := exchange(t, Options{Mode: ModeFlat, noFastPath: true, fastTaken: &viaSDK}, era.modern)
			fast := exchange(t, Options{Mode: ModeFlat, fastTaken: &viaFast}, era.modern)
			if viaSDK.Load() != 0 {
				t.Fatalf("the fast path took %d calls while switched off", viaSDK.Load())
			}
			// Every call but the unknown tools and the requests it refuses.
			if n := viaFast.Load(); n < 20 {
				t.Fatalf("the fast path took only %d calls", n)
			}
			if len(sdk) != len(fast) {
				t.Fatalf("%d answers through the SDK, %d on the fast path", len(sdk), len(fast))
			}
			for i := range sdk {
				if !equalFrames(sdk[i], fast[i]) {
					t.Errorf("request %d:\n sdk:  %s\n fast: %s", i, strings.Join(sdk[i], "\n       "), strings.Join(fast[i], "\n       "))
				}
			}
		})
	}
}

// equalFrames compares two answers: the response must match exactly and
// the notifications before it as a set (progress and log messages are
// sent from the call, in any order relative to each other).
func equalFrames(a, b []string) bool {
	if len(a) != len(b) || a[len(a)-1] != b[len(b)-1] {
		return false
	}
	seen := map[string]int{}
	for _, f := range a[:len(a)-1] {
		seen[f]++
	}
	for _, f := range b[:len(b)-1] {
		seen[f]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestStdioFastPathCancellation: a flat-mode call the agent cancels is
// stopped in the backend and never answered, in both eras, and the
// session goes on.
func TestStdioFastPathCancellation(t *testing.T) {
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprint("modern=", modern), func(t *testing.T) {
			b := newFake()
			b.setItems(KindTools, toolItem("up", "wait", "Waits."), toolItem("up", "echo", "Echoes."))
			var once sync.Once
			started, returned := make(chan struct{}), make(chan struct{})
			b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
				if r.Capability == "up__echo" {
					return textResult("echo"), nil
				}
				once.Do(func() { close(started) })
				<-ctx.Done()
				defer close(returned)
				return nil, ctx.Err()
			}
			var taken atomic.Int64
			p := startStdio(t, b, &Options{Mode: ModeFlat, fastTaken: &taken})
			meta := `"_meta":{}`
			if modern {
				meta = modernMeta("")
				p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
			} else {
				p.send(legacyInit)
			}
			p.until(1)
			if !modern {
				p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__wait","arguments":{},` + meta + `}}`)
			<-started
			p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
			<-returned
			p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__echo","arguments":{},` + meta + `}}`)
			frames := p.until(3)
			if !strings.Contains(frames[len(frames)-1], `"text":"echo"`) {
				t.Fatalf("the session did not go on: %s", frames[len(frames)-1])
			}
			for _, f := range frames {
				if strings.Contains(f, `"id":2,`) {
					t.Fatalf("the cancelled request was answered: %s", f)
				}
			}
			if taken.Load() != 2 {
				t.Fatalf("the fast path took %d of the 2 calls", taken.Load())
			}
		})
	}
}

// TestStdioFastPathDrainsOnEOF: calls still running when stdin ends are
// answered before ServeStdio returns.
func TestStdioFastPathDrainsOnEOF(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "slow", "Slow."))
	release := make(chan struct{})
	var n sync.WaitGroup
	n.Add(3)
	b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		n.Done()
		<-release
		return textResult("done " + string(r.Arguments)), nil
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), b, &Options{Mode: ModeFlat, Logger: quietLogger(), NoSignals: true}, inR, outW)
		outW.Close()
	}()
	var out []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
	}()
	frames := []string{legacyInit, `{"jsonrpc":"2.0","method":"notifications/initialized"}`}
	for i := 2; i <= 4; i++ {
		frames = append(frames, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__slow","arguments":{"x":%d}}}`, i, i))
	}
	_, _ = io.WriteString(inW, strings.Join(frames, "\n")+"\n")
	n.Wait()
	inW.Close()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-read
	for i := 2; i <= 4; i++ {
		found := false
		for _, l := range out {
			if strings.Contains(l, fmt.Sprintf(`"id":%d,`, i)) && strings.Contains(l, fmt.Sprintf(`done {\"x\":%d}`, i)) {
				found = true
			}
		}
		if !found {
			t.Errorf("call %d was not answered before exit: %q", i, out)
		}
	}
}

// TestStdioFastPathHandsInputRequiredToTheSDK: an upstream input_required
// result for a legacy agent is still turned into elicitation by the SDK
// (the fast path hands the answered request over), and the backend runs
// once per round.
func TestStdioFastPathHandsInputRequiredToTheSDK(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "ask", "Asks."))
	var mu sync.Mutex
	var rounds []CallRequest
	b.call = func(ctx context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
		mu.Lock()
		rounds = append(rounds, r)
		mu.Unlock()
		if len(r.InputResponses) == 0 {
			return json.RawMessage(`{"resultType":"input_required","inputRequests":{"q1":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}`), nil
		}
		return textResult("answered " + string(r.InputResponses) + " state " + r.RequestState), nil
	}
	for _, fast := range []bool{false, true} {
		t.Run(fmt.Sprint("fast=", fast), func(t *testing.T) {
			mu.Lock()
			rounds = nil
			mu.Unlock()
			var taken atomic.Int64
			cr, cw := io.Pipe()
			sr, sw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- ServeStdio(context.Background(), b, &Options{Mode: ModeFlat, Logger: quietLogger(), NoSignals: true, noFastPath: !fast, fastTaken: &taken}, cr, sw)
				sw.Close()
			}()
			c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			cs.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			text := resultText(res)
			if !strings.Contains(text, "Ada") || !strings.Contains(text, "state st-1") {
				t.Fatalf("the elicited answer did not reach the upstream: %q", text)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(rounds) != 2 {
				t.Fatalf("backend ran %d times, want 2 (one per round)", len(rounds))
			}
			if fast && taken.Load() == 0 {
				t.Fatal("the fast path took no call")
			}
		})
	}
}

// TestStdioFastPathAsksTheAgent: a backend that asks the agent during a
// call (an approval by elicitation) gets its answer on the fast path, and
// a refusal is the backend's to report.
func TestStdioFastPathAsksTheAgent(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "guarded", "Needs approval."))
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		ok, err := p.Elicit(ctx, "Run "+r.Capability+"?", json.RawMessage(`{"type":"object","properties":{}}`))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &ToolError{Message: "declined", Remedy: "ask again"}
		}
		return textResult("approved"), nil
	}
	var taken atomic.Int64
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), b, &Options{Mode: ModeFlat, Logger: quietLogger(), NoSignals: true, fastTaken: &taken}, cr, sw)
		sw.Close()
	}()
	var answer atomic.Value
	answer.Store("accept")
	var asked atomic.Int64
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if req.Params.Message != "Run up__guarded?" {
				return nil, fmt.Errorf("unexpected question %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: answer.Load().(string)}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__guarded", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || resultText(res) != "approved" {
		t.Fatalf("accepted call: %+v %q", res, resultText(res))
	}
	answer.Store("decline")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__guarded", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), "declined") {
		t.Fatalf("declined call: %+v %q", res, resultText(res))
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 2 || taken.Load() != 2 {
		t.Fatalf("agent asked %d times, fast path took %d calls; want 2 and 2", asked.Load(), taken.Load())
	}
}

// TestStdioFastPathLogsAsTheSDKPath: each call writes the same log lines,
// with the same keys in the same order, on both paths.
func TestStdioFastPathLogsAsTheSDKPath(t *testing.T) {
	lines := func(noFast bool) []string {
		var buf syncBuffer
		log := slog.New(slog.NewJSONHandler(&buf, nil))
		p := startStdio(t, fastBackend(), &Options{Mode: ModeFlat, Logger: log, noFastPath: noFast})
		p.send(legacyInit)
		p.until(1)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for i, n := range []string{"echo", "iserror", "fail", "protoerr", "panic"} {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{}}}`, i+2, n))
			p.until(i + 2)
		}
		// A fast-path call is logged once its answer is written: the
		// lines are all there when the session has ended.
		p.end()
		var out []string
		for _, l := range strings.Split(string(buf.Bytes()), "\n") {
			if !strings.Contains(l, `"request_id"`) {
				continue
			}
			// Keys in order, values of the stable ones.
			dec := json.NewDecoder(strings.NewReader(l))
			var keys []string
			_, _ = dec.Token()
			for dec.More() {
				k, _ := dec.Token()
				var v any
				_ = dec.Decode(&v)
				switch k {
				case "time", "request_id", "duration_ms", "stack":
					keys = append(keys, k.(string))
				default:
					keys = append(keys, fmt.Sprintf("%s=%v", k, v))
				}
			}
			out = append(out, strings.Join(keys, " "))
		}
		return out
	}
	sdk, fast := lines(true), lines(false)
	// The order of two calls' lines is that of their ends, not of their
	// answers.
	sort.Strings(sdk)
	sort.Strings(fast)
	if strings.Join(sdk, "\n") != strings.Join(fast, "\n") {
		t.Fatalf("log lines differ:\n sdk:\n  %s\n fast:\n  %s", strings.Join(sdk, "\n  "), strings.Join(fast, "\n  "))
	}
	if len(fast) < 5 {
		t.Fatalf("only %d call log lines: %q", len(fast), fast)
	}
}
