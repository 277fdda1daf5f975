package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCancellationReachesBackend: an agent's cancel cancels the context the
// backend call runs under, in both eras.
func TestCancellationReachesBackend(t *testing.T) {
	for _, tc := range []struct {
		version string
		bridged bool // a client that can be asked runs the call as a bridge job
	}{{"", false}, {"", true}, {"2025-11-25", false}, {"2025-11-25", true}} {
		version := tc.version
		t.Run(fmt.Sprintf("version=%s/bridged=%v", version, tc.bridged), func(t *testing.T) {
			b := newFake()
			started := make(chan struct{})
			cancelled := make(chan error, 1)
			b.call = func(ctx context.Context, _ CallRequest, _ Peer) (json.RawMessage, error) {
				close(started)
				select {
				case <-ctx.Done():
					cancelled <- ctx.Err()
					return nil, ctx.Err()
				case <-time.After(30 * time.Second):
					return textResult("not cancelled"), nil
				}
			}
			var copts *mcp.ClientOptions
			if tc.bridged {
				copts = &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept"}, nil
				}}
			}
			s := connect(t, b, nil, copts, version)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "slow__op"}})
				errc <- err
			}()
			<-started
			cancel()
			select {
			case err := <-cancelled:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("backend ctx err = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("backend call was not cancelled")
			}
			if err := <-errc; err == nil {
				t.Fatal("client call returned no error after cancel")
			}
		})
	}
}

func TestProgressOnlyForThatRequest(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			b := newFake()
			b.call = func(ctx context.Context, _ CallRequest, p Peer) (json.RawMessage, error) {
				for i, v := range []float64{1, 2, 2, 1, 3} { // repeats and regressions are dropped
					if err := p.Progress(ctx, v, 3, "step"); err != nil {
						return nil, err
					}
					_ = i
				}
				return textResult("done"), nil
			}
			var mu sync.Mutex
			got := map[any][]float64{}
			s := connect(t, b, nil, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got[r.Params.ProgressToken] = append(got[r.Params.ProgressToken], r.Params.Progress)
				mu.Unlock()
			}}, version)
			ctx := context.Background()
			if _, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "a__b"}, Meta: mcp.Meta{"progressToken": "tok-1"}}); err != nil {
				t.Fatal(err)
			}
			// Without a token, Progress is a no-op.
			if _, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "a__b"}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "three progress notifications", func() bool { mu.Lock(); defer mu.Unlock(); return len(got["tok-1"]) == 3 })
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got["tok-1"][0] != 1 || got["tok-1"][1] != 2 || got["tok-1"][2] != 3 {
				t.Fatalf("progress = %v", got)
			}
		})
	}
}

// approvalBackend asks the agent before running anything and turns a
// refusal or an unsupported client into a tool error with a remedy, the
// way the gateway is expected to.
func approvalBackend() *fakeBackend {
	b := newFake()
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		ok, err := p.Elicit(ctx, "Allow "+r.Capability+"?", json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}}}`))
		switch {
		case errors.Is(err, ErrUnsupported):
			return nil, &ToolError{Message: "approval needed but the client cannot ask: " + err.Error(), Remedy: "add the capability to approve: in the config."}
		case err != nil:
			return nil, err
		case !ok:
			return nil, &ToolError{Message: "the user declined " + r.Capability + "."}
		}
		return textResult("approved"), nil
	}
	return b
}

func TestApprovalByElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		action  string // "" = client without elicitation
		version string
		want    string
		isError bool
	}{
		{"accepted", "accept", "2025-11-25", "approved", false},
		{"declined", "decline", "2025-11-25", "the user declined fs__rm.", true},
		{"cancelled", "cancel", "2025-11-25", "the user declined fs__rm.", true},
		{"no capability", "", "2025-11-25", "did not declare the elicitation capability", true},
		{"modern accepted", "accept", "", "approved", false},
		{"modern declined", "decline", "", "the user declined fs__rm.", true},
		{"modern no capability", "", "", "did not declare the elicitation capability", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var copts mcp.ClientOptions
			asked := make(chan string, 1)
			if tc.action != "" {
				copts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- r.Params.Message
					return &mcp.ElicitResult{Action: tc.action}, nil
				}
			}
			s := connect(t, approvalBackend(), nil, &copts, tc.version)
			res := s.call(t, "call", map[string]any{"capability": "fs__rm"})
			if res.IsError != tc.isError || !strings.Contains(resultText(res), tc.want) {
				t.Fatalf("got isError %v %q, want isError %v containing %q", res.IsError, resultText(res), tc.isError, tc.want)
			}
			if tc.action != "" {
				if m := <-asked; m != "Allow fs__rm?" {
					t.Fatalf("asked %q", m)
				}
			}
		})
	}
}

// TestElicitationIsBounded: a client that never answers cannot hold a call
// forever.
func TestElicitationIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("gone")
	}}
	s := connect(t, approvalBackend(), &Options{ClientRequestTimeout: 200 * time.Millisecond}, copts, "2025-11-25")
	res := s.call(t, "call", map[string]any{"capability": "fs__rm"})
	if !res.IsError {
		t.Fatalf("unanswered approval succeeded: %q", resultText(res))
	}
}

func TestPeerForwardsSampling(t *testing.T) {
	b := newFake()
	b.call = func(ctx context.Context, _ CallRequest, p Peer) (json.RawMessage, error) {
		raw, err := p.Request(ctx, "sampling/createMessage", json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":5}`))
		if err != nil {
			return nil, &ToolError{Message: err.Error()}
		}
		if _, err := p.Request(ctx, "tools/call", nil); !errors.Is(err, ErrUnsupported) {
			return nil, &ToolError{Message: "tools/call was forwarded"}
		}
		return textResult(string(raw)), nil
	}
	copts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "4"}}, nil
		},
	}
	s := connect(t, b, nil, copts, "2025-11-25")
	res := s.call(t, "call", map[string]any{"capability": "a__b"})
	if res.IsError || !strings.Contains(resultText(res), `"text":"4"`) {
		t.Fatalf("sampling result = %q", resultText(res))
	}
}

