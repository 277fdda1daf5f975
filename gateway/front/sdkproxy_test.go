package front

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// repoRoot finds the module root: $SLUICE_REPO_ROOT, else the nearest
// directory above this one holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	if r := os.Getenv("SLUICE_REPO_ROOT"); r != "" {
		return r
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// peer returns the path of an installed interop peer, skipping the test
// when it is missing unless SLUICE_REQUIRE_PEERS=1.
func peerPath(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("SLUICE_REQUIRE_PEERS") == "1" {
			t.Fatalf("peer %s missing (run scripts/install-peers.sh): %v", rel, err)
		}
		t.Skipf("peer %s not installed (run scripts/install-peers.sh)", rel)
	}
	return p
}

// sdkProxy is a test-only Backend that forwards everything to one upstream
// server through the SDK client, under server id "everything". It stands
// in for the gateway root so front can be measured against the official
// conformance suite; the product's own upstream client is gateway/mcp.
type sdkProxy struct {
	id string
	cs *mcp.ClientSession

	mu      sync.Mutex
	peers   map[int]Peer // in-flight calls, newest = highest key
	next    int
	tokens  map[string]Peer // upstream progress token -> peer
	subs    map[int]func(Event)
	nextSub int
}

// settle gives notifications queued before a response time to be
// forwarded: the SDK client delivers a response as soon as it is read but
// runs notification handlers from a queue, so a log sent just before the
// result could otherwise reach the agent after the call ended. (The
// gateway's own client reads one ordered stream and has no such gap.)
func settle() { time.Sleep(20 * time.Millisecond) }

func startSDKProxy(t *testing.T, command string, args ...string) *sdkProxy {
	t.Helper()
	p := &sdkProxy{id: "everything", peers: map[int]Peer{}, tokens: map[string]Peer{}, subs: map[int]func(Event){}}
	c := mcp.NewClient(&mcp.Implementation{Name: "sluice-test-proxy", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		},
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			tok, _ := r.Params.ProgressToken.(string)
			p.mu.Lock()
			pr := p.tokens[tok]
			p.mu.Unlock()
			if pr != nil {
				_ = pr.Progress(ctx, r.Params.Progress, r.Params.Total, r.Params.Message)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			raw, _ := json.Marshal(r.Params)
			if pr := p.current(); pr != nil {
				data, _ := json.Marshal(r.Params.Data)
				_ = pr.Log(ctx, string(r.Params.Level), r.Params.Logger, data)
				return
			}
			p.emit(Event{Kind: EventLog, Server: p.id, Params: raw})
		},
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			raw, _ := json.Marshal(r.Params)
			out, err := p.ask(ctx, "elicitation/create", raw)
			if err != nil {
				return nil, err
			}
			var res mcp.ElicitResult
			return &res, json.Unmarshal(out, &res)
		},
		CreateMessageHandler: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			raw, _ := json.Marshal(r.Params)
			out, err := p.ask(ctx, "sampling/createMessage", raw)
			if err != nil {
				return nil, err
			}
			var res mcp.CreateMessageResult
			return &res, json.Unmarshal(out, &res)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			p.emit(Event{Kind: EventToolsChanged, Server: p.id})
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			p.emit(Event{Kind: EventPromptsChanged, Server: p.id})
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			p.emit(Event{Kind: EventResourcesChanged, Server: p.id})
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			raw, _ := json.Marshal(r.Params)
			p.emit(Event{Kind: EventResourceUpdated, Server: p.id, Params: raw})
		},
	})
	cmd := exec.Command(command, args...)
	cmd.Stderr = os.Stderr
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to %s: %v", command, err)
	}
	p.cs = cs
	return p
}

