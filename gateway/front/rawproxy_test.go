//go:build unix

package front

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawProxy is a test-only Backend that talks to one upstream stdio server
// with a minimal raw JSON-RPC client, the way the gateway's own client
// does: it probes server/discover first (modern era, per-request _meta
// carrying the agent's client capabilities) and falls back to initialize,
// passes results through verbatim (input_required included), and forwards
// progress and log notifications in read order.
type rawProxy struct {
	id  string
	cmd *exec.Cmd
	in  io.WriteCloser

	wmu sync.Mutex // serializes writes to the upstream's stdin

	mu           sync.Mutex
	next         int64
	pending      map[int64]chan rawMsg
	tokens       map[string]Peer
	peers        map[int]Peer
	nextPeer     int
	subs         map[int]func(Event)
	nextSub      int
	modern       bool
	logLevel     string
	instructions string
	caps         map[string]json.RawMessage
	done         chan struct{}
}

type rawErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type rawMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rawErr         `json:"error,omitempty"`
}

func startRawProxy(t *testing.T, command string, args ...string) *rawProxy {
	t.Helper()
	p := &rawProxy{id: "everything", pending: map[int64]chan rawMsg{}, tokens: map[string]Peer{}, peers: map[int]Peer{}, subs: map[int]func(Event){}, done: make(chan struct{})}
	p.cmd = exec.Command(command, args...)
	p.cmd.Stderr = os.Stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	go p.read(out)
	ctx := context.Background()
	p.modern = true
	res, err := p.request(ctx, "server/discover", json.RawMessage(`{}`), nil, nil)
	var disc struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		Instructions string                     `json:"instructions"`
	}
	if err == nil && json.Unmarshal(res, &disc) == nil {
		p.caps, p.instructions = disc.Capabilities, disc.Instructions
		return p
	}
	p.modern = false
	res, err = p.request(ctx, "initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"sluice-test-raw-proxy","version":"1"}}`), nil, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := json.Unmarshal(res, &disc); err != nil {
		t.Fatal(err)
	}
	p.caps, p.instructions = disc.Capabilities, disc.Instructions
	p.write(rawMsg{JSONRPC: "2.0", Method: "notifications/initialized"})
	return p
}

func (p *rawProxy) write(m rawMsg) {
	m.JSONRPC = "2.0"
	b, _ := json.Marshal(m)
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, _ = p.in.Write(append(b, '\n'))
}

// request sends one request. In the modern era params._meta gets the
// protocol version, the agent's client capabilities and the log level.
func (p *rawProxy) request(ctx context.Context, method string, params json.RawMessage, peer Peer, meta map[string]any) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	m := map[string]any{}
	if raw, ok := obj["_meta"]; ok {
		_ = json.Unmarshal(raw, &m)
	}
	for k, v := range meta {
		m[k] = v
	}
	p.mu.Lock()
	modern, level := p.modern, p.logLevel
	p.next++
	id := p.next
	ch := make(chan rawMsg, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	if modern {
		caps := json.RawMessage(`{}`)
		if peer != nil {
			caps = peer.ClientCapabilities()
		}
		m["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		m["io.modelcontextprotocol/clientCapabilities"] = caps
		m["io.modelcontextprotocol/clientInfo"] = map[string]string{"name": "sluice-test-raw-proxy", "version": "1"}
		if level != "" {
			m["io.modelcontextprotocol/logLevel"] = level
		}
	}
	if len(m) > 0 {
		obj["_meta"], _ = json.Marshal(m)
	}
	body, _ := json.Marshal(obj)
	p.write(rawMsg{ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: body})
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, &ProtocolError{Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
		}
		return r.Result, nil
	case <-ctx.Done():
		c, _ := json.Marshal(map[string]any{"requestId": id, "reason": "cancelled by the agent"})
		p.write(rawMsg{Method: "notifications/cancelled", Params: c})
		return nil, ctx.Err()
	case <-p.done:
		return nil, errors.New("upstream exited")
	}
}

