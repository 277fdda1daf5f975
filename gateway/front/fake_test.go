package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeBackend is a scriptable Backend for tests.
type fakeBackend struct {
	mu           sync.Mutex
	features     Features
	items        map[Kind][]Item
	instructions string
	readyErr     error
	subs         map[int]func(Event)
	nextSub      int
	closed       atomic.Int32
	logLevels    []string

	find       func(ctx context.Context, r FindRequest, p Peer) (json.RawMessage, error)
	describe   func(ctx context.Context, r DescribeRequest, p Peer) (json.RawMessage, error)
	call       func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error)
	readResult func(ctx context.Context, r ReadResultRequest, p Peer) (json.RawMessage, error)
	execute    func(ctx context.Context, r ExecuteRequest, p Peer) (json.RawMessage, error)
	readRes    func(ctx context.Context, server string, params json.RawMessage, p Peer) (json.RawMessage, error)
	getPrompt  func(ctx context.Context, server string, params json.RawMessage, p Peer) (json.RawMessage, error)
	completeFn func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error)
}

func newFake() *fakeBackend {
	return &fakeBackend{items: map[Kind][]Item{}, subs: map[int]func(Event){}}
}

func textResult(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return b
}

func (b *fakeBackend) Instructions() string { return b.instructions }
func (b *fakeBackend) Ready(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readyErr
}
func (b *fakeBackend) Features() Features {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.features
}
func (b *fakeBackend) Find(ctx context.Context, r FindRequest, p Peer) (json.RawMessage, error) {
	if b.find != nil {
		return b.find(ctx, r, p)
	}
	return textResult(fmt.Sprintf("find %q", r.Query)), nil
}
func (b *fakeBackend) Describe(ctx context.Context, r DescribeRequest, p Peer) (json.RawMessage, error) {
	if b.describe != nil {
		return b.describe(ctx, r, p)
	}
	if r.Server != "" {
		return textResult(fmt.Sprintf("describe %v server %s", r.Capabilities, r.Server)), nil
	}
	return textResult(fmt.Sprintf("describe %v", r.Capabilities)), nil
}
func (b *fakeBackend) Call(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
	if b.call != nil {
		return b.call(ctx, r, p)
	}
	return textResult(r.Capability + " " + string(r.Arguments)), nil
}
func (b *fakeBackend) ReadResult(ctx context.Context, r ReadResultRequest, p Peer) (json.RawMessage, error) {
	if b.readResult != nil {
		return b.readResult(ctx, r, p)
	}
	if r.Ref != r.Handle {
		return nil, fmt.Errorf("front passed handle %q and ref %q", r.Handle, r.Ref)
	}
	return textResult(fmt.Sprintf("read %s %d %d", r.Handle, r.Offset, r.Length)), nil
}
func (b *fakeBackend) Execute(ctx context.Context, r ExecuteRequest, p Peer) (json.RawMessage, error) {
	if b.execute != nil {
		return b.execute(ctx, r, p)
	}
	return textResult("ran " + r.Script), nil
}
func (b *fakeBackend) List(_ context.Context, k Kind) ([]Item, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Item(nil), b.items[k]...), nil
}
func (b *fakeBackend) ReadResource(ctx context.Context, server string, params json.RawMessage, p Peer) (json.RawMessage, error) {
	if b.readRes != nil {
		return b.readRes(ctx, server, params, p)
	}
	return nil, errors.New("no resources")
}
func (b *fakeBackend) GetPrompt(ctx context.Context, server string, params json.RawMessage, p Peer) (json.RawMessage, error) {
	if b.getPrompt != nil {
		return b.getPrompt(ctx, server, params, p)
	}
	return nil, errors.New("no prompts")
}
func (b *fakeBackend) Complete(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
	if b.completeFn != nil {
		return b.completeFn(ctx, server, params)
	}
	return nil, errors.New("no completions")
}
func (b *fakeBackend) SetLogLevel(_ context.Context, level string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logLevels = append(b.logLevels, level)
	return nil
}
func (b *fakeBackend) Subscribe(fn func(Event)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.nextSub
	b.nextSub++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}
}
func (b *fakeBackend) emit(ev Event) {
	b.mu.Lock()
	fns := make([]func(Event), 0, len(b.subs))
	for _, f := range b.subs {
		fns = append(fns, f)
	}
	b.mu.Unlock()
	for _, f := range fns {
		f(ev)
	}
}
func (b *fakeBackend) setItems(k Kind, items ...Item) {
	b.mu.Lock()
	b.items[k] = items
	b.mu.Unlock()
}
func (b *fakeBackend) Close() error { b.closed.Add(1); return nil }

func toolItem(server, name, desc string) Item {
	raw, _ := json.Marshal(map[string]any{
		"name": name, "description": desc,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}},
	})
	return Item{Server: server, Raw: raw}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// session is an in-memory client session against a front.
type session struct {
	f  *front
	cs *mcp.ClientSession
}

// connect serves b in memory and connects an SDK client. version "" lets
// the client pick (modern: server/discover); "2025-11-25" forces legacy.
func connect(t *testing.T, b Backend, opts *Options, copts *mcp.ClientOptions, version string) *session {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	f, err := newFront(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.start(ctx)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	if copts.Capabilities == nil {
		copts.Capabilities = &mcp.ClientCapabilities{}
		if copts.ElicitationHandler != nil {
			copts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{}
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, copts)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		f.close()
	})
	return &session{f: f, cs: cs}
}

func (s *session) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func (s *session) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func resultText(r *mcp.CallToolResult) string {
	var s string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

// waitFor polls cond (a hang guard, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