func (p *sdkProxy) emit(ev Event) {
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

// current is the newest in-flight call's peer: the test proxy attributes
// upstream logs and server-to-client requests to it.
func (p *sdkProxy) current() Peer {
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

func (p *sdkProxy) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	pr := p.current()
	if pr == nil {
		return nil, errors.New("no call in flight to ask through")
	}
	return pr.Request(ctx, method, params)
}

func (p *sdkProxy) track(pr Peer) (token string, done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.next
	p.next++
	p.peers[k] = pr
	token = pr.RequestID()
	p.tokens[token] = pr
	return token, func() {
		p.mu.Lock()
		delete(p.peers, k)
		delete(p.tokens, token)
		p.mu.Unlock()
	}
}

func (p *sdkProxy) upstreamName(capability string) string {
	return strings.TrimPrefix(capability, p.id+"__")
}

func (p *sdkProxy) Instructions() string {
	if r := p.cs.InitializeResult(); r != nil {
		return r.Instructions
	}
	return ""
}
func (p *sdkProxy) Ready(ctx context.Context) error { return p.cs.Ping(ctx, nil) }
func (p *sdkProxy) Features() Features              { return Features{} }
func (p *sdkProxy) Find(context.Context, FindRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy serves flat mode only."}
}
func (p *sdkProxy) Describe(context.Context, DescribeRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy serves flat mode only."}
}
func (p *sdkProxy) ReadResult(context.Context, ReadResultRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy stores no results."}
}
func (p *sdkProxy) Execute(context.Context, ExecuteRequest, Peer) (json.RawMessage, error) {
	return nil, &ToolError{Message: "the test proxy has no code mode."}
}

func (p *sdkProxy) Call(ctx context.Context, r CallRequest, pr Peer) (json.RawMessage, error) {
	token, done := p.track(pr)
	defer done()
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      p.upstreamName(r.Capability),
		Arguments: r.Arguments,
		Meta:      mcp.Meta{"progressToken": token},
	})
	settle()
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (p *sdkProxy) List(ctx context.Context, k Kind) ([]Item, error) {
	var out []Item
	add := func(v any) error {
		raw, err := json.Marshal(v)
		out = append(out, Item{Server: p.id, Raw: raw})
		return err
	}
	caps := p.cs.InitializeResult().Capabilities
	switch k {
	case KindTools:
		for t, err := range p.cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			if err := add(t); err != nil {
				return nil, err
			}
		}
	case KindResources:
		if caps.Resources == nil {
			return nil, nil
		}
		for r, err := range p.cs.Resources(ctx, nil) {
			if err != nil {
				return nil, err
			}
			if err := add(r); err != nil {
				return nil, err
			}
		}
	case KindResourceTemplates:
		if caps.Resources == nil {
			return nil, nil
		}
		for r, err := range p.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return nil, err
			}
			if err := add(r); err != nil {
				return nil, err
			}
		}
	case KindPrompts:
		if caps.Prompts == nil {
			return nil, nil
		}
		for r, err := range p.cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, err
			}
			if err := add(r); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (p *sdkProxy) ReadResource(ctx context.Context, _ string, params json.RawMessage, pr Peer) (json.RawMessage, error) {
	_, done := p.track(pr)
	defer done()
	var rp mcp.ReadResourceParams
	if err := json.Unmarshal(params, &rp); err != nil {
		return nil, err
	}
	res, err := p.cs.ReadResource(ctx, &rp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (p *sdkProxy) GetPrompt(ctx context.Context, _ string, params json.RawMessage, pr Peer) (json.RawMessage, error) {
	_, done := p.track(pr)
	defer done()
	var gp mcp.GetPromptParams
	if err := json.Unmarshal(params, &gp); err != nil {
		return nil, err
	}
	res, err := p.cs.GetPrompt(ctx, &gp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (p *sdkProxy) Complete(ctx context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
	var cp mcp.CompleteParams
	if err := json.Unmarshal(params, &cp); err != nil {
		return nil, err
	}
	res, err := p.cs.Complete(ctx, &cp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (p *sdkProxy) SetLogLevel(ctx context.Context, level string) error {
	return p.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
}

func (p *sdkProxy) Subscribe(fn func(Event)) func() {
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

func (p *sdkProxy) Close() error { return p.cs.Close() }

// TestFlatModeAgainstRealUpstream serves the Go SDK's everything-server
// through front in flat, no-prefix mode and calls its fixture tools.
func TestFlatModeAgainstRealUpstream(t *testing.T) {
	bin := peerPath(t, ".cache/bin/everything-server")
	p := startSDKProxy(t, bin)
	progress := make(chan float64, 16)
	s := connect(t, p, &Options{Mode: ModeFlat, NoPrefix: true}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
	}, "2025-11-25")
	names := s.toolNames(t)
	for _, want := range []string{"test_simple_text", "test_tool_with_progress", "json_schema_2020_12_tool"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("tool %s not exposed; have %v", want, names)
		}
	}
	if got := resultText(s.call(t, "test_simple_text", map[string]any{})); !strings.Contains(got, "simple text") {
		t.Fatalf("test_simple_text = %q", got)
	}
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil || res.IsError {
		t.Fatalf("progress tool: %v %q", err, resultText(res))
	}
	waitFor(t, "progress forwarded from the upstream server", func() bool { return len(progress) > 0 })
	if n := len(s.cs.InitializeResult().Instructions); n == 0 {
		t.Fatal("no instructions")
	}
}