func (p *rawProxy) read(out io.Reader) {
	defer close(p.done)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var m rawMsg
			if json.Unmarshal(line, &m) == nil {
				p.dispatch(m)
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *rawProxy) dispatch(m rawMsg) {
	switch {
	case m.Method == "" && len(m.ID) > 0: // response
		var id int64
		if json.Unmarshal(m.ID, &id) != nil {
			return
		}
		p.mu.Lock()
		ch := p.pending[id]
		p.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.Method != "" && len(m.ID) > 0: // server -> client request (legacy)
		go func() {
			reply := rawMsg{ID: m.ID}
			var res json.RawMessage
			var err error
			switch m.Method {
			case "ping":
				res = json.RawMessage(`{}`)
			case "elicitation/create", "sampling/createMessage", "roots/list":
				if pr := p.current(); pr != nil {
					res, err = pr.Request(context.Background(), m.Method, m.Params)
				} else {
					err = errors.New("no call in flight")
				}
			default:
				err = errors.New("method not found")
			}
			if err != nil {
				reply.Error = &rawErr{Code: -32603, Message: err.Error()}
			} else {
				reply.Result = res
			}
			p.write(reply)
		}()
	default: // notification, handled in read order
		p.notify(m)
	}
}

func (p *rawProxy) notify(m rawMsg) {
	ctx := context.Background()
	switch m.Method {
	case "notifications/progress":
		var n struct {
			Token    any     `json:"progressToken"`
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
			Message  string  `json:"message"`
		}
		if json.Unmarshal(m.Params, &n) != nil {
			return
		}
		p.mu.Lock()
		pr := p.tokens[fmt.Sprint(n.Token)]
		p.mu.Unlock()
		if pr != nil {
			_ = pr.Progress(ctx, n.Progress, n.Total, n.Message)
		}
	case "notifications/message":
		var n struct {
			Level  string          `json:"level"`
			Logger string          `json:"logger"`
			Data   json.RawMessage `json:"data"`
		}
		if json.Unmarshal(m.Params, &n) != nil {
			return
		}
		if pr := p.current(); pr != nil {
			_ = pr.Log(ctx, n.Level, n.Logger, n.Data)
			return
		}
		p.emit(Event{Kind: EventLog, Server: p.id, Params: m.Params})
	case "notifications/tools/list_changed":
		p.emit(Event{Kind: EventToolsChanged, Server: p.id})
	case "notifications/prompts/list_changed":
		p.emit(Event{Kind: EventPromptsChanged, Server: p.id})
	case "notifications/resources/list_changed":
		p.emit(Event{Kind: EventResourcesChanged, Server: p.id})
	case "notifications/resources/updated":
		p.emit(Event{Kind: EventResourceUpdated, Server: p.id, Params: m.Params})
	}
}

func (p *rawProxy) emit(ev Event) {
	p.mu.Lock()
	fns := make([]func(Event), 0, len(p.subs))
	for _, f := range p.subs {
		fns = append(fns, f)
	}
	p.mu.Unlock()
	for _, f := range fns {
		f(ev)
	}
}

func (p *rawProxy) current() Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, bestK := Peer(nil), -1
	for k, pr := range p.peers {
		if k > bestK {
			best, bestK = pr, k
		}
	}
	return best
}

func (p *rawProxy) track(pr Peer) (string, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.nextPeer
	p.nextPeer++
	p.peers[k] = pr
	tok := pr.RequestID()
	p.tokens[tok] = pr
	return tok, func() {
		p.mu.Lock()
		delete(p.peers, k)
		delete(p.tokens, tok)
		p.mu.Unlock()
	}
}

func (p *rawProxy) Instructions() string { return p.instructions }
func (p *rawProxy) Ready(context.Context) error {
	select {
	case <-p.done:
		return errors.New("upstream exited")
	default:
		return nil
	}
}
func (p *rawProxy) Features() Features { return Features{} }
func (p *rawProxy) Find(context.Context, FindRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy serves flat mode only."}
}
func (p *rawProxy) Describe(context.Context, DescribeRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy serves flat mode only."}
}
func (p *rawProxy) ReadResult(context.Context, ReadResultRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy stores no results."}
}
func (p *rawProxy) Execute(context.Context, ExecuteRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy has no code mode."}
}