// TestMultiRoundTripPassThrough: a backend that answers input_required
// (the 2026-07-28 way to ask for input) gets the agent's inputResponses
// and requestState on the retry — from a modern agent directly, and from a
// legacy agent through the SDK's elicitation fallback.
func TestMultiRoundTripPassThrough(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			b := newFake()
			var mu sync.Mutex
			var retries []CallRequest
			b.call = func(_ context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
				if len(r.InputResponses) == 0 {
					return json.RawMessage(`{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"st-1"}`), nil
				}
				mu.Lock()
				retries = append(retries, r)
				mu.Unlock()
				if !strings.Contains(string(p.ClientCapabilities()), "elicitation") {
					return nil, &ToolError{Message: "capabilities not visible"}
				}
				return textResult("hello " + string(r.InputResponses)), nil
			}
			copts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}}
			s := connect(t, b, nil, copts, version)
			res := s.call(t, "call", map[string]any{"capability": "a__greet"})
			if res.IsError || !strings.Contains(resultText(res), `"Ada"`) {
				t.Fatalf("result = %v %q", res.IsError, resultText(res))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(retries) != 1 || retries[0].RequestState != "st-1" || retries[0].Capability != "a__greet" {
				t.Fatalf("retries = %+v", retries)
			}
		})
	}
}

// TestBridgeQuestionExpires: a modern agent that takes longer than
// ClientRequestTimeout to answer finds the question expired, and the
// waiting backend call is cancelled.
func TestBridgeQuestionExpires(t *testing.T) {
	b := approvalBackend()
	inner := b.call
	cancelled := make(chan struct{})
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		res, err := inner(ctx, r, p)
		if ctx.Err() != nil {
			close(cancelled)
		}
		return res, err
	}
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		// Answer late: well past the 100 ms the question lives, but well
		// inside the test client's own deadline (the client may handle
		// this request before it reads the call's response).
		select {
		case <-cancelled:
		case <-time.After(time.Second):
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	s := connect(t, b, &Options{ClientRequestTimeout: 100 * time.Millisecond}, copts, "")
	res := s.call(t, "call", map[string]any{"capability": "fs__rm"})
	if !res.IsError || !strings.Contains(resultText(res), "expired") {
		t.Fatalf("late answer: %v %q", res.IsError, resultText(res))
	}
}

// TestBridgeCarriesProgress: progress sent after the answer reaches the
// retry, under the retry's own progress token.
func TestBridgeCarriesProgress(t *testing.T) {
	b := newFake()
	b.call = func(ctx context.Context, _ CallRequest, p Peer) (json.RawMessage, error) {
		_ = p.Progress(ctx, 1, 3, "before")
		ok, err := p.Elicit(ctx, "go on?", nil)
		if err != nil || !ok {
			return nil, &ToolError{Message: fmt.Sprint("not approved: ", err)}
		}
		_ = p.Progress(ctx, 2, 3, "after")
		return textResult("done"), nil
	}
	var mu sync.Mutex
	var got []string
	copts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params.Message)
			mu.Unlock()
		},
	}
	s := connect(t, b, nil, copts, "")
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call", Arguments: map[string]any{"capability": "a__b"}, Meta: mcp.Meta{"progressToken": "t1"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %q", err, resultText(res))
	}
	waitFor(t, "progress before and after the question", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
}
