package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"sluice/gateway/mcp"
)

type ridPeer struct {
	benchPeer
	rid string
}

func (p ridPeer) RequestID() string { return p.rid }

// An agent's call carries its request id for the log (RequestIDFrom) and
// for the dashboard (agentKey) from one context node, passes every other
// value, deadline and cancellation of its parent through, and an empty id
// is no log id but still an agent's call.
func TestWithAgentCall(t *testing.T) {
	type other struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), other{}, "kept"))
	ctx := withAgentCall(parent, ridPeer{rid: "rq-7"}, mcp.Extras{})
	if got := RequestIDFrom(ctx); got != "rq-7" {
		t.Errorf("RequestIDFrom = %q, want rq-7", got)
	}
	if got, ok := ctx.Value(agentKey{}).(string); !ok || got != "rq-7" {
		t.Errorf("agentKey = %v, want rq-7", ctx.Value(agentKey{}))
	}
	if got := ctx.Value(other{}); got != "kept" {
		t.Errorf("a parent's value = %v, want kept", got)
	}
	inner := withAgentCall(ctx, ridPeer{rid: "rq-8"}, mcp.Extras{}) // the innermost wins
	if RequestIDFrom(inner) != "rq-8" || inner.Value(agentKey{}) != "rq-8" {
		t.Errorf("nested call ids = %q / %v", RequestIDFrom(inner), inner.Value(agentKey{}))
	}
	child, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	why := errors.New("agent went away")
	cancel(why)
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context derived from the call's is not cancelled with its parent")
	}
	if !errors.Is(context.Cause(child), why) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("cause %v, err %v", context.Cause(child), ctx.Err())
	}

	empty := withAgentCall(context.Background(), ridPeer{}, mcp.Extras{})
	if RequestIDFrom(empty) != "" {
		t.Errorf("an empty id is no log id: %q", RequestIDFrom(empty))
	}
	if got, ok := empty.Value(agentKey{}).(string); !ok || got != "" {
		t.Errorf("an empty id still marks an agent's call: %v", empty.Value(agentKey{}))
	}
	if withAgentCall(context.Background(), nil, mcp.Extras{}).Value(agentKey{}) != nil {
		t.Error("no peer: not an agent's call")
	}
}

// The request id is boxed by the first Value that asks for it: askers on
// several goroutines at once all read the id (run with -race).
func TestAgentCallIDConcurrentFirstValue(t *testing.T) {
	for range 50 {
		ctx := withAgentCall(context.Background(), ridPeer{rid: "rq-9"}, mcp.Extras{})
		got := make(chan any, 8)
		for i := range 8 {
			go func() {
				if i%2 == 0 {
					got <- ctx.Value(agentKey{})
				} else {
					got <- RequestIDFrom(ctx)
				}
			}()
		}
		for range 8 {
			if v := <-got; v != "rq-9" {
				t.Fatalf("a first Value read %v, want rq-9", v)
			}
		}
	}
}