func (p *rawProxy) Call(ctx context.Context, r CallRequest, pr Peer) (json.RawMessage, error) {
	tok, done := p.track(pr)
	defer done()
	params := map[string]any{"name": strings.TrimPrefix(r.Capability, p.id+"__"), "arguments": r.Arguments}
	if len(r.InputResponses) > 0 {
		params["inputResponses"] = r.InputResponses
	}
	if r.RequestState != "" {
		params["requestState"] = r.RequestState
	}
	body, _ := json.Marshal(params)
	return p.request(ctx, "tools/call", body, pr, map[string]any{"progressToken": tok})
}

func (p *rawProxy) List(ctx context.Context, k Kind) ([]Item, error) {
	method, field, capName := "tools/list", "tools", "tools"
	switch k {
	case KindResources:
		method, field, capName = "resources/list", "resources", "resources"
	case KindResourceTemplates:
		method, field, capName = "resources/templates/list", "resourceTemplates", "resources"
	case KindPrompts:
		method, field, capName = "prompts/list", "prompts", "prompts"
	}
	if _, ok := p.caps[capName]; !ok {
		return nil, nil
	}
	var items []Item
	cursor := ""
	for page := 0; page < 100; page++ {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := p.request(ctx, method, params, nil, nil)
		if err != nil {
			return nil, err
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(res, &body); err != nil {
			return nil, err
		}
		var list []json.RawMessage
		_ = json.Unmarshal(body[field], &list)
		for _, raw := range list {
			items = append(items, Item{Server: p.id, Raw: raw})
		}
		var next *string
		_ = json.Unmarshal(body["nextCursor"], &next)
		if next == nil {
			break
		}
		cursor = *next
	}
	return items, nil
}

func (p *rawProxy) forward(ctx context.Context, method string, params json.RawMessage, pr Peer) (json.RawMessage, error) {
	if pr != nil {
		_, done := p.track(pr)
		defer done()
	}
	return p.request(ctx, method, params, pr, nil)
}

func (p *rawProxy) ReadResource(ctx context.Context, _ string, params json.RawMessage, pr Peer) (json.RawMessage, error) {
	return p.forward(ctx, "resources/read", params, pr)
}
func (p *rawProxy) GetPrompt(ctx context.Context, _ string, params json.RawMessage, pr Peer) (json.RawMessage, error) {
	return p.forward(ctx, "prompts/get", params, pr)
}
func (p *rawProxy) Complete(ctx context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
	return p.forward(ctx, "completion/complete", params, nil)
}
func (p *rawProxy) SetLogLevel(ctx context.Context, level string) error {
	p.mu.Lock()
	modern := p.modern
	p.logLevel = level
	p.mu.Unlock()
	if modern {
		return nil
	}
	_, err := p.request(ctx, "logging/setLevel", json.RawMessage(fmt.Sprintf(`{"level":%q}`, level)), nil, nil)
	return err
}
func (p *rawProxy) Subscribe(fn func(Event)) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.nextSub
	p.nextSub++
	p.subs[k] = fn
	return func() {
		p.mu.Lock()
		delete(p.subs, k)
		p.mu.Unlock()
	}
}
func (p *rawProxy) Close() error {
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = p.cmd.Wait()
	return nil
}

// TestInputRequiredAgainstRealUpstream: an upstream 2026-07-28
// input_required result reaches a modern agent as such and the retry goes
// back upstream; a legacy agent is asked by elicitation instead.
func TestInputRequiredAgainstRealUpstream(t *testing.T) {
	bin := peerPath(t, ".cache/bin/everything-server")
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			p := startRawProxy(t, bin)
			if !p.modern {
				t.Fatal("the fixture should answer server/discover")
			}
			asked := make(chan string, 4)
			s := connect(t, p, &Options{Mode: ModeFlat, NoPrefix: true}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- r.Params.Message
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			}, version)
			res := s.call(t, "test_input_required_result_elicitation", map[string]any{})
			if res.IsError || len(asked) == 0 {
				t.Fatalf("result %v %q, asked %d times", res.IsError, resultText(res), len(asked))
			}
			t.Logf("result: %q", resultText(res))
		})
	}
}
